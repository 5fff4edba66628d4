package cache

import (
	"fmt"
	"net/url"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"
)

// A Redis URL whose scheme ends in "+cluster" names the nodes of a Redis Cluster rather than
// one server: redis+cluster://host1:port1?addr=host2:port2&addr=host3:port3 (rediss+cluster
// for TLS). Any one reachable node is enough to find the rest; the others let the gateway
// start while that one is down. The query takes go-redis's cluster URL options besides addr
// (dial_timeout, max_redirects, ...). One URL setting, not a separate flag, so that the
// environment variable MSGGATE_REDIS_URL alone can point a deployment at a cluster.
const clusterSchemeSuffix = "+cluster"

// Dial returns a Cache on the Redis that rawURL names: redis:// or rediss:// for one server,
// the +cluster form above for a Redis Cluster. It only parses; connections are made as calls
// need them. Close releases them.
func Dial(rawURL string, opts Options) (*Cache, error) {
	rdb, err := newClient(rawURL)
	if err != nil {
		return nil, err
	}
	c := New(rdb, opts)
	c.ownsClient = true
	return c, nil
}

// DialClient returns a go-redis client on the Redis rawURL names (any form Dial takes) with
// the observers of opts (ObserveCall, OnRoundTrip) as hooks; the other fields of opts are a
// Cache's and play no part. It is for an adapter that reads another system's keys itself
// (internal/openim reads an OpenIM deployment's Redis), so that every Redis URL msggate is
// given is read here, by one set of rules. The caller closes the client.
func DialClient(rawURL string, opts Options) (redis.UniversalClient, error) {
	rdb, err := newClient(rawURL)
	if err != nil {
		return nil, err
	}
	addHooks(rdb, opts)
	return rdb, nil
}

// Close closes the connections of a Cache that dialled them (Dial); a Cache over the caller's
// client (New) leaves the client to the caller.
func (c *Cache) Close() error {
	if !c.ownsClient {
		return nil
	}
	return c.rdb.Close()
}

// newClient returns a client for rawURL: a *redis.Client for redis:// and rediss:// URLs, a
// *redis.ClusterClient for the cluster form.
func newClient(rawURL string) (redis.UniversalClient, error) {
	u, err := url.Parse(rawURL)
	if err != nil {
		return nil, fmt.Errorf("redis URL: %w", err)
	}
	if base, ok := strings.CutSuffix(u.Scheme, clusterSchemeSuffix); ok {
		// A cluster has only database 0; refuse any other rather than ignore it.
		if db := strings.Trim(u.Path, "/"); db != "" && db != "0" {
			return nil, fmt.Errorf("redis URL: a Redis Cluster has only database 0, the URL selects %q", db)
		}
		u.Scheme, u.Path = base, ""
		opts, err := redis.ParseClusterURL(u.String())
		if err != nil {
			return nil, fmt.Errorf("redis cluster URL: %w", err)
		}
		failFast(&opts.MaxRetries, &opts.MaxRetryBackoff, &opts.DialTimeout, &opts.DialerRetries)
		return redis.NewClusterClient(opts), nil
	}
	opts, err := redis.ParseURL(rawURL)
	if err != nil {
		return nil, fmt.Errorf("redis URL: %w", err)
	}
	failFast(&opts.MaxRetries, &opts.MaxRetryBackoff, &opts.DialTimeout, &opts.DialerRetries)
	return redis.NewClient(opts), nil
}

// failFast sets the retry options the URL left unset. Redis is a cache in front of MongoDB:
// when it is down, reads should fall through to MongoDB quickly rather than wait out
// go-redis's default retries (seconds per call). On a cluster the retries are per node, and
// a call is also resent after a redirect (up to max_redirects, default 3), so that a
// resharding or failover goes unnoticed.
func failFast(maxRetries *int, maxRetryBackoff, dialTimeout *time.Duration, dialerRetries *int) {
	if *maxRetries == 0 {
		*maxRetries = 1
	}
	if *maxRetryBackoff == 0 {
		*maxRetryBackoff = 100 * time.Millisecond
	}
	if *dialTimeout == 0 {
		*dialTimeout = 2 * time.Second
	}
	if *dialerRetries == 0 {
		*dialerRetries = 1
	}
}
