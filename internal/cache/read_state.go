package cache

import (
	"strconv"
	"strings"

	"github.com/redis/go-redis/v9"
)

// A user's read state is one hash per user, {u:U}:readstate, with a field per conversation
// holding "read,min" (the read seq and the user's min seq there), so that a page of N
// conversations reads N fields of one HMGET rather than 2N. As with the seq state, a field may
// be empty (not known yet), and an entry is cached only when both are set.

// parseReadState reads one stored read state; anything else ("" for none) is a miss.
func parseReadState(value string) UserState {
	read, minSeq, ok := strings.Cut(value, ",")
	if !ok {
		return UserState{}
	}
	r, err1 := strconv.ParseInt(read, 10, 64)
	m, err2 := strconv.ParseInt(minSeq, 10, 64)
	if err1 != nil || err2 != nil {
		return UserState{}
	}
	return UserState{ReadSeq: r, UserMinSeq: m, Cached: true}
}

// readStateLua defines the scripts' access to read states: readReadState returns a
// conversation's two fields ("" when unknown), raiseReadField raises one of them to a value
// given as a string ("" or nil: left alone) and tells whether it moved, writeReadState stores
// them. An unknown field takes any value from a fill (fillEmpty: the value is MongoDB's), but
// only a positive one from the event log, whose callers pass 0 for "not known": a 0 stored
// there would read as a cached "nothing read".
const readStateLua = `
local function readReadState(key, conv)
  local v = redis.call('HGET', key, conv)
  if v then
    local r, m = string.match(v, '^([^,]*),([^,]*)$')
    if r then return {r, m} end
  end
  return {'', ''}
end
local function raiseReadField(f, i, v, fillEmpty)
  local n = tonumber(v)
  if n == nil then return false end
  local cur = tonumber(f[i])
  if (cur == nil and (fillEmpty or n > 0)) or (cur ~= nil and cur < n) then
    f[i] = v
    return true
  end
  return false
end
local function writeReadState(key, conv, f)
  redis.call('HSET', key, conv, f[1] .. ',' .. f[2])
end
`

// raiseReadState raises read states in one user's hash: ARGV[1] the TTL, then triples of a
// conversation, a read seq and a user min seq ("" leaves that one alone).
var raiseReadState = redis.NewScript(readStateLua + `
for i = 2, #ARGV, 3 do
  local f = readReadState(KEYS[1], ARGV[i])
  local moved = raiseReadField(f, 1, ARGV[i+1], true)
  moved = raiseReadField(f, 2, ARGV[i+2], true) or moved
  if moved then writeReadState(KEYS[1], ARGV[i], f) end
end
redis.call('PEXPIRE', KEYS[1], ARGV[1])
return 1`)
