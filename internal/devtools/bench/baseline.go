package bench

import (
	"encoding/json"
	"fmt"
	"net/http"
)

// The baselines do the least a gateway must for each page: one Redis round trip for the same
// records, decode them into Go values, encode the same fields as GraphQL-shaped JSON. Their
// records are written from the gateway's own answers, so both answer the same JSON (run checks
// that they do before measuring).

// baselineMessage is one message with the fields the bench's queries ask for.
type baselineMessage struct {
	ConversationID string  `json:"conversationID"`
	Seq            int64   `json:"seq"`
	Status         string  `json:"status"`
	ClientMsgID    *string `json:"clientMsgID"`
	ServerMsgID    *string `json:"serverMsgID"`
	SendID         *string `json:"sendID"`
	RecvID         *string `json:"recvID"`
	SessionType    *int    `json:"sessionType"`
	ContentType    *int    `json:"contentType"`
	Content        *string `json:"content"`
	SendTime       *int64  `json:"sendTime"`
	IsRead         bool    `json:"isRead"`
}

// baselineConversation is one node of the conversation list page.
type baselineConversation struct {
	ID          string `json:"id"`
	UnreadCount int64  `json:"unreadCount"`
	// UnreadMentionCount is asked for by the mention list's page only.
	UnreadMentionCount *int64 `json:"unreadMentionCount,omitempty"`
	LastMessage        *struct {
		Seq      int64   `json:"seq"`
		SendID   *string `json:"sendID"`
		Content  *string `json:"content"`
		SendTime *int64  `json:"sendTime"`
	} `json:"lastMessage"`
}

// The keys the baselines read.
const (
	baselineHistoryKey = "bench:baseline:history"
	baselineConvPrefix = "bench:baseline:conversation:"
	baselineMsgPrefix  = "bench:baseline:message:"
	// The group page's record, for the same handler as the single chat's.
	baselineGroupHistoryKey = "bench:baseline:group:history"
	// The list page of the viewer of many conversations.
	baselineBigConvPrefix = "bench:baseline:bigconversation:"
	// The list page with unread mention counts.
	baselineMentionConvPrefix = "bench:baseline:mentionconversation:"
	// The OpenIM pages' records: the same handlers over what the OpenIM gateway answered.
	baselineOpenIMHistoryKey = "bench:baseline:openim:history"
	baselineOpenIMConvPrefix = "bench:baseline:openim:conversation:"
)

// historyBaseline answers the history page: GET of one key holding the page's messages.
func historyBaseline(rdb *respPool, key string) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		vals, err := rdb.do("GET", key)
		if err != nil || len(vals) != 1 || vals[0] == nil {
			http.Error(w, fmt.Sprint("baseline: ", err), http.StatusServiceUnavailable)
			return
		}
		var msgs []baselineMessage
		if err := json.Unmarshal(vals[0], &msgs); err != nil {
			http.Error(w, err.Error(), http.StatusInternalServerError)
			return
		}
		var out struct {
			Data struct {
				Conversation struct {
					History struct {
						Messages []baselineMessage `json:"messages"`
					} `json:"history"`
				} `json:"conversation"`
			} `json:"data"`
		}
		out.Data.Conversation.History.Messages = msgs
		writeJSON(w, out)
	})
}

// messagesBaseline answers messages by seq: one MGET of a key per message.
func messagesBaseline(rdb *respPool, keys []string) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		msgs, ok := readRecords[baselineMessage](w, rdb, keys)
		if !ok {
			return
		}
		var out struct {
			Data struct {
				Messages []baselineMessage `json:"messages"`
			} `json:"data"`
		}
		out.Data.Messages = msgs
		writeJSON(w, out)
	})
}

// conversationsBaseline answers the conversation list: one MGET of a key per conversation.
func conversationsBaseline(rdb *respPool, keys []string) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		nodes, ok := readRecords[baselineConversation](w, rdb, keys)
		if !ok {
			return
		}
		var out struct {
			Data struct {
				Viewer struct {
					Conversations struct {
						Nodes []baselineConversation `json:"nodes"`
					} `json:"conversations"`
				} `json:"viewer"`
			} `json:"data"`
		}
		out.Data.Viewer.Conversations.Nodes = nodes
		writeJSON(w, out)
	})
}

// readRecords reads keys with one MGET and decodes each value; on failure it answers the
// error itself and reports false.
func readRecords[T any](w http.ResponseWriter, rdb *respPool, keys []string) ([]T, bool) {
	vals, err := rdb.do(append([]string{"MGET"}, keys...)...)
	if err != nil || len(vals) != len(keys) {
		http.Error(w, fmt.Sprint("baseline: ", err), http.StatusServiceUnavailable)
		return nil, false
	}
	out := make([]T, len(vals))
	for i, v := range vals {
		if err := json.Unmarshal(v, &out[i]); err != nil {
			http.Error(w, err.Error(), http.StatusInternalServerError)
			return nil, false
		}
	}
	return out, true
}

func writeJSON(w http.ResponseWriter, v any) {
	body, err := json.Marshal(v)
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	_, _ = w.Write(body)
}
