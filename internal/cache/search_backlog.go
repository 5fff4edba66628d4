package cache

import (
	"context"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"
)

// OpenIM mode keeps its search index current from OpenIM's feed, and must not lose a change
// while the index is down: the feed's offsets are committed once a batch's events are logged,
// so the seqs a batch (or a gap fill) touched are first kept here, and leave only once the
// index shows what OpenIM's stores show of them. Each is scored by when it was last added:
// one added again while it was being indexed (a revoke of a message just read) keeps its new
// score, so the indexer that read the older state does not drop it.

// BacklogSeq is one seq of a conversation waiting to be indexed, with its place in the
// backlog (Score), which DropSearchBacklog checks.
type BacklogSeq struct {
	ConversationID string
	Seq            int64
	Score          float64
}

// backlogMember is "<seq>:<conversationID>": a seq holds no ':', a conversation ID may.
func backlogMember(conversationID string, seq int64) string {
	return strconv.FormatInt(seq, 10) + ":" + conversationID
}

// AddSearchBacklog keeps the seqs for the indexer, each scored now (in µs, so that an add a
// moment after an indexer read the seq scores it differently).
func (c *Cache) AddSearchBacklog(ctx context.Context, seqs []BacklogSeq) error {
	if len(seqs) == 0 {
		return nil
	}
	now := float64(time.Now().UnixMicro())
	members := make([]redis.Z, len(seqs))
	for i, s := range seqs {
		members[i] = redis.Z{Score: now, Member: backlogMember(s.ConversationID, s.Seq)}
	}
	return cacheError("add to the search backlog", c.rdb.ZAdd(ctx, c.searchBacklogKey(), members...).Err())
}

// SearchBacklog returns up to n of the oldest seqs waiting to be indexed.
func (c *Cache) SearchBacklog(ctx context.Context, n int) ([]BacklogSeq, error) {
	zs, err := c.rdb.ZRangeWithScores(ctx, c.searchBacklogKey(), 0, int64(n-1)).Result()
	if err != nil {
		return nil, cacheError("read the search backlog", err)
	}
	out := make([]BacklogSeq, 0, len(zs))
	for _, z := range zs {
		m, _ := z.Member.(string)
		seq, conv, ok := strings.Cut(m, ":")
		s, err := strconv.ParseInt(seq, 10, 64)
		if !ok || err != nil {
			// Not one of ours: dropped, or it would stand at the head for ever.
			c.rdb.ZRem(ctx, c.searchBacklogKey(), m)
			continue
		}
		out = append(out, BacklogSeq{ConversationID: conv, Seq: s, Score: z.Score})
	}
	return out, nil
}

// dropIfScore removes each member whose score is still the one given (ARGV pairs).
var dropIfScore = redis.NewScript(`
local n = 0
for i = 1, #ARGV, 2 do
  local s = redis.call('ZSCORE', KEYS[1], ARGV[i])
  if s and tonumber(s) == tonumber(ARGV[i+1]) then
    redis.call('ZREM', KEYS[1], ARGV[i])
    n = n + 1
  end
end
return n`)

// DropSearchBacklog removes the seqs the index now shows, each only if it was not added again
// since it was read (its score unchanged).
func (c *Cache) DropSearchBacklog(ctx context.Context, seqs []BacklogSeq) error {
	if len(seqs) == 0 {
		return nil
	}
	args := make([]any, 0, 2*len(seqs))
	for _, s := range seqs {
		args = append(args, backlogMember(s.ConversationID, s.Seq), strconv.FormatFloat(s.Score, 'f', -1, 64))
	}
	return cacheError("drop from the search backlog", dropIfScore.Run(ctx, c.rdb, []string{c.searchBacklogKey()}, args...).Err())
}

// SearchBacklogLen is how many seqs wait to be indexed.
func (c *Cache) SearchBacklogLen(ctx context.Context) (int64, error) {
	n, err := c.rdb.ZCard(ctx, c.searchBacklogKey()).Result()
	return n, cacheError("count the search backlog", err)
}
