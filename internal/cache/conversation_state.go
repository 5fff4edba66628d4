package cache

import (
	"strconv"
	"strings"

	"github.com/redis/go-redis/v9"
)

// A conversation's seq state is one string, "max,min,time,cv" (stored max seq, min seq, newest
// send time, chunks version), rather than a hash: a page that shows many conversations reads
// all their states with one MGET, where a hash per conversation cost one command each. A field
// may be empty (not known yet); an entry is cached only when max, min and time all are.
//
// The scripts that change it read and write the whole string, so a change is atomic as a hash
// field's was. Lua numbers are doubles: seqs and millisecond times stay far below 2^53, where
// they are exact.

// parseSeqState reads a stored seq state; anything else (a miss, a half-filled entry) is a miss.
func parseSeqState(value string) ConversationState {
	maxSeq, rest, _ := strings.Cut(value, ",")
	minSeq, rest, _ := strings.Cut(rest, ",")
	lastTime, version, ok := strings.Cut(rest, ",")
	if !ok {
		return ConversationState{}
	}
	var st ConversationState
	var err1, err2, err3 error
	st.MaxSeq, err1 = strconv.ParseInt(maxSeq, 10, 64)
	st.MinSeq, err2 = strconv.ParseInt(minSeq, 10, 64)
	st.LastTime, err3 = strconv.ParseInt(lastTime, 10, 64)
	if err1 != nil || err2 != nil || err3 != nil {
		return ConversationState{}
	}
	st.ChunksVersion, st.Cached = version, true
	return st
}

// seqStateLua defines the scripts' access to a seq state: readSeqState returns its four fields
// ("" when unknown), writeSeqState stores them with a TTL in milliseconds.
const seqStateLua = `
local function readSeqState(key)
  local f = {'', '', '', ''}
  local cur = redis.call('GET', key)
  if cur then
    local i = 1
    for v in string.gmatch(cur .. ',', '([^,]*),') do
      if i <= 4 then f[i] = v end
      i = i + 1
    end
  end
  return f
end
local function writeSeqState(key, f, ttl)
  redis.call('SET', key, f[1] .. ',' .. f[2] .. ',' .. f[3] .. ',' .. f[4], 'PX', ttl)
end
`

// Positions of a seq state's fields, as raiseSeqState takes them.
const (
	seqStateMax  = 1
	seqStateMin  = 2
	seqStateTime = 3
)

// raiseSeqState raises a conversation's seq state: ARGV[1] the TTL, ARGV[2] a chunks version
// to take when the state has none (see randomVersion), then pairs of a field's position and
// a value, each set unless the field already holds a larger one.
var raiseSeqState = redis.NewScript(seqStateLua + `
local f = readSeqState(KEYS[1])
if f[4] == '' then f[4] = ARGV[2] end
for i = 3, #ARGV, 2 do
  local at = tonumber(ARGV[i])
  if f[at] == '' or tonumber(f[at]) < tonumber(ARGV[i+1]) then f[at] = ARGV[i+1] end
end
writeSeqState(KEYS[1], f, ARGV[1])
return 1`)
