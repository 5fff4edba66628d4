package cache

import (
	"context"
	"strconv"
	"strings"
)

// ServerStats are a Redis server's running totals, for measuring what an operation costs.
type ServerStats struct {
	// CommandsProcessed counts every command the server ran (a script's own calls are not
	// counted apart from the EVALSHA that ran them: see CommandCalls).
	CommandsProcessed int64
	// CommandCalls counts calls by command, including those a script made (INFO commandstats).
	CommandCalls map[string]int64
	// UsedMemory is the server's used_memory, in bytes.
	UsedMemory int64
}

// TotalCalls is the sum of CommandCalls: what the server did, scripts' calls included.
func (s ServerStats) TotalCalls() int64 {
	var n int64
	for _, v := range s.CommandCalls {
		n += v
	}
	return n
}

// ServerStats reads the server's totals (INFO stats, commandstats and memory) in one round
// trip. On a cluster it reads whichever node answers; use it on a single server.
func (c *Cache) ServerStats(ctx context.Context) (ServerStats, error) {
	pipe := c.rdb.Pipeline()
	stats := pipe.Info(ctx, "stats")
	cmds := pipe.Info(ctx, "commandstats")
	mem := pipe.Info(ctx, "memory")
	if _, err := pipe.Exec(ctx); err != nil {
		return ServerStats{}, cacheError("server stats", err)
	}
	out := ServerStats{CommandCalls: map[string]int64{}}
	out.CommandsProcessed = infoInt(stats.Val(), "total_commands_processed")
	out.UsedMemory = infoInt(mem.Val(), "used_memory")
	for line := range strings.SplitSeq(cmds.Val(), "\n") {
		// cmdstat_get:calls=3,usec=...
		name, rest, ok := strings.Cut(strings.TrimSpace(line), ":")
		if !ok || !strings.HasPrefix(name, "cmdstat_") {
			continue
		}
		for field := range strings.SplitSeq(rest, ",") {
			if v, ok := strings.CutPrefix(field, "calls="); ok {
				n, _ := strconv.ParseInt(v, 10, 64)
				out.CommandCalls[strings.TrimPrefix(name, "cmdstat_")] = n
			}
		}
	}
	return out, nil
}

// infoInt reads one integer field of an INFO section.
func infoInt(info, field string) int64 {
	for line := range strings.SplitSeq(info, "\n") {
		if v, ok := strings.CutPrefix(strings.TrimSpace(line), field+":"); ok {
			n, _ := strconv.ParseInt(v, 10, 64)
			return n
		}
	}
	return 0
}
