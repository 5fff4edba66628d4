package loadfault

import (
	"context"
	"fmt"
	"math/rand"
	"time"

	"github.com/msggate/msggate/syncclient"
)

// The operations of the load, by name as the report shows them.
const (
	opSend     = "send"
	opHistory  = "history page"
	opMessages = "messages by seq"
	opMarkRead = "mark read"
	opRevoke   = "revoke"
	opDelete   = "delete"
	opList     = "conversation list"
)

// opWeights is the load's mix, out of 100.
var opWeights = []struct {
	op     string
	weight int
}{
	{opSend, 30}, {opHistory, 20}, {opMessages, 13}, {opMarkRead, 15},
	{opRevoke, 5}, {opDelete, 7}, {opList, 10},
}

const (
	sendMutation     = `mutation($in: SendMessageInput!) { sendMessage(input: $in) { conversationID seq content sendID } }`
	historyQuery     = `query($c: ID!) { conversation(id: $c) { maxSeq readSeq unreadCount history(limit: 30) { messages { seq status sendID content } } } }`
	messagesQuery    = `query($c: ID!, $s: [Int64!]!) { messages(conversationID: $c, seqs: $s) { seq status sendID content } }`
	markReadMutation = `mutation($c: ID!) { markConversationRead(conversationID: $c) { maxSeq readSeq unreadCount } }`
	revokeMutation   = `mutation($c: ID!, $s: Int64!) { revokeMessage(conversationID: $c, seq: $s) { seq status } }`
	deleteMutation   = `mutation($c: ID!, $s: [Int64!]!, $all: Boolean) { deleteMessages(conversationID: $c, seqs: $s, forEveryone: $all) { seq status } }`
	listQuery        = `{ viewer { totalUnread conversations(first: 20) { nodes { id maxSeq readSeq unreadCount } } } }`
)

// wireMessage is a message as the load's queries select it.
type wireMessage struct {
	Seq     int64   `json:"seq"`
	Status  string  `json:"status"`
	SendID  *string `json:"sendID"`
	Content *string `json:"content"`
}

// counters are a conversation's numbers as an answer gives them.
type counters struct {
	ID          string `json:"id"`
	MaxSeq      int64  `json:"maxSeq"`
	ReadSeq     int64  `json:"readSeq"`
	UnreadCount int64  `json:"unreadCount"`
}

// worker is one user's app: it runs operations one after another, so its answers are in
// order and what it saw last must never go back.
type worker struct {
	u         *user
	rng       *rand.Rand
	instances []string
	client    *graphQLClient
	rec       *recorder
	sends     *sendLedger
	think     time.Duration
	// budget bounds the app's retries against its first attempts, and backoff spaces them
	// (see retryDiscipline): an app that retries at its own pace while the gateway refuses
	// would multiply the load it is refused for.
	budget  *syncclient.RetryBudget
	backoff syncclient.Backoff
	// notBefore: the gateway refused with a hint, and the app sends nothing before it has
	// passed (RFC 9110's Retry-After: how long the service expects to be unavailable to the
	// client), reads included.
	notBefore time.Time
	// lastRead is the highest read seq any answer gave this user, by conversation.
	lastRead map[string]int64
	sent     int
}

// newWorkerRetries returns an app's retry budget and backoff, as retryDiscipline says.
func newWorkerRetries() (*syncclient.RetryBudget, syncclient.Backoff) {
	return syncclient.NewRetryBudget(retryRatio, retryFloor, retryBurst),
		syncclient.Backoff{Min: retryMin, Max: retryMax}
}

// retryDiscipline: each app (worker) keeps a retry budget of its own, as a phone would, with
// syncclient's default numbers: a first attempt deposits 0.2 tokens, a retry spends one, the
// floor adds one every 10 s, and the bucket holds at most 3. A change that failed is retried
// (same clientMsgID) after a jittered backoff from 100 ms growing to 5 s, or after the
// gateway's retry hint plus up to half of it; with the budget empty the app waits for a token,
// the change still pending, instead of sending.
const (
	retryRatio = syncclient.DefaultRetryRatio
	retryFloor = syncclient.DefaultRetryFloor
	retryBurst = syncclient.DefaultRetryBurst
	retryMin   = 100 * time.Millisecond
	retryMax   = 5 * time.Second
)

