package history_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/msggate/msggate/internal/history"
	"github.com/msggate/msggate/internal/im"
	"github.com/msggate/msggate/internal/openim"
)

// quote is the content of an OpenIM quote (content type 114) of the message at seq.
func quote(t *testing.T, quoted *im.Message, seq int64) string {
	t.Helper()
	b, err := json.Marshal(map[string]any{"text": "re", "quoteMessage": map[string]any{
		"clientMsgID": quoted.ClientMsgID, "sendID": quoted.SendID, "seq": seq,
		"contentType": quoted.ContentType, "content": quoted.Content,
	}})
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// Ensure a dialect's quote rewrite (OpenIM's here) runs on the read path: a quote of a revoked message loses the
// quoted text, a quote of a standing one keeps it, the quoted seqs of a page cost one more
// call to the chunk source (beyond the page's own), and a quote naming no possible seq is
// read as OpenIM reads it without asking the source.
func TestQuotes(t *testing.T) {
	chunks := &memChunks{}
	chunks.put(conv, 1, im.Slot{Msg: msgAt(1), Revoke: &im.Revoke{UserID: "alice", Role: 100, Time: 5}})
	chunks.put(conv, 2, im.Slot{Msg: msgAt(2)})
	chunks.put(conv, 150, im.Slot{Msg: msgAt(150)})
	for seq, quoted := range map[int64]int64{201: 1, 202: 2, 203: 150, 204: 1 << 60} {
		m := msgAt(seq)
		m.ContentType, m.Content = 114, quote(t, msgAt(min(quoted, 150)), quoted)
		chunks.put(conv, seq, im.Slot{Msg: m})
	}
	r := reader(chunks, im.SeqState{MaxSeq: 204})
	r.Adjust = history.Quotes(openim.QuotedSeq, openim.ViewQuote)

	views, err := r.Messages(context.Background(), conv, []int64{201, 202, 203, 204})
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(views[0].Message.Content, "text 1") || !strings.Contains(views[0].Message.Content, `"contentType":2101`) {
		t.Errorf("quote of a revoked message: %s", views[0].Message.Content)
	}
	if !strings.Contains(views[1].Message.Content, "text 2") || !strings.Contains(views[2].Message.Content, "text 150") {
		t.Errorf("quotes of standing messages changed: %s | %s", views[1].Message.Content, views[2].Message.Content)
	}
	if !strings.Contains(views[3].Message.Content, "text 150") {
		t.Errorf("a quote of an impossible seq changed: %s", views[3].Message.Content)
	}
	if stored := chunks.chunks[im.DocID(conv, 201)].Slot(201).Msg.Content; stored == views[0].Message.Content {
		t.Error("the rewrite changed the stored message")
	}
	if len(chunks.calls) != 2 || len(chunks.calls[1]) != 2 {
		t.Errorf("chunk source calls %v, want the page's, then the quoted seqs' two chunks in one call", chunks.calls)
	}
}
