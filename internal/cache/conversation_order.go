package cache

import (
	"context"
	"fmt"
	"strconv"

	"github.com/redis/go-redis/v9"

	"github.com/msggate/msggate/internal/im"
)

// Each user's conversation list is also kept in its order (newest activity first, ties by
// ID), so that a page of the list reads only its own conversations' states, however long the
// list: a sorted set per user, {u:U}:order.
//
//   - A single chat or a user's notification conversation (its users are in its ID, and a
//     send reaches at most two of them) has the score minus its newest send time. Ascending
//     order is then the list's order, ties by ID included, as Redis orders equal scores by
//     member. A send raises it in its users' sets before it is acknowledged (RaiseStates,
//     ConversationRaise.Users), with ZADD LT: a time only moves forward.
//   - A group's conversations are members with the score +inf, without a time: a send to a
//     group would otherwise write to every member's set. A page reads every group
//     conversation's seq state (a user's groups are few next to their chats) and places them
//     by their times. They join and leave the set with the list's changes, in the same script
//     that moves the list's version (changeList).
//   - The member "" (score +inf) marks the set filled from the whole list. Sends raise the
//     scores of a set that is not filled as well, creating it: a fill that read a state
//     older than a send then cannot lower the send's score (ZADD LT), whichever comes first.
//     A fill is dropped when the list's version moved since the list it is made of was read,
//     as a list fill is (FillConversationList), so a group the user left meanwhile is not put
//     back.
//
// A set that grows past MaxConversationList members is dropped; such a list is read whole,
// from MongoDB.

// MaxConversationList bounds the conversations a user's cached order holds (and the list the
// ledger reads, sync.MaxConversationsPerUser).
const MaxConversationList = 10000

// orderScore is a conversation's score in a user's order: minus its activity time.
func orderScore(t int64) string { return strconv.FormatInt(-t, 10) }

// OrderEntry is a conversation in a user's cached order and the activity time it is ordered
// by.
type OrderEntry struct {
	ConversationID string
	Time           int64
}

// OrderedPage is what GetConversationPage read of a user's order.
type OrderedPage struct {
	// Cached is false when the user's order is not cached: the page must be cut from the
	// whole list (FillConversationOrder).
	Cached bool
	// Groups are the group conversations on the list, to be placed by their seq states.
	Groups []string
	// Entries are the other conversations after the position asked for, in order, at most
	// as many as asked for.
	Entries []OrderEntry
	// Size is how many conversations the order holds, groups included.
	Size int
}

// readOrderPage answers a page of a user's order (KEYS[1]): false when it is not filled, else
// the group conversations, the members tied with the cursor's score (ARGV[2], "" for none;
// only when the cursor's own conversation ARGV[3] no longer holds it, so the caller picks
// those past its ID), up to ARGV[1] members past the cursor's score, with their scores, and
// how many members the order holds.
// The members with the score +inf (groups, the marker) are never part of a page.
var readOrderPage = redis.NewScript(`
if not redis.call('ZSCORE', KEYS[1], '') then
  return false
end
local n = tonumber(ARGV[1])
local groups = redis.call('ZRANGEBYSCORE', KEYS[1], '+inf', '+inf')
local size = redis.call('ZCARD', KEYS[1])
if ARGV[2] == '' then
  return {groups, {}, redis.call('ZRANGEBYSCORE', KEYS[1], '-inf', '(+inf', 'WITHSCORES', 'LIMIT', 0, n), size}
end
local own = redis.call('ZSCORE', KEYS[1], ARGV[3])
if own and tonumber(own) == tonumber(ARGV[2]) then
  local r = redis.call('ZRANK', KEYS[1], ARGV[3])
  local last = math.min(r + n, redis.call('ZCOUNT', KEYS[1], '-inf', '(+inf') - 1)
  return {groups, {}, redis.call('ZRANGE', KEYS[1], r + 1, last, 'WITHSCORES'), size}
end
return {groups, redis.call('ZRANGEBYSCORE', KEYS[1], ARGV[2], ARGV[2], 'WITHSCORES'),
  redis.call('ZRANGEBYSCORE', KEYS[1], '(' .. ARGV[2], '(+inf', 'WITHSCORES', 'LIMIT', 0, n), size}`)

