package cache

import (
	"context"
	"encoding/json"
	"errors"
	"math/rand/v2"
	"strconv"

	"github.com/redis/go-redis/v9"

	"github.com/msggate/msggate/internal/im"
)

// ChunkEntry is what the cache holds for one chunk: the chunk (nil on a miss) and the version
// the reader saw, to be handed back to FillChunks.
type ChunkEntry struct {
	Chunk   *im.Chunk
	Version string
}

// ChunkFill is a chunk read from MongoDB, to be cached if no writer touched it meanwhile.
type ChunkFill struct {
	Chunk   *im.Chunk
	Version string // as returned by GetChunks
}

// GetChunks reads the chunks in one round trip (a pipeline: in a cluster the keys live in
// different slots, so one MGET could not span them). The result is aligned with docIDs. A
// chunk that is absent or cannot be decoded is a miss.
func (c *Cache) GetChunks(ctx context.Context, docIDs []string) ([]ChunkEntry, error) {
	out := make([]ChunkEntry, len(docIDs))
	if len(docIDs) == 0 {
		return out, nil
	}
	cmds := make([]*redis.SliceCmd, len(docIDs))
	pipe := c.rdb.Pipeline()
	for i, id := range docIDs {
		key, err := c.chunkKey(id)
		if err != nil {
			return nil, err
		}
		cmds[i] = pipe.HMGet(ctx, key, "v", "data")
	}
	if _, err := pipe.Exec(ctx); err != nil && !errors.Is(err, redis.Nil) {
		return nil, cacheError("get chunks", err)
	}
	for i, cmd := range cmds {
		vals, err := cmd.Result()
		if err != nil || len(vals) != 2 {
			continue
		}
		if v, ok := vals[0].(string); ok {
			out[i].Version = v
		}
		if data, ok := vals[1].(string); ok {
			out[i].Chunk = im.DecodeChunk([]byte(data), docIDs[i])
		}
	}
	return out, nil
}

// fillChunk caches a chunk only while its version is the one the reader saw ("" = none).
var fillChunk = redis.NewScript(`
local v = redis.call('HGET', KEYS[1], 'v')
if (v == false and ARGV[1] == '') or v == ARGV[1] then
  redis.call('HSET', KEYS[1], 'data', ARGV[2])
  redis.call('PEXPIRE', KEYS[1], ARGV[3])
  return 1
end
return 0`)

// FillChunks caches chunks read from MongoDB, in one round trip. A chunk whose version moved
// since GetChunks (a writer changed it meanwhile) is not cached: the writer's change is newer
// than what this reader has.
func (c *Cache) FillChunks(ctx context.Context, fills []ChunkFill) error {
	if len(fills) == 0 {
		return nil
	}
	pipe := c.rdb.Pipeline()
	for _, f := range fills {
		key, err := c.chunkKey(f.Chunk.DocID)
		if err != nil {
			return err
		}
		data, err := json.Marshal(f.Chunk)
		if err != nil {
			return err
		}
		fillChunk.Eval(ctx, pipe, []string{key}, f.Version, data, ms(c.opts.ChunkTTL))
	}
	_, err := pipe.Exec(ctx)
	return cacheError("fill chunks", err)
}

// invalidateChunk drops the cached chunk and bumps its version, so that fills by readers that
// looked before this write are dropped too. The version outlives the data by the TTL, and
// starts from a random seed like the chunks version: a version seen before Redis lost its keys
// never names a later state of the chunk (readers sharing one MongoDB read per version rely on
// it). It also
// gives the conversation a new chunks version (KEYS[2], the seq state: ConversationState.
// ChunksVersion), the random ARGV[2], so that in-process copies of the conversation's chunks
// are no longer taken as current by any instance.
var invalidateChunk = redis.NewScript(seqStateLua + `
if redis.call('HEXISTS', KEYS[1], 'v') == 0 then
  redis.call('HSET', KEYS[1], 'v', ARGV[2])
end
redis.call('HINCRBY', KEYS[1], 'v', 1)
redis.call('HDEL', KEYS[1], 'data')
redis.call('PEXPIRE', KEYS[1], ARGV[1])
local st = readSeqState(KEYS[2])
st[4] = ARGV[2]
writeSeqState(KEYS[2], st, ARGV[3])
return 1`)

// InvalidateChunks must be called after every MongoDB write to the chunks, in one round trip,
// and before the write is acknowledged.
func (c *Cache) InvalidateChunks(ctx context.Context, docIDs []string) error {
	if len(docIDs) == 0 {
		return nil
	}
	pipe := c.rdb.Pipeline()
	for _, id := range docIDs {
		conv, idx, err := im.ParseDocID(id)
		if err != nil {
			return err
		}
		keys := []string{c.chunkKeyOf(conv, idx), c.seqStateKey(conv)}
		invalidateChunk.Eval(ctx, pipe, keys, ms(c.opts.ChunkTTL), randomVersion(), ms(c.opts.StateTTL))
	}
	_, err := pipe.Exec(ctx)
	return cacheError("invalidate chunks", err)
}

// randomVersion is a random version, not 0, where a version must never come back to a value
// it had, not even after Redis lost its keys (a restart) and counting started again (the odds
// are one in 2^52 a draw): every chunk write gives its conversation a new chunks version, a
// chunk's own version and a conversation list's version start from one.
func randomVersion() string {
	return strconv.FormatInt(rand.Int64N(1<<52)+1, 10)
}
