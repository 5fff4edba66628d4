package main

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

// newRedisClient returns a client for cfg.RedisURL: a *redis.Client for redis:// and
// rediss:// URLs, a *redis.ClusterClient for the cluster form above. cfg.RedisHook, when set,
// is added to it; on a cluster it sees each call once, before go-redis splits it by node.
func newRedisClient(cfg Config) (redis.UniversalClient, error) {
	u, err := url.Parse(cfg.RedisURL)
	if err != nil {
		return nil, fmt.Errorf("redis URL: %w", err)
	}
	var rdb redis.UniversalClient
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
		rdb = redis.NewClusterClient(opts)
	} else {
		opts, err := redis.ParseURL(cfg.RedisURL)
		if err != nil {
			return nil, fmt.Errorf("redis URL: %w", err)
		}
		failFast(&opts.MaxRetries, &opts.MaxRetryBackoff, &opts.DialTimeout, &opts.DialerRetries)
		rdb = redis.NewClient(opts)
	}
	if cfg.RedisHook != nil {
		rdb.AddHook(cfg.RedisHook)
	}
	return rdb, nil
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