// run does operations until load ends; a change under way when it does (a send, a mark-read,
// a revoke, a delete) is retried until it is answered or drain ends.
func (w *worker) run(load, drain context.Context) {
	// The first operation comes at a random moment within one pause, so that the load is
	// spread from the start instead of arriving after the shortest pause.
	pause := time.Duration(w.rng.Float64() * float64(w.think))
	for ; sleepCtx(load, pause); pause = w.pause() {
		conv := w.u.convs[w.rng.Intn(len(w.u.convs))]
		switch w.pickOp() {
		case opSend:
			w.send(drain, conv)
		case opHistory:
			w.history(load, conv)
		case opMessages:
			w.messages(load, conv)
		case opMarkRead:
			w.markRead(drain, conv)
		case opRevoke:
			w.revoke(drain, conv)
		case opDelete:
			w.delete(drain, conv)
		case opList:
			w.list(load)
		}
	}
}

// pause is a think time drawn around the mean, so users do not move in step.
func (w *worker) pause() time.Duration {
	return time.Duration((0.5 + w.rng.Float64()) * float64(w.think))
}

func (w *worker) pickOp() string {
	n := w.rng.Intn(100)
	for _, o := range opWeights {
		if n < o.weight {
			return o.op
		}
		n -= o.weight
	}
	return opList
}

// instance picks the gateway for an attempt: at random for a first attempt, then the other
// ones in turn, as a client behind a load balancer that retries elsewhere would.
func (w *worker) instance(first, attempt int) string {
	return w.instances[(first+attempt)%len(w.instances)]
}

// call sends one read to a random instance and records it; a read is not retried (the user
// moves on), a change is (mutate).
func (w *worker) call(ctx context.Context, op, query string, vars map[string]any, out any) (ok bool, began time.Time) {
	if !sleepCtx(ctx, time.Until(w.notBefore)) {
		return false, time.Now()
	}
	w.budget.Deposit()
	began = time.Now()
	r, err := w.client.call(ctx, w.instance(w.rng.Intn(len(w.instances)), 0), w.u.token, query, vars, out)
	if ctx.Err() != nil && r.code != "" {
		return false, began // the run ended under it: not the gateway's failure
	}
	w.rec.record(op, began, true, r, err)
	w.holdOff(r)
	return r.code == "", began
}

// holdOff notes a refusal's hint: the app's next request waits for it, plus up to half of it
// at random (as syncclient.Backoff does), so that apps refused together do not return
// together.
func (w *worker) holdOff(r reply) {
	if r.refused() && r.retryAfter > 0 {
		w.notBefore = time.Now().Add(r.retryAfter + time.Duration(w.rng.Int63n(int64(r.retryAfter/2)+1)))
	}
}

// mutate sends one change, retrying it on any failure or refusal, each time on the next
// instance, until it is answered or ctx ends, as an app does: a change that failed may have
// been applied without its devices being told, and only its retry tells them. Every change
// msggate offers is idempotent (a send through its clientMsgID). Retries keep the app's retry
// discipline (retryDiscipline). allowed lists error codes that are an answer (acting on a
// message deleted meanwhile). It reports whether the change was answered, and after how
// many failed attempts.
func (w *worker) mutate(ctx context.Context, op, query string, vars map[string]any, out any, allowed ...string) (answered bool, failures int) {
	first := w.rng.Intn(len(w.instances))
	w.backoff.Reset()
	for attempt := 0; ctx.Err() == nil; attempt++ {
		if !sleepCtx(ctx, time.Until(w.notBefore)) {
			return false, attempt
		}
		if attempt == 0 {
			w.budget.Deposit()
		} else if !w.awaitBudget(ctx) {
			return false, attempt
		}
		began := time.Now()
		r, err := w.client.call(ctx, w.instance(first, attempt), w.u.token, query, vars, out)
		if ctx.Err() != nil && r.code != "" {
			return false, attempt
		}
		for _, a := range allowed {
			if r.code == a {
				r.code = ""
			}
		}
		w.rec.record(op, began, attempt == 0, r, err)
		if r.code == "" {
			return true, attempt
		}
		w.holdOff(r)
		if !sleepCtx(ctx, w.backoff.Next(r.retryAfter)) {
			return false, attempt + 1
		}
	}
	return false, 0
}

// awaitBudget takes a token for one retry, waiting while the app's budget is empty; false
// when ctx ended first.
func (w *worker) awaitBudget(ctx context.Context) bool {
	for {
		ok, wait := w.budget.TryRetry()
		if ok {
			return true
		}
		if !sleepCtx(ctx, wait) {
			return false
		}
	}
}

