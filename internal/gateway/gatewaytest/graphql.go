package gatewaytest

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"testing"
)

// Error is one GraphQL error of a response.
type Error struct {
	Message    string         `json:"message"`
	Extensions map[string]any `json:"extensions"`
}

// Response is a GraphQL response, its data left to decode.
type Response struct {
	Data   json.RawMessage `json:"data"`
	Errors []Error         `json:"errors"`
}

// Message is a Message as the tests' queries ask for it.
type Message struct {
	ConversationID string `json:"conversationID"`
	Seq            int64  `json:"seq"`
	Status         string `json:"status"`
	Content        *string
	SendID         *string `json:"sendID"`
	IsRead         bool    `json:"isRead"`
	Revoke         *struct {
		UserID string `json:"userID"`
		Role   int    `json:"role"`
	} `json:"revoke"`
}

// Conversation is a Conversation as ConversationQuery asks for it.
type Conversation struct {
	ID          string
	Kind        string
	MaxSeq      int64
	MinSeq      int64
	ReadSeq     int64
	UnreadCount int64
	LastMessage *Message
}

// Viewer is the answer to ViewerQuery.
type Viewer struct {
	Viewer struct {
		UserID        string
		TotalUnread   int64
		Conversations struct {
			Nodes    []Conversation
			PageInfo struct {
				EndCursor   *string
				HasNextPage bool
			}
		}
	}
}

// The queries the suites share.
const (
	MessagesQuery     = `query($c: ID!, $s: [Int64!]!) { messages(conversationID: $c, seqs: $s) { conversationID seq status content sendID } }`
	SendMutation      = `mutation($in: SendMessageInput!) { sendMessage(input: $in) { conversationID seq status content } }`
	ConversationQuery = `query($id: ID!) { conversation(id: $id) { id kind maxSeq minSeq readSeq unreadCount lastMessage { seq content } } }`
	ViewerQuery       = `query($first: Int, $after: String) { viewer { userID totalUnread
	conversations(first: $first, after: $after) { nodes { id maxSeq readSeq unreadCount lastMessage { seq content } } pageInfo { endCursor hasNextPage } } } }`
)

// Do sends req, a request to a gateway's /query, with a bearer token ("" for none) and
// decodes the GraphQL response. A transport failure and an answer that is not GraphQL JSON are
// errors; GraphQL errors come back in the response. It touches no test, so it may run on any
// goroutine.
func Do(req *http.Request, token string) (*http.Response, Response, error) {
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, Response{}, err
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	if err != nil {
		return resp, Response{}, err
	}
	var out Response
	if err := json.Unmarshal(raw, &out); err != nil {
		return resp, Response{}, fmt.Errorf("response %d (%s) is not GraphQL JSON: %.300s", resp.StatusCode, resp.Header.Get("Content-Type"), raw)
	}
	return resp, out, nil
}

// Call posts one GraphQL request to url's /query with a bearer token and an X-Request-ID
// (each "" for none), as Do does.
func Call(url, token, requestID, query string, vars map[string]any) (*http.Response, Response, error) {
	body, _ := json.Marshal(map[string]any{"query": query, "variables": vars})
	req, err := http.NewRequest(http.MethodPost, url+"/query", bytes.NewReader(body))
	if err != nil {
		return nil, Response{}, err
	}
	req.Header.Set("Content-Type", "application/json")
	if requestID != "" {
		req.Header.Set("X-Request-ID", requestID)
	}
	return Do(req, token)
}

// PostQuery is Call that fails the test on a transport failure or an answer that is not JSON.
func PostQuery(t testing.TB, url, token, requestID, query string, vars map[string]any) (*http.Response, Response) {
	t.Helper()
	resp, r, err := Call(url, token, requestID, query, vars)
	if err != nil {
		t.Fatal(err)
	}
	return resp, r
}

// Post sends one GraphQL request with the given bearer token ("" for none).
func (g *Gateway) Post(token, query string, vars map[string]any) Response {
	g.T.Helper()
	_, r := PostQuery(g.T, g.URL, token, "", query, vars)
	return r
}

// Do sends an HTTP request to /query, as Do does, failing the test where Do errs.
func (g *Gateway) Do(req *http.Request, token string) (*http.Response, Response) {
	g.T.Helper()
	resp, r, err := Do(req, token)
	if err != nil {
		g.T.Fatal(err)
	}
	return resp, r
}

// PostBody posts a JSON request body as given.
func (g *Gateway) PostBody(token string, body []byte) (*http.Response, Response) {
	g.T.Helper()
	req, _ := http.NewRequest(http.MethodPost, g.URL+"/query", bytes.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	return g.Do(req, token)
}

// Query sends a request that must succeed and decodes its data into out.
func (g *Gateway) Query(token, query string, vars map[string]any, out any) {
	g.T.Helper()
	r := g.Post(token, query, vars)
	if len(r.Errors) > 0 {
		g.T.Fatalf("unexpected errors: %+v", r.Errors)
	}
	if err := json.Unmarshal(r.Data, out); err != nil {
		g.T.Fatalf("decode %s: %v", r.Data, err)
	}
}

// ErrorCode sends a request that must fail and returns its first error's code.
func (g *Gateway) ErrorCode(token, query string, vars map[string]any) string {
	g.T.Helper()
	r := g.Post(token, query, vars)
	if len(r.Errors) == 0 {
		g.T.Fatalf("expected an error, got data %s", r.Data)
	}
	code, _ := r.Errors[0].Extensions["code"].(string)
	return code
}

// SendGQL sends a message through the sendMessage mutation.
func (g *Gateway) SendGQL(token string, in map[string]any) Message {
	g.T.Helper()
	var out struct{ SendMessage Message }
	g.Query(token, SendMutation, map[string]any{"in": in}, &out)
	return out.SendMessage
}

// Conversation reads a conversation as token's user sees it.
func (g *Gateway) Conversation(token, id string) Conversation {
	g.T.Helper()
	var out struct{ Conversation Conversation }
	g.Query(token, ConversationQuery, map[string]any{"id": id}, &out)
	return out.Conversation
}

// Statuses reads seqs as token's user sees them and returns their statuses.
func (g *Gateway) Statuses(token, conv string, seqs ...int64) []string {
	g.T.Helper()
	var out struct{ Messages []Message }
	g.Query(token, MessagesQuery, map[string]any{"c": conv, "s": seqs}, &out)
	var got []string
	for _, m := range out.Messages {
		got = append(got, m.Status)
	}
	return got
}
