package bench

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/msggate/msggate/internal/gateway"
	"github.com/msggate/msggate/internal/im"
)

// The bench's data: a viewer with 20 single chats, one of 1,000 messages (the history page and
// messages by seq, over ten chunks) and 19 of three (the conversation list page). Single chats,
// so that reading one needs no membership lookup: the bench measures the message read path.
// Apart from them, a group of groupSize members with 1,000 messages, whose page another viewer
// reads (groupViewer, so that the first viewer's list stays the same): a group page is a
// single chat's plus the viewer's membership.
const (
	viewer     = "bench"
	peers      = 20
	longLength = 1000
	// groupViewer reads the group page; groupSenders write the group's messages in turn.
	groupViewer  = "bench-member"
	groupID      = "bench-group"
	groupSize    = 1000
	groupSenders = 4
	// pageFields are the twelve fields the history page and messages by seq ask for.
	pageFields = "conversationID seq status clientMsgID serverMsgID sendID recvID sessionType contentType content sendTime isRead"
)

var (
	historyQuery  = `query($c: ID!) { conversation(id: $c) { history(limit: 100) { messages { ` + pageFields + ` } } } }`
	messagesQuery = `query($c: ID!, $s: [Int64!]!) { messages(conversationID: $c, seqs: $s) { ` + pageFields + ` } }`
	listQuery     = `{ viewer { conversations(first: 20) { nodes { id unreadCount lastMessage { seq sendID content sendTime } } } } }`
	// mentionListQuery is listQuery with each node's unread mention count.
	mentionListQuery = `{ viewer { conversations(first: 20) { nodes { id unreadCount unreadMentionCount lastMessage { seq sendID content sendTime } } } } }`
)

func peer(i int) string { return fmt.Sprintf("p%02d", i) }

// bigViewer is the viewer of many conversations (Options.BigList), one message each from a
// peer of its own: its list page is measured against the first viewer's, whose list holds 20.
const bigViewer = "benchbig"

// fillBig stores n single chats of bigViewer through the write path, one message each, the
// newest last.
func fillBig(ctx context.Context, g *gateway.Gateway, n int) error {
	text := strings.Repeat("the quick brown fox jumps over the lazy dog ", 3)
	base := time.Date(2026, 11, 2, 9, 0, 0, 0, time.UTC).UnixMilli()
	// Batches of 50: every message starts a conversation, and FerretDB's bulk writes slow
	// down with the number of statements.
	for start := 0; start < n; start += 50 {
		var msgs []*im.Message
		for i := start; i < min(n, start+50); i++ {
			msgs = append(msgs, &im.Message{SendID: fmt.Sprintf("q%05d", i), RecvID: bigViewer, ClientMsgID: fmt.Sprintf("bench-big-%d", i),
				ContentType: 101, Content: fmt.Sprintf("%s#%d", text, i), SendTime: base + int64(i)*1000})
		}
		if _, err := g.Ingest.Ingest(ctx, msgs); err != nil {
			return err
		}
	}
	return nil
}

// longConversation is the conversation of 1,000 messages.
func longConversation() string {
	id, _ := im.SingleConversationID(viewer, peer(0))
	return id
}

// groupConversation is the group's chat.
func groupConversation() string {
	id, _ := im.GroupConversationID(groupID)
	return id
}

// groupMember is the group's i-th member; the first is groupViewer.
func groupMember(i int) string {
	if i == 0 {
		return groupViewer
	}
	return fmt.Sprintf("gm%04d", i)
}

// spreadSeqs are 100 seqs of the long conversation, ten in each of its ten chunks.
func spreadSeqs() []int64 {
	var seqs []int64
	for s := int64(1); s <= longLength; s += 10 {
		seqs = append(seqs, s)
	}
	return seqs
}

