package fanout

import (
	"context"

	"github.com/msggate/msggate/internal/cache"
)

// redisFigures is what redis-server says at a moment.
type redisFigures struct {
	// Commands is the calls of every command since the start, INFO's own left out: the bench
	// asks INFO itself, and the gateway's work is what is measured.
	Commands int64
	// ByCommand is the calls of each command (lower case, as INFO names them), INFO's left out.
	ByCommand map[string]int64
	// UsedMemory is used_memory: the bytes Redis holds for data and its own structures.
	UsedMemory int64
}

// readRedis reads the figures of the redis-server c is on, through the cache's own reading
// of INFO.
func readRedis(ctx context.Context, c *cache.Cache) (redisFigures, error) {
	s, err := c.ServerStats(ctx)
	if err != nil {
		return redisFigures{}, err
	}
	delete(s.CommandCalls, "info")
	return redisFigures{Commands: s.TotalCalls(), ByCommand: s.CommandCalls, UsedMemory: s.UsedMemory}, nil
}
