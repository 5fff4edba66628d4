package gateway_test

import (
	"regexp"
	"testing"

	"github.com/msggate/msggate/internal/gateway/gatewaytest"
)

// Ensure a page of history and a message on its own are written exactly as the query selects
// them (graph/model writes Message and History itself): every field, aliases, fragments,
// @skip and @include, __typename, nested revoke, the selection's order and JSON escapes.
func TestMessageJSONFollowsTheSelection(t *testing.T) {
	g := gatewaytest.Start(t)
	alice, bob := g.Token("alice"), g.Token("bob")
	g.SendGQL(alice, map[string]any{"recvID": "bob", "contentType": 101, "content": "say \"hi\"\n\t\\ \x01 é 😀 \xff", /* the client's JSON turns \xff into U+FFFD */
		"clientMsgID": "c1", "atUserIDs": []string{"bob"}, "ex": "{\"k\":1}"})
	g.SendGQL(bob, map[string]any{"recvID": "alice", "contentType": 101, "content": "second", "clientMsgID": "c2"})
	g.Post(bob, `mutation { revokeMessage(conversationID: "si_alice_bob", seq: 2) { seq } }`, nil)

	const query = `query($skip: Boolean!, $with: Boolean!) {
	  conversation(id: "si_alice_bob") {
	    h: history(limit: 5) {
	      __typename
	      more: hasMoreBefore
	      hasMoreAfter
	      messages {
	        __typename
	        ...all
	        s: seq
	        content @skip(if: $skip)
	        ex @include(if: $with)
	        revoke { __typename who: userID role time }
	      }
	    }
	    lastMessage { seq ... on Message { status } }
	  }
	}
	fragment all on Message { conversationID seq status clientMsgID serverMsgID sendID recvID groupID sessionType contentType content sendTime isRead atUserIDs }`
	r := g.Post(alice, query, map[string]any{"skip": true, "with": false})
	if len(r.Errors) > 0 {
		t.Fatalf("errors: %+v", r.Errors)
	}
	got := regexp.MustCompile(`"serverMsgID":"[^"]+"`).ReplaceAllString(string(r.Data), `"serverMsgID":"S"`)
	got = regexp.MustCompile(`"(sendTime|time)":\d+`).ReplaceAllString(got, `"$1":0`)
	want := `{"conversation":{"h":{"__typename":"History","more":false,"hasMoreAfter":false,"messages":[` +
		`{"__typename":"Message","conversationID":"si_alice_bob","seq":1,"status":"OK","clientMsgID":"c1","serverMsgID":"S","sendID":"alice","recvID":"bob","groupID":null,"sessionType":1,"contentType":101,` +
		`"content":"say \"hi\"\n\t\\ \u0001 é 😀 �","sendTime":0,"isRead":false,"atUserIDs":["bob"],"s":1,"revoke":null},` +
		`{"__typename":"Message","conversationID":"si_alice_bob","seq":2,"status":"REVOKED","clientMsgID":"c2","serverMsgID":"S","sendID":"bob","recvID":"alice","groupID":null,"sessionType":1,"contentType":null,` +
		`"content":null,"sendTime":0,"isRead":false,"atUserIDs":[],"s":2,"revoke":{"__typename":"Revoke","who":"bob","role":0,"time":0}}]},` +
		`"lastMessage":{"seq":2,"status":"REVOKED"}}}`
	if got != want {
		t.Errorf("answer\n got %s\nwant %s", got, want)
	}

	// The other branch of each directive, and a message outside a list.
	r = g.Post(alice, `query { messages(conversationID: "si_alice_bob", seqs: [1]) { seq content ex @include(if: true) content @skip(if: false) } }`, nil)
	if len(r.Errors) > 0 {
		t.Fatalf("errors: %+v", r.Errors)
	}
	if want := `{"messages":[{"seq":1,"content":"say \"hi\"\n\t\\ \u0001 é 😀 �","ex":"{\"k\":1}"}]}`; string(r.Data) != want {
		t.Errorf("answer\n got %s\nwant %s", r.Data, want)
	}
}