// fill stores the bench's data through the write path.
func fill(ctx context.Context, g *gateway.Gateway) error {
	// Text of a typical chat message's length, so that a page weighs what a real one does.
	text := strings.Repeat("the quick brown fox jumps over the lazy dog ", 3)
	base := time.Date(2026, 11, 1, 9, 0, 0, 0, time.UTC).UnixMilli()
	var msgs []*im.Message
	add := func(from, to string, i int) {
		msgs = append(msgs, &im.Message{SendID: from, RecvID: to, ClientMsgID: fmt.Sprintf("bench-%s-%s-%d", from, to, i),
			ContentType: 101, Content: fmt.Sprintf("%s#%d", text, i), SendTime: base + int64(len(msgs))*1000})
	}
	for i := range longLength {
		if i%2 == 0 {
			add(peer(0), viewer, i)
		} else {
			add(viewer, peer(0), i)
		}
	}
	for p := 1; p < peers; p++ {
		for i := range 3 {
			add(peer(p), viewer, i)
		}
	}
	members := make([]im.GroupMember, groupSize)
	for i := range members {
		members[i] = im.GroupMember{UserID: groupMember(i), Role: im.RoleMember}
	}
	members[1].Role = im.RoleOwner
	if err := g.Ledger.SetGroup(ctx, groupID, members); err != nil {
		return err
	}
	for i := range longLength {
		from := groupMember(i % groupSenders)
		msgs = append(msgs, &im.Message{SendID: from, GroupID: groupID, ClientMsgID: fmt.Sprintf("bench-group-%d", i),
			ContentType: 101, Content: fmt.Sprintf("%s#%d", text, i), SendTime: base + int64(len(msgs))*1000})
	}
	for len(msgs) > 0 {
		n := min(len(msgs), 500)
		if _, err := g.Ingest.Ingest(ctx, msgs[:n]); err != nil {
			return err
		}
		msgs = msgs[n:]
	}
	return nil
}

// graphQLBody is the JSON body of a GraphQL request.
func graphQLBody(query string, vars map[string]any) []byte {
	b, _ := json.Marshal(map[string]any{"query": query, "variables": vars})
	return b
}

// writeBaselines stores the baselines' records, taken from the gateway's own answers.
func writeBaselines(rdb *respPool, history, messages, list []byte) (msgKeys, convKeys []string, err error) {
	if err := writeHistoryRecord(rdb, baselineHistoryKey, history); err != nil {
		return nil, nil, err
	}
	if msgKeys, err = writeRecords(rdb, baselineMsgPrefix, messages, func(data json.RawMessage) ([]json.RawMessage, error) {
		var m struct{ Messages []json.RawMessage }
		err := json.Unmarshal(data, &m)
		return m.Messages, err
	}); err != nil {
		return nil, nil, err
	}
	if convKeys, err = writeListRecords(rdb, baselineConvPrefix, list); err != nil {
		return nil, nil, err
	}
	if len(msgKeys) != 100 || len(convKeys) != 20 {
		return nil, nil, fmt.Errorf("the gateway answered %d messages and %d conversations, want 100 and 20", len(msgKeys), len(convKeys))
	}
	return msgKeys, convKeys, nil
}

// writeHistoryRecord stores the history page's messages, from the gateway's answer, at key.
func writeHistoryRecord(rdb *respPool, key string, answer []byte) error {
	var h struct {
		Data struct {
			Conversation struct {
				History struct{ Messages json.RawMessage }
			}
		}
	}
	if err := json.Unmarshal(answer, &h); err != nil {
		return err
	}
	_, err := rdb.do("SET", key, string(h.Data.Conversation.History.Messages))
	return err
}

// writeListRecords stores the list page's conversations, from the gateway's answer, one key
// each under prefix, and returns the keys.
func writeListRecords(rdb *respPool, prefix string, answer []byte) ([]string, error) {
	return writeRecords(rdb, prefix, answer, func(data json.RawMessage) ([]json.RawMessage, error) {
		var l struct {
			Viewer struct {
				Conversations struct{ Nodes []json.RawMessage }
			}
		}
		err := json.Unmarshal(data, &l)
		return l.Viewer.Conversations.Nodes, err
	})
}

// writeRecords stores the records records takes out of answer's data, one key each under
// prefix, with one MSET, and returns the keys.
func writeRecords(rdb *respPool, prefix string, answer []byte, records func(json.RawMessage) ([]json.RawMessage, error)) ([]string, error) {
	var a struct{ Data json.RawMessage }
	if err := json.Unmarshal(answer, &a); err != nil {
		return nil, err
	}
	recs, err := records(a.Data)
	if err != nil {
		return nil, err
	}
	if len(recs) == 0 {
		return nil, fmt.Errorf("no records under %s in %s", prefix, answer)
	}
	keys := make([]string, len(recs))
	set := []string{"MSET"}
	for i, raw := range recs {
		keys[i] = fmt.Sprintf("%s%d", prefix, i)
		set = append(set, keys[i], string(raw))
	}
	_, err = rdb.do(set...)
	return keys, err
}