// GetConversationPage reads, in one round trip (possibly shared with other requests' reads),
// up to limit of a user's non-group conversations after the position after (nil: from the
// start) in the user's cached order, the user's group conversations, and, as
// GetStatesMany, the user's states in the conversations guess names (the ones the caller
// expects the page to need): when the guess was right, the page needs no second round trip.
// The states are aligned with guess.
func (c *Cache) GetConversationPage(ctx context.Context, userID string, after *im.ListPosition, limit int, guess []string) (OrderedPage, States, error) {
	page, states, err := c.getConversationPage(ctx, userID, after, limit, guess)
	if redis.HasErrorPrefix(err, "NOSCRIPT") { // the server does not know the script yet
		if err := readOrderPage.Load(ctx, c.rdb).Err(); err != nil {
			return OrderedPage{}, States{}, cacheError("load the conversation order script", err)
		}
		page, states, err = c.getConversationPage(ctx, userID, after, limit, guess)
	}
	if err != nil {
		return OrderedPage{}, States{}, cacheError("get conversation page", err)
	}
	return page, states, nil
}

func (c *Cache) getConversationPage(ctx context.Context, userID string, after *im.ListPosition, limit int, guess []string) (OrderedPage, States, error) {
	var cmds commands
	cursorScore, cursorID := "", ""
	if after != nil {
		cursorScore, cursorID = orderScore(after.Time), after.ConversationID
	}
	order := redis.NewCmd(ctx, "evalsha", readOrderPage.Hash(), 1, c.orderKey(userID), limit, cursorScore, cursorID)
	_ = cmds.Process(ctx, order)
	var states *statesRead
	if len(guess) > 0 {
		states = c.queueStateReads(ctx, &cmds, []StateQuery{{UserID: userID, ConversationIDs: guess}})
	}
	if err := c.reads.do(ctx, c.rdb, cmds); err != nil {
		return OrderedPage{}, States{}, err
	}
	var guessed States
	if states != nil {
		var err error
		if guessed, err = states.result(); err != nil {
			return OrderedPage{}, States{}, err
		}
	}
	v, err := order.Result()
	if err == redis.Nil {
		return OrderedPage{}, guessed, nil
	}
	if err != nil {
		return OrderedPage{}, States{}, err
	}
	parts, ok := v.([]any)
	if !ok || len(parts) != 4 {
		return OrderedPage{}, States{}, fmt.Errorf("the conversation order script answered %T", v)
	}
	size, _ := parts[3].(int64)
	out := OrderedPage{Cached: true, Size: max(0, int(size)-1)} // the marker is no conversation
	groups, _ := parts[0].([]any)
	for _, g := range groups {
		if id, _ := g.(string); id != listFilled {
			out.Groups = append(out.Groups, id)
		}
	}
	ties, err := orderEntries(parts[1])
	if err != nil {
		return OrderedPage{}, States{}, err
	}
	for _, e := range ties { // members sort by ID within a score, as Go compares strings
		if e.ConversationID > cursorID && len(out.Entries) < limit {
			out.Entries = append(out.Entries, e)
		}
	}
	rest, err := orderEntries(parts[2])
	if err != nil {
		return OrderedPage{}, States{}, err
	}
	out.Entries = append(out.Entries, rest[:min(len(rest), limit-len(out.Entries))]...)
	return out, guessed, nil
}

