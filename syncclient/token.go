package syncclient

import (
	"maps"
	"slices"
	"strconv"
	"strings"
)

// A sync token is "<epoch>.<position>" for the user's own log, then
// ",<conversationID>=<epoch>.<position>" for each group conversation's stream (see the
// gateway's contract). Each event names its stream's entry; the client keeps one cursor per
// stream and writes the token from them.

// cursor is one stream's place: the epoch tells events of a new log (after Redis lost the
// old one) from those of the log the replica follows.
type cursor struct {
	epoch    string
	position int64
}

func parseCursor(s string) cursor {
	i := strings.LastIndexByte(s, '.')
	if i < 0 {
		return cursor{epoch: s}
	}
	p, _ := strconv.ParseInt(s[i+1:], 10, 64)
	return cursor{epoch: s[:i], position: p}
}

func (c cursor) String() string { return c.epoch + "." + strconv.FormatInt(c.position, 10) }

// streamCursors are the cursors of a token, by stream ("" for the user's own log).
type streamCursors struct {
	user   cursor
	groups map[string]cursor
}

func parseToken(token string) streamCursors {
	entries := strings.Split(token, ",")
	out := streamCursors{user: parseCursor(entries[0]), groups: map[string]cursor{}}
	for _, e := range entries[1:] {
		if id, cur, ok := strings.Cut(e, "="); ok {
			out.groups[id] = parseCursor(cur)
		}
	}
	return out
}

func (s streamCursors) String() string {
	if s.user.epoch == "" {
		return ""
	}
	var b strings.Builder
	b.WriteString(s.user.String())
	for _, id := range slices.Sorted(maps.Keys(s.groups)) {
		b.WriteString("," + id + "=" + s.groups[id].String())
	}
	return b.String()
}

// eventCursor is the cursor an event names: its token without the stream's name.
func eventCursor(ev Event) cursor {
	t := ev.Token
	if _, after, ok := strings.Cut(t, "="); ok {
		t = after
	}
	return parseCursor(t)
}
