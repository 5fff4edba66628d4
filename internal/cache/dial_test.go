package cache

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// Ensure each Redis URL form gives the right kind of client with the gateway's fail-fast
// retry options where the URL sets none, and that a URL the gateway cannot honour is refused.
func TestNewClient(t *testing.T) {
	client := func(url string) redis.UniversalClient {
		t.Helper()
		rdb, err := newClient(url)
		if err != nil {
			t.Fatalf("%s: %v", url, err)
		}
		t.Cleanup(func() { _ = rdb.Close() })
		return rdb
	}

	single, ok := client("redis://127.0.0.1:6379/2").(*redis.Client)
	if !ok {
		t.Fatal("redis:// did not give a single-node client")
	}
	if o := single.Options(); o.Addr != "127.0.0.1:6379" || o.DB != 2 || o.MaxRetries != 1 || o.DialerRetries != 1 || o.DialTimeout != 2*time.Second {
		t.Errorf("single-node options: addr %s db %d retries %d dialer retries %d dial timeout %v",
			o.Addr, o.DB, o.MaxRetries, o.DialerRetries, o.DialTimeout)
	}

	cluster, ok := client("redis+cluster://10.0.0.1:7000?addr=10.0.0.2:7001&addr=10.0.0.3:7002").(*redis.ClusterClient)
	if !ok {
		t.Fatal("redis+cluster:// did not give a cluster client")
	}
	if o := cluster.Options(); !slices.Equal(o.Addrs, []string{"10.0.0.1:7000", "10.0.0.2:7001", "10.0.0.3:7002"}) ||
		o.MaxRetries != 1 || o.DialerRetries != 1 || o.DialTimeout != 2*time.Second || o.TLSConfig != nil {
		t.Errorf("cluster options: addrs %v retries %d dialer retries %d dial timeout %v TLS %v",
			o.Addrs, o.MaxRetries, o.DialerRetries, o.DialTimeout, o.TLSConfig != nil)
	}

	// What the URL sets wins over the defaults; rediss+cluster is TLS.
	tuned := client("rediss+cluster://user:pa%40ss@10.0.0.1:7000/0?dial_timeout=5s&max_redirects=8").(*redis.ClusterClient).Options()
	if tuned.DialTimeout != 5*time.Second || tuned.MaxRedirects != 8 || tuned.TLSConfig == nil ||
		tuned.Username != "user" || tuned.Password != "pa@ss" {
		t.Errorf("tuned cluster options: dial timeout %v, max redirects %d, TLS %v, user %q password %q",
			tuned.DialTimeout, tuned.MaxRedirects, tuned.TLSConfig != nil, tuned.Username, tuned.Password)
	}

	for url, want := range map[string]string{
		"redis+cluster://10.0.0.1:7000/3":       "database 0",
		"redis+cluster://10.0.0.1:7000?bogus=1": "bogus",
		"redis+cluster://10.0.0.1:7000?addr=x":  "addr",
		"http://10.0.0.1:6379":                  "scheme",
	} {
		if _, err := newClient(url); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: err %v, want one mentioning %q", url, err, want)
		}
	}
}
