package cache

import (
	"context"
	"encoding/json"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/msggate/msggate/internal/im"
)

// A group conversation's changes (messages, revokes, deletes and clears for everyone) are
// logged once, in the conversation's own stream, and published once on its channel, whatever
// the group's size; every member's devices read them from there. The stream lives in three
// keys that share the conversation's hash tag:
//
//	{<conv>}:log     hash: epoch, pos, and the newest max seq (x) and min seq (m) logged
//	{<conv>}:events  list of JSON events, oldest first
//	{<conv>}:evkeys  the keys of the logged events (EventAppend.Key), scored by append time
//
// Its events carry the conversation's counters (x, m), never a member's: each member's read
// seq and own min seq are added when the event is served to them.

// appendGroupEvents appends events to one group stream and publishes each.
// KEYS: log, events, keys. ARGV: new epoch, max length, oldest time kept (ms), channel,
// publish command, log TTL (ms), now (ms), then 4 values per event: JSON body (without
// position and counters), the known max seq and min seq (empty max seq: the event carries no
// counters), and the event's key ("" for none). An event whose key the stream has seen is left
// out, and answered as "".
var appendGroupEvents = redis.NewScript(openLog + `
if created then
  redis.call('DEL', KEYS[3])
end
local pos = tonumber(redis.call('HGET', KEYS[1], 'pos'))
local maxSeq = tonumber(redis.call('HGET', KEYS[1], 'x') or '0') or 0
local minSeq = tonumber(redis.call('HGET', KEYS[1], 'm') or '0') or 0
local out, pushed = {}, {}
local now = tonumber(ARGV[7])
for i = 8, #ARGV, 4 do
  local body, key = ARGV[i], ARGV[i+3]
  if key ~= '' and redis.call('ZSCORE', KEYS[3], key) then
    out[#out + 1] = ''
  else
    if key ~= '' then
      redis.call('ZADD', KEYS[3], now, key)
    end
    pos = pos + 1
    local head = '{"e":"' .. epoch .. '","p":' .. string.format('%d', pos)
    if ARGV[i+1] ~= '' then
      maxSeq = math.max(maxSeq, tonumber(ARGV[i+1]) or 0)
      minSeq = math.max(minSeq, tonumber(ARGV[i+2]) or 0)
      head = head .. ',"x":' .. string.format('%d', maxSeq) .. ',"m":' .. string.format('%d', minSeq)
    end
    local ev = head .. ',' .. string.sub(body, 2)
    redis.call(ARGV[5], ARGV[4], ev)
    out[#out + 1] = ev
    pushed[#pushed + 1] = ev
  end
end
redis.call('HSET', KEYS[1], 'pos', string.format('%d', pos), 'x', string.format('%d', maxSeq),
  'm', string.format('%d', minSeq))
` + logTail + `
return out`)

// GroupAppend is one event for a group conversation's stream (Event.ConversationID).
type GroupAppend struct {
	// Event's Type, Time and payload fields are stored; position, epoch and counters are
	// assigned by the stream.
	Event im.Event
	// The conversation's max seq and min seq as far as the caller knows; the stream keeps the
	// highest it was told. Used only when Event.Type.Counted().
	MaxSeq, MinSeq int64
	// Key names the change, as in EventAppend: a second event under it is left out.
	Key string
}

