package cache

import (
	"context"
	"strconv"

	"github.com/redis/go-redis/v9"
)

// Group membership is cached per group as a hash, {g:<groupID>}:members, of the memberships
// read so far: a field per user who was asked about, holding the role as a decimal, or
// membershipNone for a user who is not a member; and the field "" holding the group's
// membership version. Reading one user's membership is one HMGET of two fields, whatever the
// group's size, and a miss fills that user's field alone, from MongoDB's document of that user
// alone.
//
// Changes follow the conversation list's rules: the version moves (from a random start, so it
// never comes back to a value it had) with every change, and a reader's fill is dropped when
// the version moved since the reader looked. A writer holds the users it changes before it
// writes MongoDB (HoldMemberships: their fields become membershipHeld, which readers answer
// from MongoDB and never fill over) and releases them after (ReleaseMemberships: the fields
// are dropped and the version moves again). So a reader's fill is either older than the hold
// (dropped: the version moved) or was read from MongoDB after the release began, when MongoDB
// had the change; and a writer that fails after its hold leaves the held users read from
// MongoDB, never a stale answer.
//
// The hash lives StateTTL after its creation or last change: fills do not renew it, so a held
// field a failed writer left behind lasts at most that long.

const (
	membershipNone = "-"
	membershipHeld = "?"
	// membershipVersion is the field of the version: user IDs are never empty.
	membershipVersion = ""
)

// MembershipQuery asks for one user's membership in some groups.
type MembershipQuery struct {
	UserID   string
	GroupIDs []string
}

// Membership is what the cache holds of one user's membership in one group.
type Membership struct {
	// Cached is false on a miss and while a writer holds the membership (Held); the reader
	// then asks MongoDB.
	Cached bool
	// Held: a writer is changing the membership; what MongoDB answers must not be filled.
	Held bool
	// Member and Role are the membership, when Cached.
	Member bool
	Role   int32
	// Version is the group's membership version the reader saw ("" when none), to be handed
	// back to FillMemberships.
	Version string
}

// parseMembership reads one cached membership field; anything unknown is a miss.
func parseMembership(value, version string) Membership {
	m := Membership{Version: version}
	switch value {
	case "":
	case membershipHeld:
		m.Held = true
	case membershipNone:
		m.Cached = true
	default:
		role, err := strconv.ParseInt(value, 10, 32)
		if err == nil {
			m.Cached, m.Member, m.Role = true, true, int32(role)
		}
	}
	return m
}

// GetMemberships reads q's user's membership in each of q's groups (aligned with them) and,
// in the same round trip, the states that states ask for (as GetStatesMany without heads; an
// empty States when states is empty). The round trip may be shared with other requests' reads
// (coalescedReads). A failed read is an error, never a miss.
func (c *Cache) GetMemberships(ctx context.Context, q MembershipQuery, states []StateQuery) ([]Membership, States, error) {
	var cmds commands
	gets := make([]*redis.StringSliceCmd, len(q.GroupIDs))
	for i, g := range q.GroupIDs {
		gets[i] = queueStrings(ctx, &cmds, "hmget", c.membershipKey(g), []string{membershipVersion, q.UserID})
	}
	var read *statesRead
	if len(states) > 0 {
		read = c.queueStateReads(ctx, &cmds, states)
	}
	if err := c.reads.do(ctx, c.rdb, cmds); err != nil {
		return nil, States{}, cacheError("get memberships", err)
	}
	out := make([]Membership, len(q.GroupIDs))
	for i, get := range gets {
		vals, err := get.Result()
		if err != nil {
			return nil, States{}, cacheError("get memberships", err)
		}
		if len(vals) == 2 {
			out[i] = parseMembership(vals[1], vals[0])
		}
	}
	if read == nil {
		return out, States{}, nil
	}
	st, err := read.result()
	return out, st, err
}

// MembershipFill is one membership read from MongoDB after GetMemberships missed it.
type MembershipFill struct {
	GroupID string
	Version string // as GetMemberships returned it
	Member  bool
	Role    int32
}

