package cache

import (
	"context"
	"strings"

	"github.com/redis/go-redis/v9"
)

// takeChunksVersion gives a conversation's seq state the chunks version ARGV[1] when it has
// none, and returns the version it holds.
var takeChunksVersion = redis.NewScript(seqStateLua + `
local f = readSeqState(KEYS[1])
if f[4] == '' then
  f[4] = ARGV[1]
  writeSeqState(KEYS[1], f, ARGV[2])
end
return f[4]`)

// ChunksVersions returns each conversation's chunks version (ConversationState.ChunksVersion),
// aligned with conversationIDs, for a reader of a store whose chunks msggate does not write:
// OpenIM mode's follower moves it for every chunk OpenIM's feed reports changed
// (InvalidateChunks), but nothing else gives such a conversation a seq state. A conversation
// without a version is given one here, after which any invalidation moves it, so that a copy
// of a chunk read after this call is current while the version stays. One round trip, shared
// with other reads under load; one more for the conversations that had no version.
func (c *Cache) ChunksVersions(ctx context.Context, conversationIDs []string) ([]string, error) {
	out := make([]string, len(conversationIDs))
	if len(conversationIDs) == 0 {
		return out, nil
	}
	keys := make([]string, len(conversationIDs))
	for i, id := range conversationIDs {
		keys[i] = c.seqStateKey(id)
	}
	var cmds commands
	var mget *redis.StringSliceCmd
	var gets []*redis.StringCmd
	if _, cluster := c.rdb.(*redis.ClusterClient); cluster {
		gets = make([]*redis.StringCmd, len(keys))
		for i, key := range keys {
			gets[i] = redis.NewStringCmd(ctx, "get", key)
			_ = cmds.Process(ctx, gets[i])
		}
	} else {
		mget = queueStrings(ctx, &cmds, "mget", "", keys)
	}
	if err := c.reads.do(ctx, c.rdb, cmds); err != nil {
		return nil, cacheError("read chunks versions", err)
	}
	var values []string
	if mget != nil {
		values = mget.Val()
	}
	var missing []int
	for i := range keys {
		var value string
		if gets != nil {
			value = gets[i].Val()
		} else if i < len(values) {
			value = values[i]
		}
		if out[i] = chunksVersionOf(value); out[i] == "" {
			missing = append(missing, i)
		}
	}
	if len(missing) == 0 {
		return out, nil
	}
	pipe := c.rdb.Pipeline()
	taken := make([]*redis.Cmd, len(missing))
	for j, i := range missing {
		taken[j] = takeChunksVersion.Eval(ctx, pipe, []string{keys[i]}, randomVersion(), ms(c.opts.StateTTL))
	}
	if _, err := pipe.Exec(ctx); err != nil {
		return nil, cacheError("give chunks versions", err)
	}
	for j, i := range missing {
		out[i], _ = taken[j].Val().(string)
	}
	return out, nil
}

// chunksVersionOf returns the chunks version of a stored seq state, the field after its third
// comma; "" when it has none.
func chunksVersionOf(value string) string {
	for range 3 {
		_, rest, ok := strings.Cut(value, ",")
		if !ok {
			return ""
		}
		value = rest
	}
	return value
}
