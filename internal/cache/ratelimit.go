package cache

import (
	"context"
	"errors"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/msggate/msggate/internal/im"
)

// takeToken is a token bucket kept in one hash {tokens, at}. It refills lazily from the time
// of the previous call, on Redis's clock rather than the callers', so that gateway instances
// whose clocks disagree still share one consistent bucket. It answers 0 when a token was
// taken, else the milliseconds until one will be there.
//
// Numbers go back to Redis through string.format: Redis and miniredis's Lua turn a bare
// number into text differently, and "1.7e+12" is not an integer to PEXPIRE.
var takeToken = redis.NewScript(`
local perSec, burst = tonumber(ARGV[1]), tonumber(ARGV[2])
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local state = redis.call('HMGET', KEYS[1], 'tokens', 'at')
local tokens, at = tonumber(state[1]), tonumber(state[2])
if tokens == nil or at == nil then
  tokens, at = burst, now
elseif now > at then
  tokens = math.min(burst, tokens + (now - at) * perSec / 1000)
  at = now
end
local wait = 0
if tokens >= 1 then
  tokens = tokens - 1
else
  wait = math.ceil((1 - tokens) * 1000 / perSec)
end
redis.call('HSET', KEYS[1], 'tokens', string.format('%.6f', tokens), 'at', string.format('%d', at))
redis.call('PEXPIRE', KEYS[1], string.format('%d', math.ceil(burst * 1000 / perSec) + 1000))
return wait`)

// TakeToken takes one token from userID's bucket, which holds at most burst tokens and gains
// perSecond tokens a second. When the bucket is empty it answers false and how long until it
// holds a token again. The bucket lives in Redis under <prefix>{u:<userID>}:rate, so every
// gateway instance draws from the same one; it expires once it would be full again.
func (c *Cache) TakeToken(ctx context.Context, userID string, perSecond float64, burst int) (bool, time.Duration, error) {
	return c.take(ctx, c.rateKey(userID), perSecond, burst)
}

// TakeAddressToken is TakeToken for the bucket of a client address, kept under
// <prefix>{a:<address>}:rate (requests without a valid token).
func (c *Cache) TakeAddressToken(ctx context.Context, address string, perSecond float64, burst int) (bool, time.Duration, error) {
	return c.take(ctx, c.addressRateKey(address), perSecond, burst)
}

func (c *Cache) take(ctx context.Context, key string, perSecond float64, burst int) (bool, time.Duration, error) {
	if !(perSecond > 0) || burst < 1 {
		return false, 0, im.Errorf(im.EINTERNAL, "a token bucket needs a positive rate and burst, got %v and %d", perSecond, burst)
	}
	wait, err := takeToken.Run(ctx, c.rdb, []string{key}, perSecond, burst).Int64()
	if err != nil {
		return false, 0, cacheError("take a rate-limit token", err)
	}
	if wait < 0 {
		return false, 0, cacheError("take a rate-limit token", errors.New("unexpected script answer"))
	}
	return wait == 0, time.Duration(wait) * time.Millisecond, nil
}
