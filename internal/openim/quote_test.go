package openim_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/msggate/msggate/internal/im"
	"github.com/msggate/msggate/internal/openim"
	"github.com/msggate/msggate/internal/openim/openimtest"
)

func quoteOf(t *testing.T, quoted *openimtest.MsgData, seq int64) string {
	t.Helper()
	b, err := json.Marshal(map[string]any{
		"text": "replying to that",
		"quoteMessage": map[string]any{
			"clientMsgID": quoted.ClientMsgID, "sendID": quoted.SendID, "recvID": quoted.RecvID,
			"sessionType": quoted.SessionType, "contentType": quoted.ContentType, "seq": seq,
			"content": quoted.Content, "sendTime": quoted.SendTime,
			"textElem": map[string]string{"content": "the secret"}, // how OpenIM's SDK also carries the text
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// A quote of a message that was revoked since has the quoted text withheld, as OpenIM's
// handlerQuote does; quotes of messages that stand are left alone.
func TestViewQuoteWithholdsARevokedQuotedMessage(t *testing.T) {
	t.Parallel()
	d := newDeployment(t)
	chat := openimtest.SingleConversationID("a", "b")
	original := openimtest.Single("a", "b", openimtest.ContentText, openimtest.TextContent("the secret"))
	kept := openimtest.Single("a", "b", openimtest.ContentText, openimtest.TextContent("still here"))
	d.Send(chat, original, kept)
	d.Send(chat,
		openimtest.Single("b", "a", openimtest.ContentQuote, quoteOf(t, original, 1)),
		openimtest.Single("b", "a", openimtest.ContentQuote, quoteOf(t, kept, 2)))
	d.Revoke(chat, 1, openimtest.Revoke{Role: 100, UserID: "a", Nickname: "Ann", Time: 1700000000000})
	s := d.open(openim.Options{})

	chunks, err := s.Chunks(ctx, []im.SeqGroup{{DocID: im.DocID(chat, 1), Seqs: []int64{3, 4}}})
	if err != nil {
		t.Fatal(err)
	}
	quote, keptQuote := chunks[0].Slot(3).Msg, chunks[0].Slot(4).Msg
	seq, ok := openim.QuotedSeq(quote)
	if !ok || seq != 1 {
		t.Fatalf("QuotedSeq: %d, %v", seq, ok)
	}
	quoted, err := s.Chunks(ctx, []im.SeqGroup{{DocID: im.DocID(chat, seq), Seqs: []int64{seq, 2}}})
	if err != nil {
		t.Fatal(err)
	}

	before := quote.Content
	out := openim.ViewQuote(quote, quoted[0].Slot(1))
	if quote.Content != before {
		t.Fatal("ViewQuote changed the message it was given")
	}
	if strings.Contains(out.Content, "the secret") {
		t.Fatalf("the revoked quoted text is still shown: %s", out.Content)
	}
	var got struct {
		Text         string         `json:"text"`
		QuoteMessage map[string]any `json:"quoteMessage"`
	}
	if err := json.Unmarshal([]byte(out.Content), &got); err != nil {
		t.Fatal(err)
	}
	if got.Text != "replying to that" || got.QuoteMessage["contentType"] != float64(2101) || got.QuoteMessage["clientMsgID"] != original.ClientMsgID {
		t.Errorf("rewritten quote: %s", out.Content)
	}
	var notice struct {
		Detail string `json:"detail"`
	}
	if err := json.Unmarshal([]byte(got.QuoteMessage["content"].(string)), &notice); err != nil {
		t.Fatal(err)
	}
	var revoked map[string]any
	if err := json.Unmarshal([]byte(notice.Detail), &revoked); err != nil {
		t.Fatal(err)
	}
	if revoked["revokerID"] != "a" || revoked["revokerNickname"] != "Ann" || revoked["revokerRole"] != float64(100) ||
		revoked["revokeTime"] != float64(1700000000000) || revoked["seq"] != float64(1) || revoked["clientMsgID"] != original.ClientMsgID ||
		revoked["sourceMessageSendID"] != "a" || revoked["sourceMessageSendTime"] != float64(original.SendTime) {
		t.Errorf("revoke notice detail: %s", notice.Detail)
	}

	if out := openim.ViewQuote(keptQuote, quoted[0].Slot(2)); out != keptQuote {
		t.Errorf("a quote of a message that stands was rewritten: %s", out.Content)
	}
	if out := openim.ViewQuote(quote, nil); out != quote {
		t.Errorf("a quote whose quoted chunk does not exist was rewritten: %s", out.Content)
	}
}

// The other rewrites handlerDBMsg makes, and what it leaves alone.
func TestViewQuoteEdgeCases(t *testing.T) {
	t.Parallel()
	quote := func(content string) *im.Message {
		return &im.Message{ContentType: 114, Content: content}
	}
	// A quoted message without a seq counts as revoked, with an empty object as its content.
	m := quote(`{"text":"t","quoteMessage":{"seq":0,"contentType":101,"content":"{\"content\":\"x\"}"}}`)
	if _, ok := openim.QuotedSeq(m); ok {
		t.Error("QuotedSeq asks for seq 0")
	}
	out := openim.ViewQuote(m, nil)
	if !strings.Contains(out.Content, `"contentType":2101`) || !strings.Contains(out.Content, `"content":"{}"`) || strings.Contains(out.Content, `\"x\"`) {
		t.Errorf("seq 0: %s", out.Content)
	}
	// Already a revoke notice without a seq: left as it is.
	m = quote(`{"text":"t","quoteMessage":{"seq":0,"contentType":2101,"content":"{\"detail\":\"d\"}"}}`)
	if out := openim.ViewQuote(m, nil); out != m {
		t.Errorf("a revoke notice was rewritten: %s", out.Content)
	}
	// An empty object sent base64-encoded is normalised.
	m = quote(`{"text":"t","quoteMessage":{"seq":5,"contentType":101,"content":"e30="}}`)
	if out := openim.ViewQuote(m, &im.Slot{Msg: &im.Message{Seq: 5}}); !strings.Contains(out.Content, `"content":"{}"`) || !strings.Contains(out.Content, `"contentType":101`) {
		t.Errorf("e30=: %s", out.Content)
	}
	// A deleted-for-everyone quoted message is not a revoked one.
	m = quote(`{"text":"t","quoteMessage":{"seq":5,"contentType":101,"content":"x"}}`)
	if out := openim.ViewQuote(m, &im.Slot{Msg: &im.Message{Seq: 5, Status: im.DeletedMessageStatus}}); out != m {
		t.Errorf("tombstone: %s", out.Content)
	}
	// Not a quote, not decodable, no quoted content: untouched.
	for _, m := range []*im.Message{
		{ContentType: 101, Content: `{"quoteMessage":{"seq":0,"content":"x"}}`},
		quote(`not json`),
		quote(`{"text":"t"}`),
		quote(`{"text":"t","quoteMessage":{"seq":0,"content":""}}`),
		quote(""),
	} {
		if out := openim.ViewQuote(m, nil); out != m {
			t.Errorf("%q was rewritten to %q", m.Content, out.Content)
		}
	}
}
