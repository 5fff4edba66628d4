package cache

import (
	"context"
	"errors"

	"github.com/redis/go-redis/v9"

	"github.com/msggate/msggate/internal/im"
)

// Each user's conversation list (the IDs on MongoDB's user_conversation list) is cached as a
// set, with an empty member marking a filled list (so that an empty list is cached too), and a
// version beside it that every change moves: a reader's fill from MongoDB is dropped when the
// version moved since the reader looked, so it never puts back a list older than a change.
// Changes apply to a cached set in place (a send to a known conversation changes nothing), so
// an active user's list stays cached.
//
// The version also names the list: it moves before every change is acknowledged, and starts
// from a random number, so it never comes back to a value it had (not even after it expired).
// A reader that saw the list at a version may take it as current while the version is the one
// it saw, without reading the set again (GetConversationListWithStates).

// listFilled is the member that marks a set as a filled list; conversation IDs are never empty.
const listFilled = ""

// ConversationList is a user's cached conversation list: the IDs (Cached false on a miss) and
// the version the reader saw, to be handed back to FillConversationList.
type ConversationList struct {
	IDs     []string
	Cached  bool
	Version string
}

// GetConversationList reads a user's conversation list in one round trip.
func (c *Cache) GetConversationList(ctx context.Context, userID string) (ConversationList, error) {
	list, _, err := c.GetConversationListWithStates(ctx, userID, ConversationList{})
	return list, err
}

// GetConversationListWithStates reads a user's conversation list and, in the same round trip,
// the user's states (as GetStatesMany) in the conversations on known, the list as the caller
// last read it: when the list has not changed since, its states need no second round trip.
// When known has a version, the round trip reads only the version, and known is the answer
// while the version is still known's; when it moved, a second round trip reads the list. The
// states are aligned with known.IDs.
func (c *Cache) GetConversationListWithStates(ctx context.Context, userID string, known ConversationList) (ConversationList, States, error) {
	keys := c.listKeys(userID)
	// One round trip, possibly shared with other requests' reads (coalescedReads). The version
	// is read before the members: another client's change may run between the two commands,
	// and a list newer than its version is only re-read later, where a version newer than its
	// list would name a list that never was.
	var cmds commands
	version := redis.NewStringCmd(ctx, "get", keys[1])
	_ = cmds.Process(ctx, version)
	var members *redis.StringSliceCmd
	if known.Version == "" {
		members = redis.NewStringSliceCmd(ctx, "smembers", keys[0])
		_ = cmds.Process(ctx, members)
	}
	var states *statesRead
	if len(known.IDs) > 0 {
		states = c.queueStateReads(ctx, &cmds, []StateQuery{{UserID: userID, ConversationIDs: known.IDs}})
	}
	if err := c.reads.do(ctx, c.rdb, cmds); err != nil {
		return ConversationList{}, States{}, cacheError("get conversation list", err)
	}
	var guessed States
	if states != nil {
		var err error
		if guessed, err = states.result(); err != nil {
			return ConversationList{}, States{}, err
		}
	}
	current, _ := version.Result()
	if members == nil {
		if current == known.Version {
			return ConversationList{IDs: known.IDs, Cached: true, Version: current}, guessed, nil
		}
		list, err := c.GetConversationList(ctx, userID) // the list moved since known
		return list, guessed, err
	}
	out := ConversationList{Version: current}
	ids, _ := members.Result()
	if len(ids) == 0 {
		return out, guessed, nil
	}
	out.Cached = true
	out.IDs = make([]string, 0, len(ids)-1)
	for _, id := range ids {
		if id != listFilled {
			out.IDs = append(out.IDs, id)
		}
	}
	return out, guessed, nil
}

// listVersionsBatch bounds the users whose list versions one pipeline reads.
const listVersionsBatch = 1000

// ConversationListVersions reads the versions of users' conversation lists, aligned with
// userIDs ("" where a list has none): a GET each, many users a round trip. A version that
// moved since a reader looked means the list changed since (every change moves it).
func (c *Cache) ConversationListVersions(ctx context.Context, userIDs []string) ([]string, error) {
	out := make([]string, len(userIDs))
	for start := 0; start < len(userIDs); start += listVersionsBatch {
		batch := userIDs[start:min(start+listVersionsBatch, len(userIDs))]
		pipe := c.rdb.Pipeline()
		gets := make([]*redis.StringCmd, len(batch))
		for i, u := range batch {
			gets[i] = pipe.Get(ctx, c.listKeys(u)[1])
		}
		_, _ = pipe.Exec(ctx) // each command's own error is looked at below
		for i, g := range gets {
			v, err := g.Result()
			if err != nil && !errors.Is(err, redis.Nil) { // redis.Nil: no version
				return nil, cacheError("get conversation list versions", err)
			}
			out[start+i] = v
		}
	}
	return out, nil
}

