package cache

import (
	"context"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"
)

// A follower of a store msggate does not own (OpenIM mode) logs each conversation's messages
// as that store's feed tells them, and keeps here the seq up to which it has logged every seq per
// conversation: a later seq beyond it, or a store whose max seq runs ahead of it, shows what
// the feed never delivered. The conversations are also kept in a set scored by the time their
// followed seq last moved, so that the recently active ones can be checked against the store.

// raiseFollowedSeq keeps the higher of the stored seq and ARGV[1] and returns the one before.
var raiseFollowedSeq = redis.NewScript(`
local prev = tonumber(redis.call('GET', KEYS[1]) or '0')
if tonumber(ARGV[1]) > prev then
  redis.call('SET', KEYS[1], ARGV[1], 'PX', ARGV[2])
else
  redis.call('PEXPIRE', KEYS[1], ARGV[2])
end
return prev`)

// FollowedSeqs returns the seq up to which each conversation is logged, aligned with
// conversationIDs (0: none yet).
func (c *Cache) FollowedSeqs(ctx context.Context, conversationIDs []string) ([]int64, error) {
	out := make([]int64, len(conversationIDs))
	if len(conversationIDs) == 0 {
		return out, nil
	}
	pipe := c.rdb.Pipeline()
	cmds := make([]*redis.StringCmd, len(conversationIDs))
	for i, id := range conversationIDs {
		cmds[i] = pipe.Get(ctx, c.followedSeqKey(id))
	}
	if _, err := pipe.Exec(ctx); err != nil && err != redis.Nil {
		return nil, cacheError("read followed seqs", err)
	}
	for i, cmd := range cmds {
		s, err := cmd.Result()
		if err == redis.Nil {
			continue
		}
		if out[i], err = strconv.ParseInt(s, 10, 64); err != nil {
			return nil, cacheError("read followed seqs", err)
		}
	}
	return out, nil
}

// RaiseFollowedSeqs records that each conversation's seqs up to the given one are logged (a
// lower value than the stored one changes nothing), and marks the conversations active now.
func (c *Cache) RaiseFollowedSeqs(ctx context.Context, seqs map[string]int64) error {
	if len(seqs) == 0 {
		return nil
	}
	ttl := ms(c.opts.StateTTL)
	now := float64(time.Now().UnixMilli())
	pipe := c.rdb.Pipeline()
	members := make([]redis.Z, 0, len(seqs))
	for id, seq := range seqs {
		raiseFollowedSeq.Eval(ctx, pipe, []string{c.followedSeqKey(id)}, seq, ttl)
		members = append(members, redis.Z{Score: now, Member: id})
	}
	pipe.ZAdd(ctx, c.followedSetKey(), members...)
	if _, err := pipe.Exec(ctx); err != nil {
		return cacheError("raise followed seqs", err)
	}
	return nil
}

// ActiveFollowed returns up to limit conversations whose followed seq moved at or after since,
// most recent first, and forgets those that have not moved for the state's lifetime.
func (c *Cache) ActiveFollowed(ctx context.Context, since time.Time, limit int) ([]string, error) {
	key := c.followedSetKey()
	pipe := c.rdb.Pipeline()
	pipe.ZRemRangeByScore(ctx, key, "-inf", strconv.FormatInt(time.Now().Add(-c.opts.StateTTL).UnixMilli(), 10))
	ids := pipe.ZRevRangeByScore(ctx, key, &redis.ZRangeBy{Min: strconv.FormatInt(since.UnixMilli(), 10), Max: "+inf", Count: int64(limit)})
	if _, err := pipe.Exec(ctx); err != nil {
		return nil, cacheError("read active followed conversations", err)
	}
	return ids.Val(), nil
}

// FollowingSince returns when the follower began following (ms): the first call stores now,
// later ones, on any instance, return that.
func (c *Cache) FollowingSince(ctx context.Context) (int64, error) {
	key := c.followedSinceKey()
	pipe := c.rdb.Pipeline()
	pipe.SetNX(ctx, key, time.Now().UnixMilli(), 0)
	get := pipe.Get(ctx, key)
	if _, err := pipe.Exec(ctx); err != nil {
		return 0, cacheError("read following since", err)
	}
	since, err := strconv.ParseInt(get.Val(), 10, 64)
	if err != nil {
		return 0, cacheError("read following since", err)
	}
	return since, nil
}
