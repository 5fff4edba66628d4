package cache

import (
	"context"
	"time"

	"github.com/redis/go-redis/v9"
)

// PersistedQueries keeps the query texts of automatic persisted queries (the Apollo APQ
// protocol) under <prefix>apq:<sha256 hex>, so that a query registered through one gateway
// instance is known to all of them, and counts what each user registered under
// <prefix>{u:<userID>}:apq, so that no user can fill Redis with them.
//
// Looking a query up never fails a request: a Redis error reads as a miss. The protocol
// recovers from it, as the client then sends the full query again.
type PersistedQueries struct {
	c   *Cache
	ttl time.Duration
}

// DefaultPersistedQueryTTL is how long a persisted query is kept after it was registered, and
// the window a user's registrations are counted over.
const DefaultPersistedQueryTTL = 24 * time.Hour

// PersistedQueries returns the persisted-query store; a query is kept for ttl after it was
// registered (0: DefaultPersistedQueryTTL). Clients register a query again when it has
// expired.
func (c *Cache) PersistedQueries(ttl time.Duration) *PersistedQueries {
	if ttl <= 0 {
		ttl = DefaultPersistedQueryTTL
	}
	return &PersistedQueries{c: c, ttl: ttl}
}

// Get returns the query registered under hash.
func (p *PersistedQueries) Get(ctx context.Context, hash string) (string, bool) {
	if !isSHA256Hex(hash) {
		// Only the hash of a query is ever stored; anything else is a miss without asking.
		return "", false
	}
	query, err := p.c.rdb.Get(ctx, p.key(hash)).Result()
	if err != nil {
		return "", false
	}
	return query, true
}

// chargeRegistration counts one registration of ARGV[1] bytes in a user's window (KEYS[1],
// hash {n, b}) unless it would take the window past ARGV[2] queries or ARGV[3] bytes (a
// negative bound: none). The window starts with its first registration and lasts ARGV[4]
// ms. It answers 1 when the registration was counted, 0 when it is over a bound (and nothing
// changed).
var chargeRegistration = redis.NewScript(`
local size, maxN, maxB = tonumber(ARGV[1]), tonumber(ARGV[2]), tonumber(ARGV[3])
local state = redis.call('HMGET', KEYS[1], 'n', 'b')
local n, b = tonumber(state[1]) or 0, tonumber(state[2]) or 0
if (maxN >= 0 and n + 1 > maxN) or (maxB >= 0 and b + size > maxB) then
  return 0
end
redis.call('HINCRBY', KEYS[1], 'n', 1)
redis.call('HINCRBY', KEYS[1], 'b', size)
if redis.call('PTTL', KEYS[1]) < 0 then
  redis.call('PEXPIRE', KEYS[1], ARGV[4])
end
return 1`)

// Register keeps query under hash, its SHA-256 (which the caller has checked), on userID's
// account: unless what userID registered in the current window (the store's TTL, from the
// user's first registration in it) would then pass maxQueries queries or maxBytes bytes of
// query text; a negative bound is none. It answers whether the query is kept.
//
// It costs one round trip: the charge and the store go out together. A registration over a
// bound was stored all the same, if the hash was new, and is taken back with a second round
// trip, which only a user over a bound causes. A query already kept under hash is left as it
// is (it is the same text), and its registration still counts.
func (p *PersistedQueries) Register(ctx context.Context, userID, hash, query string, maxQueries int, maxBytes int64) (bool, error) {
	if !isSHA256Hex(hash) {
		return false, nil
	}
	pipe := p.c.rdb.Pipeline()
	charged := chargeRegistration.Eval(ctx, pipe, []string{p.registrationsKey(userID)}, len(query), maxQueries, maxBytes, ms(p.ttl))
	stored := pipe.SetNX(ctx, p.key(hash), query, p.ttl)
	if _, err := pipe.Exec(ctx); err != nil {
		// Whichever of the two failed, the other may have happened: a stored query is
		// taken back when the charge is unknown.
		if stored.Err() == nil && stored.Val() && charged.Err() != nil {
			_ = p.c.rdb.Del(ctx, p.key(hash)).Err()
		}
		return false, cacheError("register a persisted query", err)
	}
	if ok, _ := charged.Int(); ok == 1 {
		return true, nil
	}
	if stored.Val() {
		if err := p.c.rdb.Del(ctx, p.key(hash)).Err(); err != nil {
			return false, cacheError("take back a persisted query over its user's bound", err)
		}
	}
	return false, nil
}

// isSHA256Hex reports whether s is a SHA-256 in lowercase hex, as APQ clients send it.
func isSHA256Hex(s string) bool {
	if len(s) != 64 {
		return false
	}
	for i := 0; i < len(s); i++ {
		if !('0' <= s[i] && s[i] <= '9' || 'a' <= s[i] && s[i] <= 'f') {
			return false
		}
	}
	return true
}