// AppendGroupEvents appends events to their group streams, in order per stream, and publishes
// each once on the stream's channel. It costs one round trip (per cluster node) and a fixed
// number of commands per event: nothing here depends on how many members a group has. The
// stored events come back aligned with appends (with Stream set); an event left out because
// its stream has its key already comes back as the zero Event.
func (c *Cache) AppendGroupEvents(ctx context.Context, appends []GroupAppend) ([]im.Event, error) {
	if len(appends) == 0 {
		return nil, nil
	}
	type streamBatch struct {
		args    []any
		indexes []int
	}
	var order []string
	batches := map[string]*streamBatch{}
	now := time.Now().UnixMilli()
	oldest := now - c.opts.EventLogMaxAge.Milliseconds()
	for i, a := range appends {
		conv := a.Event.ConversationID
		b := batches[conv]
		if b == nil {
			b = &streamBatch{args: []any{newEpoch(), c.opts.EventLogMaxLen, oldest, c.GroupChannel(conv),
				c.publishCommand(), ms(c.opts.EventLogMaxAge), now}}
			batches[conv] = b
			order = append(order, conv)
		}
		body, err := eventBody(a.Event)
		if err != nil {
			return nil, err
		}
		if a.Event.Type.Counted() {
			b.args = append(b.args, body, a.MaxSeq, a.MinSeq, a.Key)
		} else {
			b.args = append(b.args, body, "", "", a.Key)
		}
		b.indexes = append(b.indexes, i)
	}
	pipe := c.rdb.Pipeline()
	cmds := make([]*redis.Cmd, len(order))
	for i, conv := range order {
		logKey, eventsKey, keysKey := c.groupLogKeys(conv)
		cmds[i] = appendGroupEvents.Eval(ctx, pipe, []string{logKey, eventsKey, keysKey}, batches[conv].args...)
	}
	if _, err := pipe.Exec(ctx); err != nil {
		return nil, cacheError("append group events", err)
	}
	out := make([]im.Event, len(appends))
	for i, conv := range order {
		if err := decodeAppended(cmds[i], batches[conv].indexes, out); err != nil {
			return nil, err
		}
		for _, j := range batches[conv].indexes {
			if out[j].Position > 0 {
				out[j].Stream = conv
			}
		}
	}
	return out, nil
}

// eventBody encodes an event for an append script: without its position and counters, which
// the script fills in.
func eventBody(ev im.Event) (string, error) {
	ev.Epoch, ev.Position, ev.MaxSeq, ev.MinSeq, ev.ReadSeq, ev.Unread = "", 0, 0, 0, 0, 0
	encoded, err := json.Marshal(ev)
	if err != nil {
		return "", im.Errorf(im.EINTERNAL, "encode event: %v", err)
	}
	// The body's leading fields ("e", "p") are empty and replaced by the script.
	return stripLeading(encoded), nil
}

// decodeAppended decodes what an append script answered into out at indexes; an event left
// out ("") stays the zero Event.
func decodeAppended(cmd *redis.Cmd, indexes []int, out []im.Event) error {
	raw, err := cmd.StringSlice()
	if err != nil {
		return cacheError("append events", err)
	}
	if len(raw) != len(indexes) {
		return im.Errorf(im.EINTERNAL, "event log answered %d events for %d appends", len(raw), len(indexes))
	}
	for j, s := range raw {
		if s == "" {
			continue // its key was logged already
		}
		if err := json.Unmarshal([]byte(s), &out[indexes[j]]); err != nil {
			return im.Errorf(im.EINTERNAL, "decode event: %v", err)
		}
	}
	return nil
}

// GroupRead asks for a group stream's events after a cursor.
type GroupRead struct {
	ConversationID string
	// Since: the events after it are read; nil reads only the head (creating the stream when
	// it does not exist, so its head cursor is usable at once).
	Since *im.Cursor
	Limit int
}

// ReadGroupEvents reads group streams, all in one round trip (per cluster node); pages come
// back aligned with reads, their events with Stream set. A cursor ahead of its stream's head
// fails the whole read with ErrFutureToken.
func (c *Cache) ReadGroupEvents(ctx context.Context, reads []GroupRead) ([]EventPage, error) {
	if len(reads) == 0 {
		return nil, nil
	}
	pipe := c.rdb.Pipeline()
	cmds := make([]*redis.Cmd, len(reads))
	for i, r := range reads {
		logKey, eventsKey, _ := c.groupLogKeys(r.ConversationID)
		cmds[i] = c.readLogCmd(ctx, pipe, logKey, eventsKey, r.Since, r.Limit)
	}
	if _, err := pipe.Exec(ctx); err != nil {
		return nil, cacheError("read group events", err)
	}
	out := make([]EventPage, len(reads))
	for i, cmd := range cmds {
		p, err := parseEventPage(cmd)
		if err != nil {
			return nil, err
		}
		for j := range p.Events {
			p.Events[j].Stream = reads[i].ConversationID
		}
		out[i] = p
	}
	return out, nil
}
