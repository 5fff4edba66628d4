package bench

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/msggate/msggate/internal/auth"
	"github.com/msggate/msggate/internal/gateway"
	"github.com/msggate/msggate/internal/im"
	imsync "github.com/msggate/msggate/internal/sync"
)

// Jumping into history (docs/history.md): a page around a seq of the long conversation, the
// same work as the history page plus the choice of its window, and the seq at a time in a
// conversation of Options.TimeLength messages, whose search reads about log2(chunks)+1 chunks.

const (
	// aroundSeq is the page's middle: with 100 messages it spans seqs 500..599, two chunks, as
	// a jump to a search hit usually does.
	aroundSeq = 550
	// timeViewer and timePeer are the two users of the conversation searched by time, apart
	// from the other viewers so that their pages stay the same.
	timeViewer = "bench-time"
	timePeer   = "bench-time-peer"
	// timeStep is the send time between two messages of the conversation searched by time.
	timeStep = 1000
)

// The names of the jump scenarios, which -only matches.
const (
	aroundName        = "around page (aroundSeq, 100 messages over 2 chunks, warm)"
	seqAtTimeWarmName = "seqAtTime (%d messages, warm)"
	seqAtTimeColdName = "seqAtTime (%d messages, cold: FerretDB)"
)

var (
	aroundQuery = `query($c: ID!, $s: Int64) { conversation(id: $c) { history(aroundSeq: $s, limit: 100) { hasMoreBefore hasMoreAfter messages { ` +
		pageFields + ` } } } }`
	seqAtTimeQuery = `query($c: ID!, $t: Int64!) { conversation(id: $c) { seqAtTime(time: $t) } }`
)

// The keys of the jump baselines' records.
const (
	baselineAroundKey    = "bench:baseline:around"
	baselineSeqAtTimeKey = "bench:baseline:seqattime"
)

// timeConversation is the conversation searched by time.
func timeConversation() string {
	id, _ := im.SingleConversationID(timeViewer, timePeer)
	return id
}

// timeBase is the send time of the first message of the conversation searched by time.
var timeBase = time.Date(2026, 10, 1, 9, 0, 0, 0, time.UTC).UnixMilli()

// searchedTime is the time the seqAtTime rows ask for: between two messages, about three
// fifths of the way into a conversation of n messages, so that the search runs its full depth
// and ends inside a chunk.
func searchedTime(n int) int64 { return timeBase + int64(n)*timeStep*3/5 + timeStep/2 }

// fillTime stores the conversation searched by time, n messages one second apart, written
// straight into their chunks (each chunk one insert) and recorded as stored as the write path
// records them: the write path's seq allocation, claims and events, a few commands per
// message, would make 100,000 messages take many minutes, and the search reads none of them.
func fillTime(ctx context.Context, g *gateway.Gateway, n int) error {
	conv := timeConversation()
	now := time.Now().UnixMilli()
	// Ten chunks per call: each is inserted whole, and a call's messages stay few.
	const batch = 10 * im.ChunkSize
	for from := 1; from <= n; from += batch {
		var msgs []*im.Message
		for seq := from; seq < min(n+1, from+batch); seq++ {
			send, recv := timeViewer, timePeer
			if seq%2 == 0 {
				send, recv = recv, send
			}
			msgs = append(msgs, &im.Message{SendID: send, RecvID: recv, ClientMsgID: fmt.Sprintf("bench-time-%d", seq),
				ServerMsgID: fmt.Sprintf("bench-time-server-%d", seq), SessionType: im.SessionSingle, ContentType: 101,
				Content: fmt.Sprintf("message %d", seq), Seq: int64(seq), SendTime: timeBase + int64(seq-1)*timeStep,
				CreateTime: now, Status: im.StatusSent})
		}
		if _, err := g.Store.WriteMessages(ctx, conv, msgs); err != nil {
			return err
		}
	}
	last := int64(n)
	return g.Ledger.RecordStored(ctx, []imsync.StoredMessage{{ConversationID: conv, Seq: last, SendID: timePeer,
		SendTime: timeBase + (last-1)*timeStep}})
}

// baselineAround is the around page's history: its messages and whether more lie each way.
type baselineAround struct {
	Messages      []baselineMessage `json:"messages"`
	HasMoreBefore bool              `json:"hasMoreBefore"`
	HasMoreAfter  bool              `json:"hasMoreAfter"`
}

// aroundBaseline answers the around page: GET of one key holding the page.
func aroundBaseline(rdb *respPool, key string) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		var page baselineAround
		if !readRecord(w, rdb, key, &page) {
			return
		}
		var out struct {
			Data struct {
				Conversation struct {
					History baselineAround `json:"history"`
				} `json:"conversation"`
			} `json:"data"`
		}
		out.Data.Conversation.History = page
		writeJSON(w, out)
	})
}

// seqAtTimeBaseline answers seqAtTime from one GET of the answer: the least any request does,
// against which the search's chunk reads and its scan show.
func seqAtTimeBaseline(rdb *respPool, key string) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		var seq *int64
		if !readRecord(w, rdb, key, &seq) {
			return
		}
		var out struct {
			Data struct {
				Conversation struct {
					SeqAtTime *int64 `json:"seqAtTime"`
				} `json:"conversation"`
			} `json:"data"`
		}
		out.Data.Conversation.SeqAtTime = seq
		writeJSON(w, out)
	})
}

