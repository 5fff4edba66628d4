package cache

import (
	"context"
	"time"
)

// PersistedQueries keeps the query texts of automatic persisted queries (the Apollo APQ
// protocol) under <prefix>apq:<sha256 hex>, so that a query registered through one gateway
// instance is known to all of them. It has the method set of gqlgen's graphql.Cache[string].
//
// It never fails a request: a Redis error reads as a miss and a failed store is dropped. The
// protocol recovers from both, as the client then sends the full query again.
type PersistedQueries struct {
	c   *Cache
	ttl time.Duration
}

// DefaultPersistedQueryTTL is how long a persisted query is kept after it was registered.
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

// Add registers query under hash. The caller has checked that hash is the query's SHA-256.
func (p *PersistedQueries) Add(ctx context.Context, hash, query string) {
	if !isSHA256Hex(hash) {
		return
	}
	_ = p.c.rdb.Set(ctx, p.key(hash), query, p.ttl).Err()
}

func (p *PersistedQueries) key(hash string) string {
	return p.c.opts.Prefix + "apq:" + hash
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
