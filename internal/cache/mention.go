package cache

import (
	"context"
	"strings"

	"github.com/redis/go-redis/v9"

	"github.com/msggate/msggate/internal/im"
)

// The mention index's cache, per conversation C (all keys tagged {C}, so one slot):
//
//	{C}:mention       hash: "from", the seq above which every indexed mention is here (absent:
//	                  none is known to be), and "gen", raised by every removal, so that a fill
//	                  read from the store before a removal cannot bring the removed back
//	{C}:mention:e     hash seq -> the entry: sender, all, named users, hidden users
//	{C}:mention:all   zset of the seqs that mention everyone (AtAllTag), scored by seq
//	{C}:mention:u:U   zset of the seqs that name U (and not everyone)
//	{C}:mention:x:U   zset of the seqs that mention everyone but not U (U sent it, or deleted
//	                  it for themselves)
//
// So U's mentions in (a, b] are ZCOUNT u:U + ZCOUNT all - ZCOUNT x:U, three O(log n) counts
// whatever the group's size: an AtAllTag message is one entry, never one per member.
// Entries are added whether or not "from" is set (an add is a union, so a later fill keeps it);
// a fill sets "from" only when no removal happened since it read "gen".

// The scripts' shared Lua: the entry's encoding (fields split by \31, users by \30) and
// adding one entry to the zsets.
const mentionLua = `
local base = KEYS[1]
local ttl = ARGV[1]
local function touch(key) redis.call('PEXPIRE', key, ttl) end
local function split(s, sep)
  local out = {}
  if s == nil or s == '' then return out end
  for part in string.gmatch(s, '([^' .. sep .. ']+)') do out[#out + 1] = part end
  return out
end
local function decode(v)
  local f = {}
  local i = 1
  for part in string.gmatch(v .. '\31', '([^\31]*)\31') do f[i] = part; i = i + 1 end
  return {sender = f[1], all = f[2] == '1', users = split(f[3], '\30'), hidden = split(f[4], '\30')}
end
local function encode(e)
  return e.sender .. '\31' .. (e.all and '1' or '0') .. '\31' .. table.concat(e.users, '\30') .. '\31' .. table.concat(e.hidden, '\30')
end
local function has(list, x)
  for _, v in ipairs(list) do if v == x then return true end end
  return false
end
local function index(seq, e)
  if e.all then
    redis.call('ZADD', base .. ':all', seq, seq); touch(base .. ':all')
    redis.call('ZADD', base .. ':x:' .. e.sender, seq, seq); touch(base .. ':x:' .. e.sender)
    for _, h in ipairs(e.hidden) do redis.call('ZADD', base .. ':x:' .. h, seq, seq); touch(base .. ':x:' .. h) end
  else
    for _, u in ipairs(e.users) do
      if not has(e.hidden, u) then redis.call('ZADD', base .. ':u:' .. u, seq, seq); touch(base .. ':u:' .. u) end
    end
  end
end
local function add(seq, v)
  redis.call('HSET', base .. ':e', seq, v); touch(base .. ':e')
  index(seq, decode(v))
end
`

// Every script's ARGV[1] is the TTL (ms) of the keys it writes. The data keys' TTL is renewed
// by every write; "from" lives only as long as the fill that set it gave it, when it renewed
// every key holding an entry above it, so "from" never outlives the entries it vouches for.

// addMentions: ARGV[2..] are seq, encoded entry pairs.
var addMentions = redis.NewScript(mentionLua + `
for i = 2, #ARGV, 2 do add(ARGV[i], ARGV[i + 1]) end
return 1`)

// fillMentions: ARGV[2] the gen read before the store, ARGV[3] the seq above which the store
// was read, then seq, entry pairs. Returns 0 when a removal came between.
var fillMentions = redis.NewScript(mentionLua + `
local gen = redis.call('HGET', base, 'gen') or ''
if gen ~= ARGV[2] then return 0 end
for i = 4, #ARGV, 2 do add(ARGV[i], ARGV[i + 1]) end
local from = tonumber(redis.call('HGET', base, 'from'))
if from == nil or tonumber(ARGV[3]) < from then redis.call('HSET', base, 'from', ARGV[3]) end
touch(base)
return 1`)

