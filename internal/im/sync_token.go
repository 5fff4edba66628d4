package im

import (
	"slices"
	"strconv"
	"strings"
)

// Cursor names a position in one event stream. Epoch changes when the stream's log is created
// anew (its Redis keys were lost), which makes every older cursor unusable, and detectably so.
type Cursor struct {
	Epoch    string
	Position int64
}

func (c Cursor) String() string { return c.Epoch + "." + strconv.FormatInt(c.Position, 10) }

// maxCursorLength bounds one cursor's text: a 16-digit epoch and a position.
const maxCursorLength = 64

// ParseCursor parses a cursor made by Cursor.String.
func ParseCursor(s string) (Cursor, error) {
	i := strings.LastIndexByte(s, '.')
	if i <= 0 || len(s) > maxCursorLength {
		return Cursor{}, Errorf(EINVALID, "malformed sync token %q", truncate(s, 70))
	}
	pos, err := strconv.ParseInt(s[i+1:], 10, 64)
	if err != nil || pos < 0 {
		return Cursor{}, Errorf(EINVALID, "malformed sync token %q", truncate(s, 70))
	}
	return Cursor{Epoch: s[:i], Position: pos}, nil
}

// SyncToken is where a device stands: a cursor in the user's own event log, and one in the
// log of each group conversation the user is in. A group's messages, revokes and clears are
// logged once, in the group's stream, whatever the group's size; each member's devices read
// them from there.
type SyncToken struct {
	User   Cursor
	Groups map[string]Cursor
}

// MaxSyncTokenGroups bounds the group cursors one token may carry: a user's conversation list
// holds at most this many conversations.
const MaxSyncTokenGroups = 10000

// String writes the token as "<epoch>.<position>" for the user's log, followed by
// ",<conversationID>=<epoch>.<position>" for each group stream, sorted by conversation ID.
// msggate's conversation IDs never hold ',' or '='; an OpenIM group ID may hold '=' (the
// parser takes the last one), not ',' (such a token does not parse back).
func (t SyncToken) String() string {
	var b strings.Builder
	b.WriteString(t.User.String())
	ids := make([]string, 0, len(t.Groups))
	for id := range t.Groups {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	for _, id := range ids {
		b.WriteByte(',')
		b.WriteString(id)
		b.WriteByte('=')
		b.WriteString(t.Groups[id].String())
	}
	return b.String()
}

// GroupCursorString is how a group stream's event names its place: the entry of that stream
// in a token, which a client puts in place of the stream's entry it holds.
func GroupCursorString(conversationID string, c Cursor) string {
	return conversationID + "=" + c.String()
}

// ParseSyncToken parses a token made by SyncToken.String. A token of the user's log alone
// (what earlier versions gave) is valid: it follows no group stream yet. parseConversationID
// is the ID rules of the store whose event log wrote the token (ParseConversationID for
// msggate's own, ParseOpenIMConversationID for an OpenIM deployment's): a group entry must
// name a group conversation by those rules.
func ParseSyncToken(s string, parseConversationID func(string) (Conversation, error)) (SyncToken, error) {
	head, rest, more := strings.Cut(s, ",")
	user, err := ParseCursor(head)
	if err != nil {
		return SyncToken{}, err
	}
	t := SyncToken{User: user}
	if !more {
		return t, nil
	}
	if n := strings.Count(rest, ",") + 1; n > MaxSyncTokenGroups {
		return SyncToken{}, Errorf(ELIMIT, "sync token follows %d group streams; at most %d", n, MaxSyncTokenGroups)
	}
	t.Groups = map[string]Cursor{}
	for entry := range strings.SplitSeq(rest, ",") {
		// A cursor never holds '=', an OpenIM group ID may: the last one ends the ID.
		eq := strings.LastIndexByte(entry, '=')
		if eq < 0 {
			return SyncToken{}, Errorf(EINVALID, "malformed sync token entry %q", truncate(entry, 70))
		}
		id, cur := entry[:eq], entry[eq+1:]
		if c, err := parseConversationID(id); err != nil || !c.Kind.IsGroup() {
			return SyncToken{}, Errorf(EINVALID, "sync token entry %q names no group conversation", truncate(entry, 70))
		}
		if _, dup := t.Groups[id]; dup {
			return SyncToken{}, Errorf(EINVALID, "sync token names %s twice", id)
		}
		if t.Groups[id], err = ParseCursor(cur); err != nil {
			return SyncToken{}, err
		}
	}
	return t, nil
}
