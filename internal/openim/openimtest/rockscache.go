package openimtest

import (
	"context"
	"time"
)

// rockscache (github.com/dtm-labs/rockscache v0.1.1, client.go) keeps a value as a hash with
// the field "value" beside "lockUntil" and "lockOwner".

// rocksRawSet is rockscache RawSet: HSET value, then EXPIRE; any lock fields stay.
func (d *Deployment) rocksRawSet(ctx context.Context, key, value string, ttl time.Duration) {
	d.t.Helper()
	d.check(d.Redis.HSet(ctx, key, "value", value).Err(), "rockscache RawSet "+key)
	d.check(d.Redis.Expire(ctx, key, ttl).Err(), "rockscache RawSet expire "+key)
}

// rocksFill is what a rockscache Fetch leaves after reading the source: luaGet locked the key
// (lockUntil, lockOwner), luaSet stores the value, drops both lock fields and sets the TTL
// (the expire minus rockscache's Delay).
func (d *Deployment) rocksFill(key, value string, ttl time.Duration) {
	d.t.Helper()
	ctx := context.Background()
	d.check(d.Redis.HSet(ctx, key, "lockUntil", time.Now().Unix()+int64(rocksLockTime/time.Second), "lockOwner", randomID()).Err(), "rockscache lock "+key)
	d.check(d.Redis.HSet(ctx, key, "value", value).Err(), "rockscache set "+key)
	d.check(d.Redis.HDel(ctx, key, "lockUntil", "lockOwner").Err(), "rockscache unlock "+key)
	d.check(d.Redis.Expire(ctx, key, ttl-rocksDelay).Err(), "rockscache expire "+key)
}

// TagAsDeleted is rockscache TagAsDeleted, OpenIM's cache delete: lockUntil 0, no owner, and
// the key expires after rockscache's Delay (10 s). The value stays until then.
func (d *Deployment) TagAsDeleted(key string) {
	d.t.Helper()
	ctx := context.Background()
	d.check(d.Redis.HSet(ctx, key, "lockUntil", 0).Err(), "rockscache tag "+key)
	d.check(d.Redis.HDel(ctx, key, "lockOwner").Err(), "rockscache tag "+key)
	d.check(d.Redis.Expire(ctx, key, rocksDelay).Err(), "rockscache tag expire "+key)
}

// LockForFill is a reader in the middle of a rockscache Fetch of key: the key is locked until
// the reader stores what it read (lockUntil in the future, lockOwner set).
func (d *Deployment) LockForFill(key string) {
	d.t.Helper()
	d.check(d.Redis.HSet(context.Background(), key, "lockUntil", time.Now().Unix()+int64(rocksLockTime/time.Second), "lockOwner", randomID()).Err(), "rockscache lock "+key)
}

// MsgCacheKey is OpenIM's message cache key, MSG_CACHE:<conversationID>:<seq>.
func MsgCacheKey(conversationID string, seq int64) string { return msgCacheKey(conversationID, seq) }

// CacheMiss is what a rockscache Fetch leaves when the source had nothing: an empty value,
// kept for rockscache's EmptyExpire (60 s), e.g. a reader asked OpenIM for a seq MongoDB has no
// message at.
func (d *Deployment) CacheMiss(key string) {
	d.t.Helper()
	d.rocksFill(key, "", 60*time.Second+rocksDelay)
}