// send sends one message, retrying with the same clientMsgID on any failure until it is
// answered or ctx ends.
func (w *worker) send(ctx context.Context, conv *conversation) {
	w.sent++
	s := &sendRecord{conv: conv, sender: w.u.id,
		clientMsgID: fmt.Sprintf("%s-%d", w.u.id, w.sent),
		content:     fmt.Sprintf("%s #%d in %s", w.u.id, w.sent, conv.id)}
	w.sends.add(s)
	in := map[string]any{"contentType": 101, "content": s.content, "clientMsgID": s.clientMsgID}
	if conv.groupID != "" {
		in["groupID"] = conv.groupID
	} else {
		for _, m := range conv.members {
			if m != w.u.id {
				in["recvID"] = m
			}
		}
	}
	var out struct {
		SendMessage struct {
			ConversationID string `json:"conversationID"`
			Seq            int64  `json:"seq"`
			Content        string `json:"content"`
			SendID         string `json:"sendID"`
		} `json:"sendMessage"`
	}
	answered, failures := w.mutate(ctx, opSend, sendMutation, map[string]any{"in": in}, &out)
	s.failures = failures
	if !answered {
		return
	}
	m := out.SendMessage
	if m.ConversationID != conv.id || m.Content != s.content || m.SendID != w.u.id || m.Seq < 1 {
		w.rec.violate("send %s answered %+v, want conversation %s, content %q, sender %s, a seq",
			s.clientMsgID, m, conv.id, s.content, w.u.id)
	}
	if prev := w.sends.ack(s, m.Seq); prev != nil {
		w.rec.violate("%s seq %d answered to two sends: %s and %s", conv.id, m.Seq, prev.clientMsgID, s.clientMsgID)
	}
	w.lastRead[conv.id] = max(w.lastRead[conv.id], m.Seq)
}

func (w *worker) history(ctx context.Context, conv *conversation) {
	var out struct {
		Conversation struct {
			counters
			History struct {
				Messages []wireMessage `json:"messages"`
			} `json:"history"`
		} `json:"conversation"`
	}
	ok, began := w.call(ctx, opHistory, historyQuery, map[string]any{"c": conv.id}, &out)
	if !ok {
		return
	}
	c := out.Conversation.counters
	c.ID = conv.id
	w.checkCounters(opHistory, c)
	w.checkMessages(opHistory, conv, began, out.Conversation.History.Messages)
}

func (w *worker) messages(ctx context.Context, conv *conversation) {
	picked := w.sends.pickAcked(w.rng, conv, 10, "")
	if len(picked) == 0 {
		return
	}
	seqs := make([]int64, len(picked))
	for i, s := range picked {
		seqs[i] = s.seq
	}
	var out struct {
		Messages []wireMessage `json:"messages"`
	}
	ok, began := w.call(ctx, opMessages, messagesQuery, map[string]any{"c": conv.id, "s": seqs}, &out)
	if !ok {
		return
	}
	if len(out.Messages) != len(seqs) {
		w.rec.violate("%s: messages%v answered %d messages for %d acknowledged seqs", w.u.id, seqs, len(out.Messages), len(seqs))
	}
	w.checkMessages(opMessages, conv, began, out.Messages)
}

func (w *worker) markRead(ctx context.Context, conv *conversation) {
	var out struct {
		MarkConversationRead counters `json:"markConversationRead"`
	}
	if ok, _ := w.mutate(ctx, opMarkRead, markReadMutation, map[string]any{"c": conv.id}, &out); ok {
		c := out.MarkConversationRead
		c.ID = conv.id
		w.checkCounters(opMarkRead, c)
	}
}

// revoke revokes one of the user's own messages. NOT_FOUND is a legitimate answer: the
// message was deleted for everyone meanwhile.
func (w *worker) revoke(ctx context.Context, conv *conversation) {
	picked := w.sends.pickAcked(w.rng, conv, 1, w.u.id)
	if len(picked) == 0 {
		return
	}
	s := picked[0]
	var out struct {
		RevokeMessage wireMessage `json:"revokeMessage"`
	}
	if ok, _ := w.mutate(ctx, opRevoke, revokeMutation, map[string]any{"c": conv.id, "s": s.seq}, &out, "NOT_FOUND"); ok && out.RevokeMessage.Status != "" {
		w.sends.markRevoked(s)
	}
}

