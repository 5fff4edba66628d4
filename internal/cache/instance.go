package cache

import (
	"context"
	"time"

	"github.com/redis/go-redis/v9"
)

// MarkAlive says instance id is alive for the next ttl; an instance repeats it well within ttl,
// so the key disappears soon after the instance dies.
func (c *Cache) MarkAlive(ctx context.Context, id string, ttl time.Duration) error {
	return cacheError("mark instance alive", c.rdb.Set(ctx, c.instanceKey(id), "1", ttl).Err())
}

// Alive reports which of the instances are alive (MarkAlive), in one round trip.
func (c *Cache) Alive(ctx context.Context, ids []string) (map[string]bool, error) {
	out := make(map[string]bool, len(ids))
	if len(ids) == 0 {
		return out, nil
	}
	pipe := c.rdb.Pipeline()
	cmds := make([]*redis.IntCmd, len(ids))
	for i, id := range ids {
		// One EXISTS per key: on a Redis Cluster the keys live in different slots.
		cmds[i] = pipe.Exists(ctx, c.instanceKey(id))
	}
	if _, err := pipe.Exec(ctx); err != nil {
		return nil, cacheError("read instances", err)
	}
	for i, id := range ids {
		out[id] = cmds[i].Val() == 1
	}
	return out, nil
}
