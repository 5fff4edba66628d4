package cache

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/msggate/msggate/internal/im"
)

// A user's event log lives in three keys that share the user's hash tag, so one script sees
// them all on a Redis Cluster:
//
//	{u:U}:log     hash: epoch, pos (last position), and per conversation the newest max seq
//	              ("<conv>|x") and conversation min seq ("<conv>|m") the log has seen
//	{u:U}:events  list of JSON events, oldest first; the last one has position pos
//	{u:U}:readstate  the read-state hash the seq cache already keeps (read_state.go)
//
// Counters travel inside events (unread after a new message, after a read). They are computed
// by the append script from the values in the user's slot, raised by what the caller knows, so
// in log order each event's counters reflect every earlier event: a device that applies events
// in order always ends with the counters of the last one.

// openLog starts both log scripts: it reads the log's epoch into epoch, creating the log with
// the epoch in ARGV[1] when it does not exist. A new log starts with no events: any left from
// a lost one (the head evicted before its list) would carry the old epoch.
//
// Every key of a log expires: the head and the list live EventLogMaxAge after the last append
// (by then every event in the list is older than the log keeps), and a read refreshes the
// head, so a device that keeps syncing keeps its token valid while nothing happens. A head
// that expired anyway starts a new epoch: every older token then answers tooLong.
const openLog = `
local epoch = redis.call('HGET', KEYS[1], 'epoch')
local created = false
if not epoch then
  epoch = ARGV[1]
  created = true
  redis.call('HSET', KEYS[1], 'epoch', epoch, 'pos', 0)
  redis.call('DEL', KEYS[2])
end`

// logTail ends both append scripts: the pushed events go to the list, and the log, its list and
// its keys are kept to their age and length. KEYS[1] is the log, KEYS[2] its list, KEYS[3] its
// keys; ARGV[2] the max length, ARGV[3] the oldest time kept, ARGV[6] the log's TTL.
const logTail = `
for i = 1, #pushed, 500 do
  redis.call('RPUSH', KEYS[2], unpack(pushed, i, math.min(i + 499, #pushed)))
end
redis.call('PEXPIRE', KEYS[1], ARGV[6])
redis.call('PEXPIRE', KEYS[2], ARGV[6])
if redis.call('EXISTS', KEYS[3]) == 1 then
  -- Keys are kept as long as the events they name: by age and by count.
  redis.call('ZREMRANGEBYSCORE', KEYS[3], '-inf', '(' .. ARGV[3])
  local extra = redis.call('ZCARD', KEYS[3]) - tonumber(ARGV[2])
  if extra > 0 then
    redis.call('ZREMRANGEBYRANK', KEYS[3], 0, extra - 1)
  end
  redis.call('PEXPIRE', KEYS[3], ARGV[6])
end
local maxLen = tonumber(ARGV[2])
if redis.call('LLEN', KEYS[2]) > maxLen then
  redis.call('LTRIM', KEYS[2], -maxLen, -1)
end
local oldest = tonumber(ARGV[3])
for _ = 1, 1000 do
  local first = redis.call('LINDEX', KEYS[2], 0)
  if not first then break end
  local t = tonumber(string.match(first, '"t":(%d+)'))
  if t == nil or t >= oldest then break end
  redis.call('LPOP', KEYS[2])
end
`