// fillMembership caches one user's membership (ARGV[3]: user, ARGV[4]: value) only while the
// group's version is the one the reader saw (ARGV[1], empty for none) and the field is empty. A
// hash the fill creates expires after ARGV[2] ms; an existing one keeps its expiry.
var fillMembership = redis.NewScript(`
local v = redis.call('HGET', KEYS[1], '')
if not ((v == false and ARGV[1] == '') or v == ARGV[1]) then
  return 0
end
if redis.call('HSETNX', KEYS[1], ARGV[3], ARGV[4]) == 1 and redis.call('PTTL', KEYS[1]) < 0 then
  redis.call('PEXPIRE', KEYS[1], ARGV[2])
end
return 1`)

// FillMemberships caches userID's memberships read from MongoDB, in one round trip, each
// unless its group's version moved since GetMemberships (a change came meanwhile).
func (c *Cache) FillMemberships(ctx context.Context, userID string, fills []MembershipFill) error {
	if len(fills) == 0 {
		return nil
	}
	pipe := c.rdb.Pipeline()
	for _, f := range fills {
		value := membershipNone
		if f.Member {
			value = strconv.FormatInt(int64(f.Role), 10)
		}
		fillMembership.Eval(ctx, pipe, []string{c.membershipKey(f.GroupID)}, f.Version, ms(c.opts.StateTTL), userID, value)
	}
	_, err := pipe.Exec(ctx)
	return cacheError("fill memberships", err)
}

// changeMemberships moves the group's version (starting from the random ARGV[2] when there is
// none) and holds (ARGV[3] = the held marker) or releases (ARGV[3] = ”) the users ARGV[4..]:
// held fields read as "ask MongoDB" and take no fill; released ones are dropped. Then the hash
// expires ARGV[1] ms later.
var changeMemberships = redis.NewScript(`
if redis.call('HEXISTS', KEYS[1], '') == 0 then
  redis.call('HSET', KEYS[1], '', ARGV[2])
end
redis.call('HINCRBY', KEYS[1], '', 1)
if ARGV[3] == '' then
  for i = 4, #ARGV, 500 do
    redis.call('HDEL', KEYS[1], unpack(ARGV, i, math.min(i + 499, #ARGV)))
  end
else
  for i = 4, #ARGV do
    redis.call('HSET', KEYS[1], ARGV[i], ARGV[3])
  end
end
redis.call('PEXPIRE', KEYS[1], ARGV[1])
return 1`)

// HoldMemberships marks the users' memberships in the group as being changed, in one round
// trip: until ReleaseMemberships, every instance reads them from MongoDB and caches none of
// what it reads. A writer calls it before it writes the group's members in MongoDB, and
// fails its change when it fails.
func (c *Cache) HoldMemberships(ctx context.Context, groupID string, userIDs []string) error {
	return c.changeMemberships(ctx, groupID, membershipHeld, userIDs)
}

// ReleaseMemberships ends HoldMemberships once MongoDB has the change, in one round trip: the
// users' cached memberships are dropped and the group's version moves, so the next read of
// each takes MongoDB's, and no fill read before the change is kept. It must be called before
// the change is acknowledged.
func (c *Cache) ReleaseMemberships(ctx context.Context, groupID string, userIDs []string) error {
	return c.changeMemberships(ctx, groupID, "", userIDs)
}

func (c *Cache) changeMemberships(ctx context.Context, groupID, marker string, userIDs []string) error {
	if len(userIDs) == 0 {
		return nil
	}
	args := make([]any, 0, len(userIDs)+3)
	args = append(args, ms(c.opts.StateTTL), randomVersion(), marker)
	for _, u := range userIDs {
		args = append(args, u)
	}
	err := changeMemberships.Run(ctx, c.rdb, []string{c.membershipKey(groupID)}, args...).Err()
	return cacheError("change memberships", err)
}