// orderEntries parses a ZRANGE ... WITHSCORES answer of an order.
func orderEntries(v any) ([]OrderEntry, error) {
	flat, _ := v.([]any)
	out := make([]OrderEntry, 0, len(flat)/2)
	for i := 0; i+1 < len(flat); i += 2 {
		id, _ := flat[i].(string)
		score, _ := flat[i+1].(string)
		f, err := strconv.ParseFloat(score, 64)
		if err != nil {
			return nil, fmt.Errorf("conversation order: score %q of %q: %w", score, id, err)
		}
		out = append(out, OrderEntry{ConversationID: id, Time: -int64(f)})
	}
	return out, nil
}

// fillOrder fills a user's order (KEYS[1]) from the whole list read at the list version
// ARGV[1] ("" = none), unless the version (KEYS[2]) moved since: ARGV[2] the TTL, ARGV[3] the
// bound, ARGV[4] how many group conversations follow, then those, then pairs of a score and a
// conversation. Members go in steps, as Lua's unpack is bounded.
var fillOrder = redis.NewScript(`
local v = redis.call('GET', KEYS[2])
if not ((v == false and ARGV[1] == '') or v == ARGV[1]) then
  return 0
end
local groupsEnd = 4 + tonumber(ARGV[4])
for i = 5, groupsEnd do
  redis.call('ZADD', KEYS[1], '+inf', ARGV[i])
end
for i = groupsEnd + 1, #ARGV, 1000 do
  redis.call('ZADD', KEYS[1], 'LT', unpack(ARGV, i, math.min(i + 999, #ARGV)))
end
redis.call('ZADD', KEYS[1], '+inf', '')
if redis.call('ZCARD', KEYS[1]) > tonumber(ARGV[3]) + 1 then
  redis.call('DEL', KEYS[1])
  return 0
end
redis.call('PEXPIRE', KEYS[1], ARGV[2])
return 1`)

// FillConversationOrder caches a user's order, made of the whole list as read at version (the
// list's version before the read, as FillConversationList takes it): groups are the group
// conversations on it, entries the others that hold messages, with their activity times. It
// is dropped when the list changed since, or when it would hold more than limit
// conversations. The caller does not fill an order from a list its read may have cut short.
func (c *Cache) FillConversationOrder(ctx context.Context, userID, version string, groups []string, entries []OrderEntry, limit int) error {
	args := make([]any, 0, 4+len(groups)+2*len(entries))
	args = append(args, version, ms(c.opts.StateTTL), limit, len(groups))
	for _, g := range groups {
		args = append(args, g)
	}
	for _, e := range entries {
		args = append(args, orderScore(e.Time), e.ConversationID)
	}
	return cacheError("fill conversation order", fillOrder.Run(ctx, c.rdb, []string{c.orderKey(userID), c.listKeys(userID)[1]}, args...).Err())
}

// raiseOrder moves conversations of a user's order (KEYS[1]) forward to the times of their
// newest sends, creating the set when it does not exist: ARGV[1] the TTL, ARGV[2] the bound,
// then pairs of a score and a conversation.
var raiseOrder = redis.NewScript(`
redis.call('ZADD', KEYS[1], 'LT', unpack(ARGV, 3))
if redis.call('ZCARD', KEYS[1]) > tonumber(ARGV[2]) + 1 then
  redis.call('DEL', KEYS[1])
else
  redis.call('PEXPIRE', KEYS[1], ARGV[1])
end
return 1`)

// queueOrderRaises queues on pipe the raises of users' orders that convs' sends make.
func (c *Cache) queueOrderRaises(ctx context.Context, pipe redis.Pipeliner, convs []ConversationRaise) {
	byUser := map[string][]any{}
	var users []string
	for _, r := range convs {
		if r.LastTime == nil {
			continue
		}
		for _, u := range r.Users {
			if byUser[u] == nil {
				users = append(users, u)
				byUser[u] = []any{ms(c.opts.StateTTL), MaxConversationList}
			}
			byUser[u] = append(byUser[u], orderScore(*r.LastTime), r.ConversationID)
		}
	}
	for _, u := range users {
		raiseOrder.Eval(ctx, pipe, []string{c.orderKey(u)}, byUser[u]...)
	}
}