// appendEvents appends events to one user's log and publishes each.
// KEYS: log, events, keys, read. ARGV: new epoch, max length, oldest time kept (ms), channel
// ("" for none), publish command, log TTL (ms), read-state TTL (ms), now (ms), then 7 values
// per event: JSON body (without position and counters), conversation ID, the known max seq,
// conversation min seq, read seq and user min seq (empty max seq: the event carries no
// counters), and the event's key ("" for none). An event whose key the log has seen is left
// out, and answered as "".
var appendEvents = redis.NewScript(openLog + readStateLua + `
if created then
  redis.call('DEL', KEYS[3])
end
-- Hash fields are read once and written once per call, however many events touch them.
local values, dirty = {}, {}
local function get(key, field)
  local k = key .. '\0' .. field
  if values[k] == nil then
    values[k] = tonumber(redis.call('HGET', key, field) or '0') or 0
  end
  return values[k]
end
local function raise(key, field, v)
  local cur = get(key, field)
  v = tonumber(v)
  if v ~= nil and v > cur then
    local k = key .. '\0' .. field
    values[k] = v
    dirty[k] = {key, field}
    return v
  end
  return cur
end
-- The read state of each conversation, read once and written once per call too.
local reads, readsMoved = {}, {}
local function raiseRead(conv, r, m)
  local f = reads[conv]
  if f == nil then
    f = readReadState(KEYS[4], conv)
    reads[conv] = f
  end
  local moved = raiseReadField(f, 1, r, false)
  moved = raiseReadField(f, 2, m, false) or moved
  if moved then readsMoved[conv] = true end
  return tonumber(f[1]) or 0, tonumber(f[2]) or 0
end
local pos = tonumber(redis.call('HGET', KEYS[1], 'pos'))
local out, pushed = {}, {}
local now = tonumber(ARGV[8])
for i = 9, #ARGV, 7 do
  local body, conv, key = ARGV[i], ARGV[i+1], ARGV[i+6]
  if key ~= '' and redis.call('ZSCORE', KEYS[3], key) then
    out[#out + 1] = ''
  else
    if key ~= '' then
      redis.call('ZADD', KEYS[3], now, key)
    end
    pos = pos + 1
    local head = '{"e":"' .. epoch .. '","p":' .. string.format('%d', pos)
    if ARGV[i+2] ~= '' then
      local maxSeq = raise(KEYS[1], conv .. '|x', ARGV[i+2])
      local convMin = raise(KEYS[1], conv .. '|m', ARGV[i+3])
      local readSeq, userMin = raiseRead(conv, ARGV[i+4], ARGV[i+5])
      local visibleMin = math.max(1, convMin, userMin)
      local seen = math.max(readSeq, visibleMin - 1)
      local unread = maxSeq - seen
      if unread < 0 then unread = 0 end
      head = head .. ',"x":' .. string.format('%d', maxSeq) .. ',"m":' .. string.format('%d', visibleMin) ..
        ',"r":' .. string.format('%d', readSeq) .. ',"n":' .. string.format('%d', unread)
    end
    local ev = head .. ',' .. string.sub(body, 2)
    if ARGV[4] ~= '' then
      redis.call(ARGV[5], ARGV[4], ev)
    end
    out[#out + 1] = ev
    pushed[#pushed + 1] = ev
  end
end
redis.call('HSET', KEYS[1], 'pos', string.format('%d', pos))
for k, d in pairs(dirty) do
  redis.call('HSET', d[1], d[2], string.format('%d', values[k]))
end
for conv in pairs(readsMoved) do
  writeReadState(KEYS[4], conv, reads[conv])
end
if redis.call('EXISTS', KEYS[4]) == 1 then
  redis.call('PEXPIRE', KEYS[4], ARGV[7])
end
` + logTail + `
return out`)

// readEvents reads one log (a user's or a group's) after a position.
// KEYS: log, events. ARGV: new epoch (used when the log does not exist), the token's epoch ("":
// only the head is wanted), the token's position, the page size, the log's TTL (ms).
// Returns {epoch, head position, status, events...}; status is "ok", "too_long" or "future".
var readEvents = redis.NewScript(openLog + `
redis.call('PEXPIRE', KEYS[1], ARGV[5])
local pos = tonumber(redis.call('HGET', KEYS[1], 'pos'))
local res = {epoch, string.format('%d', pos)}
if ARGV[2] == '' then
  res[3] = 'ok'
  return res
end
if ARGV[2] ~= epoch then
  res[3] = 'too_long'
  return res
end
local since = tonumber(ARGV[3])
if since > pos then
  res[3] = 'future'
  return res
end
local n = redis.call('LLEN', KEYS[2])
local first = pos - n + 1
if since < first - 1 then
  res[3] = 'too_long'
  return res
end
res[3] = 'ok'
local from = since - first + 1
local evs = redis.call('LRANGE', KEYS[2], from, from + tonumber(ARGV[4]) - 1)
for i = 1, #evs do
  res[#res + 1] = evs[i]
end
return res`)

// publishCommand is how events are published. Plain PUBLISH reaches subscribers connected to
// any node of a Redis Cluster; SPUBLISH would keep traffic on the user's shard but needs one
// subscriber connection per shard, and miniredis (the embedded default) lacks it.
func (c *Cache) publishCommand() string { return "PUBLISH" }

// EventAppend is one event for one user's log.
type EventAppend struct {
	UserID string
	// Event's Type, Time and payload fields are stored; position, epoch and counters are
	// assigned by the log.
	Event im.Event
	// Counters in effect as far as the caller knows. They are raised into the user's slot (so
	// a stale value never lowers anything) and the event's counters are computed from the
	// result. Used only when Event.Type.Counted().
	MaxSeq, ConvMinSeq, ReadSeq, UserMinSeq int64
	// Key names the change the event announces, when it may be announced more than once (by
	// its writer and by whoever finishes the writer's intent, or by a retried send). The log
	// keeps the keys of the events it holds and leaves out an event whose key it has seen, so
	// no device gets one change twice. Empty: always appended.
	Key string
}