// removeMentions: ARGV[2] is "" (removed for everyone: revoked, deleted) or the user who
// deleted the messages for themselves, then the seqs.
var removeMentions = redis.NewScript(mentionLua + `
local user = ARGV[2]
for i = 3, #ARGV do
  local seq = ARGV[i]
  local v = redis.call('HGET', base .. ':e', seq)
  if v then
    local e = decode(v)
    if user == '' then
      redis.call('ZREM', base .. ':all', seq)
      redis.call('ZREM', base .. ':x:' .. e.sender, seq)
      for _, h in ipairs(e.hidden) do redis.call('ZREM', base .. ':x:' .. h, seq) end
      for _, u in ipairs(e.users) do redis.call('ZREM', base .. ':u:' .. u, seq) end
      redis.call('HDEL', base .. ':e', seq)
    elseif not has(e.hidden, user) then
      e.hidden[#e.hidden + 1] = user
      redis.call('HSET', base .. ':e', seq, encode(e)); touch(base .. ':e')
      if e.all then redis.call('ZADD', base .. ':x:' .. user, seq, seq); touch(base .. ':x:' .. user) end
      redis.call('ZREM', base .. ':u:' .. user, seq)
    end
  end
end
redis.call('HINCRBY', base, 'gen', 1)
if redis.call('PTTL', base) < 0 then touch(base) end
return 1`)

// countMentions: ARGV user, after, upTo. -1 when the cache does not cover (after, upTo].
var countMentions = redis.NewScript(mentionLua + `
local from = tonumber(redis.call('HGET', base, 'from'))
local after = tonumber(ARGV[2])
if from == nil or from > after then return -1 end
local lo, hi = '(' .. ARGV[2], ARGV[3]
return redis.call('ZCOUNT', base .. ':u:' .. ARGV[1], lo, hi) + redis.call('ZCOUNT', base .. ':all', lo, hi)
  - redis.call('ZCOUNT', base .. ':x:' .. ARGV[1], lo, hi)`)

// listMentions: ARGV user, after, upTo, limit. The first limit seqs that mention the user in
// (after, upTo], in order; {-1} when the cache does not cover the range. Everyone-mentions the
// user is excluded from are stepped over, in batches.
var listMentions = redis.NewScript(mentionLua + `
local from = tonumber(redis.call('HGET', base, 'from'))
local after = tonumber(ARGV[2])
if from == nil or from > after then return {-1} end
local lo, hi, n = '(' .. ARGV[2], ARGV[3], tonumber(ARGV[4])
local out = {}
for _, s in ipairs(redis.call('ZRANGEBYSCORE', base .. ':u:' .. ARGV[1], lo, hi, 'LIMIT', 0, n)) do out[#out + 1] = tonumber(s) end
local x = base .. ':x:' .. ARGV[1]
local found, offset = 0, 0
while found < n do
  local batch = redis.call('ZRANGEBYSCORE', base .. ':all', lo, hi, 'LIMIT', offset, 64)
  if #batch == 0 then break end
  offset = offset + #batch
  for _, s in ipairs(batch) do
    if found < n and not redis.call('ZSCORE', x, s) then out[#out + 1] = tonumber(s); found = found + 1 end
  end
end
table.sort(out)
local res = {}
for i = 1, math.min(n, #out) do res[i] = out[i] end
return res`)

// mentionTTL is how long the mention keys live after their last write: the seq state's.
func (c *Cache) mentionTTL() int64 { return ms(c.opts.StateTTL) }

func encodeMention(m im.Mention) string {
	all := "0"
	if m.All {
		all = "1"
	}
	return m.SendID + "\x1f" + all + "\x1f" + strings.Join(m.Users, "\x1e") + "\x1f" + strings.Join(m.Hidden, "\x1e")
}

func mentionArgs(head []any, ms []im.Mention) []any {
	for _, m := range ms {
		head = append(head, m.Seq, encodeMention(m))
	}
	return head
}

// AddMentions puts the mentions of newly stored messages into the conversation's cache.
func (c *Cache) AddMentions(ctx context.Context, conversationID string, ms []im.Mention) error {
	if len(ms) == 0 {
		return nil
	}
	err := addMentions.Run(ctx, c.rdb, []string{c.mentionKey(conversationID)}, mentionArgs([]any{c.mentionTTL()}, ms)...).Err()
	return cacheError("add mentions", err)
}