// readRecord reads key with one GET and decodes it into v; on failure it answers the error
// itself and reports false.
func readRecord(w http.ResponseWriter, rdb *respPool, key string, v any) bool {
	vals, err := rdb.do("GET", key)
	if err != nil || len(vals) != 1 || vals[0] == nil {
		http.Error(w, fmt.Sprint("baseline: ", err), http.StatusServiceUnavailable)
		return false
	}
	if err := json.Unmarshal(vals[0], v); err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return false
	}
	return true
}

// writeConversationField stores the field of data.conversation in the gateway's answer at key.
func writeConversationField(rdb *respPool, key, field string, answer []byte) error {
	var a struct {
		Data struct{ Conversation map[string]json.RawMessage }
	}
	if err := json.Unmarshal(answer, &a); err != nil {
		return err
	}
	v, ok := a.Data.Conversation[field]
	if !ok {
		return fmt.Errorf("no %s in %s", field, answer)
	}
	_, err := rdb.do("SET", key, string(v))
	return err
}

// jumps are the jump scenarios, aligned with their gateway answers, baselines and paths, and
// the seqAtTime request, for the cold row (nil when -only leaves its rows out).
type jumps struct {
	scenarios []scenario
	answers   [][]byte
	baselines []http.Handler
	paths     []string
	seqAtTime *target
}

func (j *jumps) add(s scenario, answer []byte, baseline http.Handler, path string) {
	j.scenarios, j.answers = append(j.scenarios, s), append(j.answers, answer)
	j.baselines, j.paths = append(j.baselines, baseline), append(j.paths, path)
}

// jumpScenarios stores what the jump pages read, checks the gateway's answers and stores the
// baselines' records. The conversation searched by time is stored only when -only lets its
// rows run, since storing it takes a while.
func jumpScenarios(ctx context.Context, o Options, g *gateway.Gateway, client *http.Client, rdb *respPool, gwURL string,
	handler http.Handler) (jumps, error) {
	var j jumps
	token, err := issue(g, viewer)
	if err != nil {
		return j, err
	}
	gwAround := target{url: gwURL, token: token, body: graphQLBody(aroundQuery, map[string]any{"c": longConversation(), "s": aroundSeq})}
	answer, err := fetchAnswer(ctx, client, gwAround)
	if err != nil {
		return j, err
	}
	if err := writeConversationField(rdb, baselineAroundKey, "history", answer); err != nil {
		return j, fmt.Errorf("storing the around baseline's record: %w", err)
	}
	j.add(scenario{name: aroundName, gateway: gwAround, handler: handler}, answer, aroundBaseline(rdb, baselineAroundKey), "/around")

	warm := fmt.Sprintf(seqAtTimeWarmName, o.TimeLength)
	if !strings.Contains(warm, o.Only) && !strings.Contains(fmt.Sprintf(seqAtTimeColdName, o.TimeLength), o.Only) {
		return j, nil
	}
	fmt.Fprintf(o.Out, "storing a conversation of %d messages, one a second, straight into its chunks...\n", o.TimeLength)
	began := time.Now()
	if err := fillTime(ctx, g, o.TimeLength); err != nil {
		return j, fmt.Errorf("filling the store: %w", err)
	}
	fmt.Fprintf(o.Out, "  (%s)\n", time.Since(began).Round(time.Second))
	timeToken, err := issue(g, timeViewer)
	if err != nil {
		return j, err
	}
	at := searchedTime(o.TimeLength)
	gwTime := target{url: gwURL, token: timeToken, body: graphQLBody(seqAtTimeQuery, map[string]any{"c": timeConversation(), "t": at})}
	answer, err = fetchAnswer(ctx, client, gwTime)
	if err != nil {
		return j, err
	}
	// The first message at or after the time: the one after the message sent just before it.
	want := (at-timeBase)/timeStep + 2
	if !bytes.Contains(answer, []byte(fmt.Sprintf(`"seqAtTime":%d`, want))) {
		return j, fmt.Errorf("seqAtTime answered %s, want seq %d", answer, want)
	}
	if err := writeConversationField(rdb, baselineSeqAtTimeKey, "seqAtTime", answer); err != nil {
		return j, fmt.Errorf("storing the seqAtTime baseline's record: %w", err)
	}
	j.add(scenario{name: warm, gateway: gwTime, handler: handler}, answer, seqAtTimeBaseline(rdb, baselineSeqAtTimeKey), "/seqattime")
	j.seqAtTime = &gwTime
	return j, nil
}

// issue is a day's token for user.
func issue(g *gateway.Gateway, user string) (string, error) {
	return auth.Issue(g.Secret, user, false, 24*time.Hour, time.Now())
}

// fetchAnswer is fetch of an answer that must hold no GraphQL error.
func fetchAnswer(ctx context.Context, client *http.Client, t target) ([]byte, error) {
	answer, err := fetch(ctx, client, t)
	if err != nil {
		return nil, err
	}
	if bytes.Contains(answer, []byte(`"errors"`)) {
		return nil, fmt.Errorf("the gateway answered errors: %s", answer)
	}
	return answer, nil
}

// coldSeqAtTime times n seqAtTime requests, each after every chunk of the conversation of
// length messages was invalidated as a write invalidates it (in Redis, and so in the
// instance's memory, whose chunks carry the conversation's chunks version), so that each
// chunk the search reads comes from the store.
func coldSeqAtTime(ctx context.Context, client *http.Client, g *gateway.Gateway, t target, length, n int) (result, error) {
	var docIDs []string
	for s := int64(1); s <= int64(length); s += im.ChunkSize {
		docIDs = append(docIDs, im.DocID(timeConversation(), s))
	}
	return timeCold(ctx, client, g, t, docIDs, n)
}