// delete deletes a message for the user, or one of their own for everyone.
func (w *worker) delete(ctx context.Context, conv *conversation) {
	forEveryone := w.rng.Intn(3) == 0
	owner := ""
	if forEveryone {
		owner = w.u.id
	}
	picked := w.sends.pickAcked(w.rng, conv, 1, owner)
	if len(picked) == 0 {
		return
	}
	s := picked[0]
	var out struct {
		DeleteMessages []wireMessage `json:"deleteMessages"`
	}
	vars := map[string]any{"c": conv.id, "s": []int64{s.seq}, "all": forEveryone}
	if ok, _ := w.mutate(ctx, opDelete, deleteMutation, vars, &out, "NOT_FOUND"); ok && len(out.DeleteMessages) == 1 {
		if forEveryone {
			w.sends.markDeleted(s, "")
		} else {
			w.sends.markDeleted(s, w.u.id)
		}
	}
}

func (w *worker) list(ctx context.Context) {
	var out struct {
		Viewer struct {
			TotalUnread   int64 `json:"totalUnread"`
			Conversations struct {
				Nodes []counters `json:"nodes"`
			} `json:"conversations"`
		} `json:"viewer"`
	}
	if ok, _ := w.call(ctx, opList, listQuery, nil, &out); !ok {
		return
	}
	if out.Viewer.TotalUnread < 0 {
		w.rec.violate("%s: totalUnread %d", w.u.id, out.Viewer.TotalUnread)
	}
	for _, c := range out.Viewer.Conversations.Nodes {
		w.checkCounters(opList, c)
	}
}

// checkCounters holds an answer's counters to their promises: unread never negative and
// consistent with the seqs, and the read seq never lower than one this user saw before.
func (w *worker) checkCounters(op string, c counters) {
	if c.UnreadCount < 0 {
		w.rec.violate("%s: %s of %s: unreadCount %d", w.u.id, op, c.ID, c.UnreadCount)
	}
	if c.ReadSeq > c.MaxSeq && c.MaxSeq > 0 {
		w.rec.violate("%s: %s of %s: readSeq %d above maxSeq %d", w.u.id, op, c.ID, c.ReadSeq, c.MaxSeq)
	}
	if last := w.lastRead[c.ID]; c.ReadSeq < last {
		w.rec.violate("%s: %s of %s: readSeq %d after an answer gave %d", w.u.id, op, c.ID, c.ReadSeq, last)
	}
	w.lastRead[c.ID] = max(w.lastRead[c.ID], c.ReadSeq)
}

// checkMessages holds messages read at began to what was acknowledged before it: an answered
// send is there with its content and sender, unless a revoke or delete acknowledged before
// began hides it; and what such a change hides is never served as it was.
func (w *worker) checkMessages(op string, conv *conversation, began time.Time, msgs []wireMessage) {
	for _, m := range msgs {
		s, ok := w.sends.lookup(conv.id, m.Seq, w.u.id)
		if !ok || s.ackedAt.After(began) {
			continue
		}
		before := func(t time.Time) bool { return !t.IsZero() && t.Before(began) }
		hidden, revoked := before(s.deletedAt) || before(s.hiddenAt), before(s.revokedAt)
		switch {
		case m.Status == "MISSING":
			w.rec.violate("%s: %s of %s seq %d read MISSING; it was acknowledged to %s (%s) before the read",
				w.u.id, op, conv.id, m.Seq, s.sender, s.clientMsgID)
		case hidden && m.Status != "DELETED":
			w.rec.violate("%s: %s of %s seq %d read %s after its delete was acknowledged", w.u.id, op, conv.id, m.Seq, m.Status)
		case revoked && m.Status == "OK":
			w.rec.violate("%s: %s of %s seq %d read OK after its revoke was acknowledged", w.u.id, op, conv.id, m.Seq)
		case m.Status == "OK" && (m.Content == nil || *m.Content != s.content || m.SendID == nil || *m.SendID != s.sender):
			w.rec.violate("%s: %s of %s seq %d read %s by %s, acknowledged as %q by %s",
				w.u.id, op, conv.id, m.Seq, deref(m.Content), deref(m.SendID), s.content, s.sender)
		}
	}
}

func deref(p *string) string {
	if p == nil {
		return "<null>"
	}
	return *p
}