// AppendEvents appends events to their users' logs, in order per user, and publishes each on
// the user's channel. It costs one round trip (per cluster node). The stored events, with
// positions and counters, come back aligned with appends; an event left out because its log
// has its key already comes back as the zero Event (Position 0).
func (c *Cache) AppendEvents(ctx context.Context, appends []EventAppend) ([]im.Event, error) {
	if len(appends) == 0 {
		return nil, nil
	}
	type userBatch struct {
		args    []any
		indexes []int
	}
	var order []string
	batches := map[string]*userBatch{}
	now := time.Now().UnixMilli()
	oldest := now - c.opts.EventLogMaxAge.Milliseconds()
	for i, a := range appends {
		b := batches[a.UserID]
		if b == nil {
			b = &userBatch{args: []any{newEpoch(), c.opts.EventLogMaxLen, oldest, c.EventChannel(a.UserID),
				c.publishCommand(), ms(c.opts.EventLogMaxAge), ms(c.opts.StateTTL), now}}
			batches[a.UserID] = b
			order = append(order, a.UserID)
		}
		body, err := eventBody(a.Event)
		if err != nil {
			return nil, err
		}
		if a.Event.Type.Counted() {
			b.args = append(b.args, body, a.Event.ConversationID, a.MaxSeq, a.ConvMinSeq, a.ReadSeq, a.UserMinSeq, a.Key)
		} else {
			b.args = append(b.args, body, a.Event.ConversationID, "", "", "", "", a.Key)
		}
		b.indexes = append(b.indexes, i)
	}
	pipe := c.rdb.Pipeline()
	cmds := make([]*redis.Cmd, len(order))
	for i, u := range order {
		logKey, eventsKey, readKey := c.eventLogKeys(u)
		cmds[i] = appendEvents.Eval(ctx, pipe, []string{logKey, eventsKey, c.eventKeysKey(u), readKey}, batches[u].args...)
	}
	if _, err := pipe.Exec(ctx); err != nil {
		return nil, cacheError("append events", err)
	}
	out := make([]im.Event, len(appends))
	for i, u := range order {
		if err := decodeAppended(cmds[i], batches[u].indexes, out); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// stripLeading turns `{"e":"","p":0,...}` into `{...}` so the script can prepend the real
// epoch and position.
func stripLeading(body []byte) string {
	const lead = `{"e":"","p":0,`
	s := string(body)
	if len(s) > len(lead) && s[:len(lead)] == lead {
		return "{" + s[len(lead):]
	}
	return s
}

// EventPage is what ReadEvents found.
type EventPage struct {
	// Head is the token of the log's newest event (or of its start when empty).
	Head im.Cursor
	// TooLong: the token's epoch is not the log's, or its position is older than the log
	// keeps. Events is then empty.
	TooLong bool
	// Events after the token, oldest first, at most the page size.
	Events []im.Event
}

// ErrFutureToken is returned by ReadEvents for a token ahead of the log's head.
var ErrFutureToken = im.Errorf(im.EINVALID, "sync token is ahead of the event log")

// ReadEvents reads up to limit events of userID's log after since, in one round trip. A log
// that does not exist is created empty, so its head token is usable at once.
func (c *Cache) ReadEvents(ctx context.Context, userID string, since im.Cursor, limit int) (EventPage, error) {
	cmd := c.readEventsCmd(ctx, c.rdb, userID, &since, limit)
	return parseEventPage(cmd)
}

// EventHead returns the token of userID's newest event, creating the log when needed.
func (c *Cache) EventHead(ctx context.Context, userID string) (im.Cursor, error) {
	p, err := parseEventPage(c.readEventsCmd(ctx, c.rdb, userID, nil, 0))
	return p.Head, err
}

func (c *Cache) readEventsCmd(ctx context.Context, s redis.Scripter, userID string, since *im.Cursor, limit int) *redis.Cmd {
	logKey, eventsKey, _ := c.eventLogKeys(userID)
	return c.readLogCmd(ctx, s, logKey, eventsKey, since, limit)
}

// readLogCmd reads a log, a user's or a group's, after since (nil: only its head).
func (c *Cache) readLogCmd(ctx context.Context, s redis.Scripter, logKey, eventsKey string, since *im.Cursor, limit int) *redis.Cmd {
	epoch, pos := "", int64(0)
	if since != nil {
		epoch, pos = since.Epoch, since.Position
	}
	return readEvents.Eval(ctx, s, []string{logKey, eventsKey}, newEpoch(), epoch, pos, limit, ms(c.opts.EventLogMaxAge))
}

func parseEventPage(cmd *redis.Cmd) (EventPage, error) {
	raw, err := cmd.StringSlice()
	if err != nil {
		return EventPage{}, cacheError("read events", err)
	}
	if len(raw) < 3 {
		return EventPage{}, im.Errorf(im.EINTERNAL, "event log answered %d values", len(raw))
	}
	head, err := strconv.ParseInt(raw[1], 10, 64)
	if err != nil {
		return EventPage{}, im.Errorf(im.EINTERNAL, "event log position %q", raw[1])
	}
	p := EventPage{Head: im.Cursor{Epoch: raw[0], Position: head}}
	switch raw[2] {
	case "ok":
	case "too_long":
		p.TooLong = true
		return p, nil
	case "future":
		return p, ErrFutureToken
	default:
		return p, im.Errorf(im.EINTERNAL, "event log status %q", raw[2])
	}
	p.Events = make([]im.Event, len(raw)-3)
	for i, s := range raw[3:] {
		if err := json.Unmarshal([]byte(s), &p.Events[i]); err != nil {
			return EventPage{}, fmt.Errorf("decode event: %w", err)
		}
	}
	return p, nil
}

// newEpoch names a log that is being created. 64 random bits: two logs of one user never share
// an epoch, so a token from a lost log is always recognised.
func newEpoch() string {
	b := make([]byte, 8)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}
