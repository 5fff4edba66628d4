package cache_test

import (
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/msggate/msggate/internal/cache"
)

type callLog struct {
	mu       sync.Mutex
	calls    map[string]int
	failures map[string]int
	took     time.Duration
}

func (l *callLog) observe(label string, took time.Duration, failed bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.calls[label]++
	l.took += took
	if failed {
		l.failures[label]++
	}
}

// Ensure the timing hook reports single commands by name, pipelines as one, a new
// connection's handshake apart from both, and failures but not the errors go-redis expects (a
// missing key, NOSCRIPT, a handshake command an older server lacks).
func TestTimingHook(t *testing.T) {
	t.Parallel()
	eachTopology(t, func(t *testing.T, e *env) {
		log := &callLog{calls: map[string]int{}, failures: map[string]int{}}
		// A client of its own, so that its first call opens a connection.
		rdb := e.connect()
		rdb.AddHook(cache.TimingHook(log.observe))
		ctx := e.ctx
		if err := rdb.Set(ctx, "k", "v", 0).Err(); err != nil {
			t.Fatal(err)
		}
		if err := rdb.Get(ctx, "absent").Err(); err != redis.Nil {
			t.Fatalf("get of an absent key: %v", err)
		}
		// On a cluster, "k" and "{k}:b" share a slot; "other" lives elsewhere: still one pipeline.
		if _, err := rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
			p.Get(ctx, "k")
			p.Get(ctx, "{k}:b")
			p.Get(ctx, "other")
			return nil
		}); err != nil && err != redis.Nil {
			t.Fatal(err)
		}
		if err := rdb.Do(ctx, "nosuchcommand").Err(); err == nil {
			t.Fatal("an unknown command succeeded")
		}
		// The first run of a script is an EVALSHA answered NOSCRIPT, then an EVAL.
		if err := redis.NewScript("return 1").Run(ctx, rdb, []string{"k"}).Err(); err != nil {
			t.Fatal(err)
		}
		log.mu.Lock()
		defer log.mu.Unlock()
		for label, want := range map[string]int{"set": 1, "get": 1, "pipeline": 1, "nosuchcommand": 1, "evalsha": 1, "eval": 1} {
			if log.calls[label] != want {
				t.Errorf("%s calls = %d, want %d", label, log.calls[label], want)
			}
		}
		// A cluster client runs the handshakes inside its node clients, below its own hooks, so
		// a hook added to it never sees them; reporting them needs a hook on each node client
		// (ClusterClient.OnNewNode). Until the gateway adds one, only a single node reports them.
		if _, cluster := rdb.(*redis.ClusterClient); !cluster && log.calls["connect"] < 1 {
			t.Error("no connection handshake was reported")
		}
		if len(log.failures) != 1 || log.failures["nosuchcommand"] != 1 {
			t.Errorf("failures %v, want only nosuchcommand", log.failures)
		}
		if log.took <= 0 {
			t.Error("the calls took no time")
		}
	})
}
