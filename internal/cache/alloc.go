package cache

import (
	"context"
	"errors"

	"github.com/redis/go-redis/v9"
)

// AllocState is the allocator's answer to one AllocSeqs call.
type AllocState int

const (
	// Allocated: the seqs First..First+n-1 are the caller's.
	Allocated AllocState = iota
	// NeedInit: the allocator has no state (new conversation, or Redis lost its keys). The
	// caller holds the refill lock and must call SetAllocBlock with the stored max seq.
	NeedInit
	// NeedBlock: the reserved block is used up. The caller holds the refill lock and must
	// reserve a new block in MongoDB and call SetAllocBlock.
	NeedBlock
	// Busy: another caller is refilling; wait briefly and ask again.
	Busy
)

var allocSeqs = redis.NewScript(`
local curr = redis.call('HGET', KEYS[1], 'curr')
local last = redis.call('HGET', KEYS[1], 'last')
local n = tonumber(ARGV[1])
if curr and last then
  curr = tonumber(curr)
  if curr + n <= tonumber(last) then
    redis.call('HSET', KEYS[1], 'curr', curr + n)
    redis.call('PEXPIRE', KEYS[1], ARGV[4])
    return {0, curr + 1}
  end
end
if redis.call('SET', KEYS[2], ARGV[2], 'NX', 'PX', ARGV[3]) then
  if curr then return {2, 0} end
  return {1, 0}
end
return {3, 0}`)

// AllocSeqs hands out n consecutive seqs of a conversation from the block reserved in MongoDB.
// token identifies the caller for the refill lock.
func (c *Cache) AllocSeqs(ctx context.Context, conversationID string, n int64, token string) (AllocState, int64, error) {
	res, err := allocSeqs.Run(ctx, c.rdb,
		c.allocKeys(conversationID),
		n, token, ms(c.opts.AllocLockTTL), ms(c.opts.StateTTL)).Int64Slice()
	if err != nil {
		return 0, 0, cacheError("allocate seqs", err)
	}
	if len(res) != 2 {
		return 0, 0, cacheError("allocate seqs", errors.New("unexpected script answer"))
	}
	return AllocState(res[0]), res[1], nil
}

// AllocRequest asks for n consecutive seqs of a conversation (AllocSeqsMany).
type AllocRequest struct {
	ConversationID string
	N              int64
}

// AllocAnswer is the allocator's answer to one AllocRequest: its state and, when Allocated,
// the first seq.
type AllocAnswer struct {
	State AllocState
	First int64
}

// AllocSeqsMany is AllocSeqs for many conversations in one round trip, aligned with reqs.
func (c *Cache) AllocSeqsMany(ctx context.Context, reqs []AllocRequest, token string) ([]AllocAnswer, error) {
	out := make([]AllocAnswer, len(reqs))
	if len(reqs) == 0 {
		return out, nil
	}
	// EVAL, not EVALSHA: a pipeline cannot fall back to EVAL when the script is not loaded.
	cmds := make([]*redis.Cmd, len(reqs))
	pipe := c.rdb.Pipeline()
	for i, r := range reqs {
		cmds[i] = allocSeqs.Eval(ctx, pipe,
			c.allocKeys(r.ConversationID),
			r.N, token, ms(c.opts.AllocLockTTL), ms(c.opts.StateTTL))
	}
	if _, err := pipe.Exec(ctx); err != nil {
		return nil, cacheError("allocate seqs", err)
	}
	for i, cmd := range cmds {
		res, err := cmd.Int64Slice()
		if err != nil {
			return nil, cacheError("allocate seqs", err)
		}
		if len(res) != 2 {
			return nil, cacheError("allocate seqs", errors.New("unexpected script answer"))
		}
		out[i] = AllocAnswer{State: AllocState(res[0]), First: res[1]}
	}
	return out, nil
}

var setAllocBlock = redis.NewScript(`
if redis.call('GET', KEYS[2]) ~= ARGV[1] then return 0 end
if redis.call('HGET', KEYS[1], 'curr') == false then
  redis.call('HSET', KEYS[1], 'curr', ARGV[2])
end
local last = redis.call('HGET', KEYS[1], 'last')
if last == false or tonumber(last) < tonumber(ARGV[3]) then
  redis.call('HSET', KEYS[1], 'last', ARGV[3])
end
redis.call('PEXPIRE', KEYS[1], ARGV[4])
redis.call('DEL', KEYS[2])
return 1`)

// SetAllocBlock installs a block reserved in MongoDB and releases the refill lock. storedMax
// becomes the allocator's position only when it has none (after NeedInit): the allocator then
// resumes right after the last stored message, so losing Redis never leaves a gap. It reports
// false when the caller no longer held the lock (it expired); the caller then asks again.
func (c *Cache) SetAllocBlock(ctx context.Context, conversationID, token string, storedMax, blockEnd int64) (bool, error) {
	n, err := setAllocBlock.Run(ctx, c.rdb,
		c.allocKeys(conversationID),
		token, storedMax, blockEnd, ms(c.opts.StateTTL)).Int64()
	if err != nil {
		return false, cacheError("set allocator block", err)
	}
	return n == 1, nil
}