// fillList caches a list read from MongoDB only while the version is the one the reader saw
// ("" = none). Members go in steps, as Lua's unpack is bounded.
var fillList = redis.NewScript(`
local v = redis.call('GET', KEYS[2])
if not ((v == false and ARGV[1] == '') or v == ARGV[1]) then
  return 0
end
redis.call('DEL', KEYS[1])
redis.call('SADD', KEYS[1], '')
for i = 3, #ARGV, 500 do
  redis.call('SADD', KEYS[1], unpack(ARGV, i, math.min(i + 499, #ARGV)))
end
redis.call('PEXPIRE', KEYS[1], ARGV[2])
if v then
  redis.call('PEXPIRE', KEYS[2], ARGV[2])
end
return 1`)

// FillConversationList caches a user's list read from MongoDB after GetConversationList
// answered a miss with version, unless a change came meanwhile. The caller does not cache a
// list its read may have cut short.
func (c *Cache) FillConversationList(ctx context.Context, userID, version string, ids []string) error {
	args := make([]any, 0, len(ids)+2)
	args = append(args, version, ms(c.opts.StateTTL))
	for _, id := range ids {
		args = append(args, id)
	}
	return cacheError("fill conversation list", fillList.Run(ctx, c.rdb, c.listKeys(userID), args...).Err())
}

// changeList moves a list's version (starting from the random ARGV[4] when there is none) and,
// when the list is cached, adds or removes members; a list that grows past ARGV[3] members (the
// empty marker aside) is dropped instead. The user's order (KEYS[3], conversation_order.go), when
// it exists, follows in the same step: the first ARGV[5] conversations are groups' and join it
// with the list (score +inf); a removal takes every one off it.
var changeList = redis.NewScript(`
if redis.call('EXISTS', KEYS[2]) == 0 then
  redis.call('SET', KEYS[2], ARGV[4])
end
redis.call('INCR', KEYS[2])
redis.call('PEXPIRE', KEYS[2], ARGV[1])
if redis.call('EXISTS', KEYS[1]) == 1 then
  for i = 6, #ARGV, 500 do
    redis.call(ARGV[2], KEYS[1], unpack(ARGV, i, math.min(i + 499, #ARGV)))
  end
  if redis.call('SCARD', KEYS[1]) > tonumber(ARGV[3]) + 1 then
    redis.call('DEL', KEYS[1])
  else
    redis.call('PEXPIRE', KEYS[1], ARGV[1])
  end
end
if redis.call('EXISTS', KEYS[3]) == 1 then
  if ARGV[2] == 'SREM' then
    for i = 6, #ARGV, 500 do
      redis.call('ZREM', KEYS[3], unpack(ARGV, i, math.min(i + 499, #ARGV)))
    end
  else
    for i = 6, 5 + tonumber(ARGV[5]) do
      redis.call('ZADD', KEYS[3], '+inf', ARGV[i])
    end
  end
  if redis.call('ZCARD', KEYS[3]) > tonumber(ARGV[3]) + 1 then
    redis.call('DEL', KEYS[3])
  else
    redis.call('PEXPIRE', KEYS[3], ARGV[1])
  end
end
return 1`)

// AddToConversationLists puts conversations on users' cached lists (byUser: user ID → the
// conversation IDs added), in one round trip. A list that grows past limit IDs is dropped
// from the cache: such a user's list is read from MongoDB, which reads at most limit. It must be
// called after every MongoDB write that adds entries, before the write is acknowledged.
func (c *Cache) AddToConversationLists(ctx context.Context, byUser map[string][]string, limit int) error {
	return c.changeLists(ctx, "SADD", byUser, limit)
}

// RemoveFromConversationLists takes a conversation off users' cached lists, in one round
// trip; called after MongoDB's entries are gone.
func (c *Cache) RemoveFromConversationLists(ctx context.Context, conversationID string, userIDs []string) error {
	byUser := make(map[string][]string, len(userIDs))
	for _, u := range userIDs {
		byUser[u] = []string{conversationID}
	}
	return c.changeLists(ctx, "SREM", byUser, 0)
}

func (c *Cache) changeLists(ctx context.Context, command string, byUser map[string][]string, limit int) error {
	if len(byUser) == 0 {
		return nil
	}
	pipe := c.rdb.Pipeline()
	for user, convs := range byUser {
		args := make([]any, 0, len(convs)+5)
		if command == "SREM" {
			limit = 1 << 30 // removing never grows a list
		}
		// The groups' conversations first: they are the ones the user's order holds without
		// a send.
		groups := 0
		args = append(args, ms(c.opts.StateTTL), command, limit, randomVersion(), 0)
		for _, id := range convs {
			if conv, err := im.ParseConversationID(id); err == nil && conv.Kind.IsGroup() {
				args = append(args, id)
				groups++
			}
		}
		for _, id := range convs {
			if conv, err := im.ParseConversationID(id); err != nil || !conv.Kind.IsGroup() {
				args = append(args, id)
			}
		}
		args[4] = groups
		changeList.Eval(ctx, pipe, append(c.listKeys(user), c.orderKey(user)), args...)
	}
	_, err := pipe.Exec(ctx)
	return cacheError("change conversation lists", err)
}