// RemoveMentions takes the messages at seqs out of the conversation's cache: for everyone
// (userID ""), or for userID only (deleted for themselves).
func (c *Cache) RemoveMentions(ctx context.Context, conversationID, userID string, seqs []int64) error {
	if len(seqs) == 0 {
		return nil
	}
	args := []any{c.mentionTTL(), userID}
	for _, s := range seqs {
		args = append(args, s)
	}
	err := removeMentions.Run(ctx, c.rdb, []string{c.mentionKey(conversationID)}, args...).Err()
	return cacheError("remove mentions", err)
}

// ForgetMentions makes the conversation's cached mentions count as unknown, so that the next
// read fills them from the store: what a writer does when it could not update them.
func (c *Cache) ForgetMentions(ctx context.Context, conversationID string) error {
	return cacheError("forget mentions", c.rdb.HDel(ctx, c.mentionKey(conversationID), "from").Err())
}

// MentionGen returns the conversation's removal generation, to hand to FillMentions.
func (c *Cache) MentionGen(ctx context.Context, conversationID string) (string, error) {
	g, err := c.rdb.HGet(ctx, c.mentionKey(conversationID), "gen").Result()
	if err == redis.Nil {
		return "", nil
	}
	return g, cacheError("read mention generation", err)
}

// FillMentions puts what the store holds of the conversation's mentions above after into the
// cache, read after MentionGen answered gen, and marks the cache complete above after. It
// reports false, and marks nothing, when a removal came between.
func (c *Cache) FillMentions(ctx context.Context, conversationID, gen string, after int64, ms []im.Mention) (bool, error) {
	n, err := fillMentions.Run(ctx, c.rdb, []string{c.mentionKey(conversationID)}, mentionArgs([]any{c.mentionTTL(), gen, after}, ms)...).Int()
	if err != nil {
		return false, cacheError("fill mentions", err)
	}
	return n == 1, nil
}

// MentionRange is the seqs (After, UpTo] of one conversation whose mentions of a user are asked.
type MentionRange struct {
	ConversationID string
	After, UpTo    int64
}

// CountMentions counts, in one round trip, the mentions of userID in each range, aligned with
// rs; -1 where the cache does not cover the range (the caller reads the store).
func (c *Cache) CountMentions(ctx context.Context, userID string, rs []MentionRange) ([]int64, error) {
	out, err := c.countMentions(ctx, userID, rs)
	if redis.HasErrorPrefix(err, "NOSCRIPT") {
		if err := countMentions.Load(ctx, c.rdb).Err(); err != nil {
			return nil, cacheError("load the mention count script", err)
		}
		out, err = c.countMentions(ctx, userID, rs)
	}
	return out, cacheError("count mentions", err)
}

func (c *Cache) countMentions(ctx context.Context, userID string, rs []MentionRange) ([]int64, error) {
	out := make([]int64, len(rs))
	pipe := c.rdb.Pipeline()
	cmds := make([]*redis.Cmd, len(rs))
	for i, r := range rs {
		cmds[i] = pipe.EvalSha(ctx, countMentions.Hash(), []string{c.mentionKey(r.ConversationID)}, userID, r.After, r.UpTo)
	}
	if len(rs) == 0 {
		return out, nil
	}
	if _, err := pipe.Exec(ctx); err != nil {
		return nil, err
	}
	for i, cmd := range cmds {
		n, err := cmd.Int64()
		if err != nil {
			return nil, err
		}
		out[i] = n
	}
	return out, nil
}

// ListMentions returns the first limit seqs in r that mention userID, in order, and false when
// the cache does not cover r.
func (c *Cache) ListMentions(ctx context.Context, userID string, r MentionRange, limit int) ([]int64, bool, error) {
	res, err := listMentions.Run(ctx, c.rdb, []string{c.mentionKey(r.ConversationID)}, userID, r.After, r.UpTo, limit).Int64Slice()
	if err != nil {
		return nil, false, cacheError("list mentions", err)
	}
	if len(res) == 1 && res[0] == -1 {
		return nil, false, nil
	}
	return res, true, nil
}
