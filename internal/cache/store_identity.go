package cache

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"
)

// Redis's record of the store it describes (see chunkstore.StoreIdentity for why it is a
// token and a clock), the discard of what it holds of another store, and the hold that keeps
// that state from being served until the record has been checked against the store.
//
//	<prefix>storeid           hash {token, clock, stamp}: the store's identity as last recorded; never expires
//	<prefix>storeid:discard   string: the token of the instance discarding the state (discardLockTTL)

// StoreIdentity is a value of the store's identity as Redis records it.
type StoreIdentity struct {
	Token string
	Clock int64
	Stamp string
}

var recordStoreIdentity = redis.NewScript(`
local t = redis.call('HGET', KEYS[1], 'token')
if ARGV[1] ~= '' and (t == false or t == ARGV[1]) then
  local c = redis.call('HGET', KEYS[1], 'clock')
  if t == false or tonumber(c) < tonumber(ARGV[2]) then
    redis.call('HSET', KEYS[1], 'token', ARGV[1], 'clock', ARGV[2], 'stamp', ARGV[3])
  end
end
return redis.call('HMGET', KEYS[1], 'token', 'clock', 'stamp')`)

// RecordStoreIdentity records id, a value the store held, and returns what Redis records
// afterwards, in one round trip. Redis keeps the later of its record and id, and keeps its
// record when it names another token or the same clock with another stamp: the next check
// then finds the store is not at or past it. A zero id only reads the record; a Redis that
// records none answers a zero StoreIdentity.
func (c *Cache) RecordStoreIdentity(ctx context.Context, id StoreIdentity) (StoreIdentity, error) {
	res, err := recordStoreIdentity.Run(ctx, c.rdb, []string{c.storeIDKey()}, id.Token, id.Clock, id.Stamp).Slice()
	if err != nil {
		return StoreIdentity{}, cacheError("record the store identity", err)
	}
	if len(res) != 3 || res[0] == nil {
		return StoreIdentity{}, nil
	}
	token, _ := res[0].(string)
	clock, _ := res[1].(string)
	stamp, _ := res[2].(string)
	n, err := strconv.ParseInt(clock, 10, 64)
	if err != nil {
		return StoreIdentity{}, cacheError("record the store identity", errors.New("malformed clock "+clock))
	}
	return StoreIdentity{Token: token, Clock: n, Stamp: stamp}, nil
}

// discardLockTTL bounds how long a discard holds its lock without renewing it; it renews it
// after every batch of keys.
const discardLockTTL = 30 * time.Second

var releaseDiscardLock = redis.NewScript(`
if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('DEL', KEYS[1]) end
return 0`)

// DiscardStoreState deletes every key of this Cache's prefix that describes a store (StoreState:
// chunks, seq and read state, allocators, conversation lists, event logs and their keys), on
// every master of a cluster, and then records id, the identity of the store Redis is to
// describe from now on. Keys that describe no store (rate buckets, persisted queries, live
// instances, OpenIM mode's follower) and every key outside the prefix are left alone. One
// instance does it at a time: when another holds the lock, it reports false at once, and
// the caller checks again later. What was deleted is rebuilt from the store on demand, as
// after a FLUSHALL.
func (c *Cache) DiscardStoreState(ctx context.Context, id StoreIdentity) (discarded bool, deleted int, err error) {
	ctx = context.WithValue(ctx, storeStateWork{}, true)
	b := make([]byte, 12)
	_, _ = rand.Read(b)
	lock := hex.EncodeToString(b)
	ok, err := c.rdb.SetNX(ctx, c.discardLockKey(), lock, discardLockTTL).Result()
	if err != nil {
		return false, 0, cacheError("lock the store state discard", err)
	}
	if !ok {
		return false, 0, nil
	}
	defer func() {
		_ = releaseDiscardLock.Run(context.WithoutCancel(ctx), c.rdb, []string{c.discardLockKey()}, lock).Err()
	}()
	var mu sync.Mutex
	discard := func(ctx context.Context, node redis.UniversalClient) error {
		iter := node.Scan(ctx, 0, globEscape(c.opts.Prefix)+"*", 1000).Iterator()
		var batch []string
		flush := func() error {
			if len(batch) == 0 {
				return nil
			}
			// One UNLINK per key: on a cluster node, the keys of one command must share a slot.
			pipe := node.Pipeline()
			for _, k := range batch {
				pipe.Unlink(ctx, k)
			}
			if _, err := pipe.Exec(ctx); err != nil {
				return err
			}
			mu.Lock()
			deleted += len(batch)
			mu.Unlock()
			batch = batch[:0]
			return c.rdb.PExpire(ctx, c.discardLockKey(), discardLockTTL).Err()
		}
		for iter.Next(ctx) {
			if c.StoreState(iter.Val()) {
				batch = append(batch, iter.Val())
			}
			if len(batch) == 500 {
				if err := flush(); err != nil {
					return err
				}
			}
		}
		if err := iter.Err(); err != nil {
			return err
		}
		return flush()
	}
	if cc, ok := c.rdb.(*redis.ClusterClient); ok {
		err = cc.ForEachMaster(ctx, func(ctx context.Context, node *redis.Client) error { return discard(ctx, node) })
	} else {
		err = discard(ctx, c.rdb)
	}
	if err != nil {
		return false, deleted, cacheError("discard the state of another store", err)
	}
	err = c.rdb.HSet(ctx, c.storeIDKey(), "token", id.Token, "clock", id.Clock, "stamp", id.Stamp).Err()
	if err != nil {
		return false, deleted, cacheError("record the store identity", err)
	}
	return true, deleted, nil
}

// globEscape makes s match itself in a SCAN pattern.
func globEscape(s string) string {
	var b strings.Builder
	for _, r := range s {
		switch r {
		case '*', '?', '[', ']', '\\':
			b.WriteByte('\\')
		}
		b.WriteRune(r)
	}
	return b.String()
}

// The hold: until an instance has checked Redis's record against the store (at start, and
// while it discards another store's state), what Redis holds of a store must not be served.
// Commands on such keys (StoreState) then wait for the check or fail as if Redis were down:
// readers go to MongoDB, writers answer UNAVAILABLE. Every other command passes. go-redis's
// autopipeliner sends shared reads without a deadline: they wait for a check at start, which
// follows the store's preparation at once, and fail at once while the state is refused.

// ErrStoreStateHeld is why a command on the store's state was refused: Redis is not yet known
// to describe the store.
var ErrStoreStateHeld = errors.New("redis is not yet known to describe this store (its record is being checked, or another store's state discarded)")

type holdState int

const (
	serving  holdState = iota
	checking           // commands wait for the check
	refusing           // commands fail at once
)

// storeHold is the hold's state; changed is closed (and replaced) at every change. held
// mirrors state != serving, read without the lock by every command.
type storeHold struct {
	held    atomic.Bool
	mu      sync.Mutex
	state   holdState
	changed chan struct{}
}

// storeStateWork marks the context of the discard itself, which the hold lets through.
type storeStateWork struct{}

// HoldStoreState keeps the store's state from being served until ServeStoreState: commands
// on it wait for ServeStoreState (up to holdWait when they have a deadline), or with refuse,
// fail at once.
func (c *Cache) HoldStoreState(refuse bool) {
	s := checking
	if refuse {
		s = refusing
	}
	c.setHold(s)
}

// ServeStoreState ends the hold: Redis describes the store.
func (c *Cache) ServeStoreState() { c.setHold(serving) }

func (c *Cache) setHold(s holdState) {
	h := &c.hold
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.state == s {
		return
	}
	h.state = s
	h.held.Store(s != serving)
	if h.changed != nil {
		close(h.changed)
	}
	h.changed = make(chan struct{})
}

// admit lets a command on keys through the hold, waits for it, or refuses it.
func (h *storeHold) admit(ctx context.Context, c *Cache, keys func(yield func(string) bool)) error {
	if !h.held.Load() || ctx.Value(storeStateWork{}) != nil {
		return nil
	}
	store := false
	for k := range keys {
		if c.StoreState(k) {
			store = true
			break
		}
	}
	if !store {
		return nil
	}
	var timeout <-chan time.Time
	if _, ok := ctx.Deadline(); ok {
		t := time.NewTimer(holdWait)
		defer t.Stop()
		timeout = t.C
	}
	for {
		h.mu.Lock()
		state, changed := h.state, h.changed
		h.mu.Unlock()
		switch state {
		case serving:
			return nil
		case refusing:
			return ErrStoreStateHeld
		}
		select {
		case <-changed:
		case <-timeout:
			return ErrStoreStateHeld
		case <-ctx.Done():
			return errors.Join(ErrStoreStateHeld, context.Cause(ctx))
		}
	}
}

// holdWait bounds how long a command with a deadline (a request's) waits for the check, as
// the store's own operations wait for the store to be prepared; one without (background
// work, the demo data) waits for as long as it takes.
const holdWait = time.Second

// holdHook puts every round trip through the hold. It runs before the others: a refused
// command was never made, and one that waits holds no admission slot.
type holdHook struct{ c *Cache }

func (holdHook) DialHook(next redis.DialHook) redis.DialHook { return next }

func (h holdHook) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		if err := h.c.hold.admit(ctx, h.c, keysOf(cmd)); err != nil {
			cmd.SetErr(err)
			return err
		}
		return next(ctx, cmd)
	}
}

func (h holdHook) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		keys := func(yield func(string) bool) {
			for _, cmd := range cmds {
				for k := range keysOf(cmd) {
					if !yield(k) {
						return
					}
				}
			}
		}
		if err := h.c.hold.admit(ctx, h.c, keys); err != nil {
			for _, cmd := range cmds {
				cmd.SetErr(err)
			}
			return err
		}
		return next(ctx, cmds)
	}
}

// keysOf yields the arguments of cmd that may be keys: every string argument after the
// command's name (for EVAL and EVALSHA, after the script and the key count). Values that are
// not keys never start with the prefix, but for a value written under a key (which the key
// decides for anyway).
func keysOf(cmd redis.Cmder) func(yield func(string) bool) {
	return func(yield func(string) bool) {
		args := cmd.Args()
		first := 1
		if n := cmd.Name(); n == "evalsha" || n == "eval" {
			first = 3
		}
		for _, a := range args[min(first, len(args)):] {
			if s, ok := a.(string); ok && !yield(s) {
				return
			}
		}
	}
}
