package syncclient

import (
	"sort"
)

// Status is how a seq reads for the replica's user.
type Status string

// Message statuses, as the gateway names them. They only move forward: a MISSING seq may get
// a message, an OK one may be revoked or deleted, a revoked one deleted.
const (
	StatusMissing Status = "MISSING"
	StatusOK      Status = "OK"
	StatusRevoked Status = "REVOKED"
	StatusDeleted Status = "DELETED"
)

func (s Status) rank() int {
	switch s {
	case StatusOK:
		return 1
	case StatusRevoked:
		return 2
	case StatusDeleted:
		return 3
	}
	return 0
}

// Message is one seq of a conversation in the replica. Content is empty unless Status is OK;
// SendID is empty for MISSING.
type Message struct {
	Seq     int64
	Status  Status
	SendID  string
	Content string
}

// Counters are a conversation's numbers for the replica's user.
type Counters struct {
	MaxSeq, MinSeq, ReadSeq, UnreadCount int64
}

// unreadOf is the gateway's formula: maxSeq - max(readSeq, minSeq-1), never negative.
func unreadOf(maxSeq, minSeq, readSeq int64) int64 {
	return max(0, maxSeq-max(readSeq, minSeq-1))
}

// Conversation is one conversation in the replica.
type Conversation struct {
	ID string
	Counters
	// Messages by seq: every seq the replica knows, all within [MinSeq, MaxSeq].
	Messages map[int64]Message
}

// Seqs returns the seqs of the messages held, ascending.
func (c Conversation) Seqs() []int64 {
	out := make([]int64, 0, len(c.Messages))
	for s := range c.Messages {
		out = append(out, s)
	}
	sort.Slice(out, func(i, j int) bool { return out[i] < out[j] })
	return out
}

// Replica is a snapshot of the client's local state.
type Replica struct {
	UserID string
	// Token is the sync token the replica is valid at; Position its position in the user's
	// own log.
	Token       string
	Position    int64
	TotalUnread int64
	// Conversations by ID: those with messages.
	Conversations map[string]Conversation
}

// replicaState is the live replica, guarded by Client.mu.
type replicaState struct {
	userID  string
	cursors streamCursors
	convs   map[string]*Conversation
}

// Replica returns a deep copy of the replica.
func (c *Client) Replica() Replica {
	c.mu.Lock()
	defer c.mu.Unlock()
	r := Replica{UserID: c.replica.userID, Token: c.replica.cursors.String(), Position: c.replica.cursors.user.position,
		Conversations: make(map[string]Conversation, len(c.replica.convs))}
	for id, conv := range c.replica.convs {
		cp := *conv
		cp.Messages = make(map[int64]Message, len(conv.Messages))
		for s, m := range conv.Messages {
			cp.Messages[s] = m
		}
		r.Conversations[id] = cp
		r.TotalUnread += conv.UnreadCount
	}
	return r
}

// totalUnread sums the unread counts; c.mu must be held.
func (c *Client) totalUnread() int64 {
	var n int64
	for _, conv := range c.replica.convs {
		n += conv.UnreadCount
	}
	return n
}

// placement is where an event stands relative to the replica's position.
type placement int

const (
	placeNext      placement = iota // position == last + 1: apply it
	placeDuplicate                  // position <= last: already applied
	placeGap                        // events were missed before it (or it belongs to another log)
)

func (c *Client) place(ev Event) placement {
	c.mu.Lock()
	defer c.mu.Unlock()
	switch ev.Type {
	case EventTooLong:
		return placeNext
	case EventLeave:
		if _, ok := c.replica.cursors.groups[ev.Stream]; !ok {
			return placeDuplicate
		}
		return placeNext
	}
	cur, followed := c.replica.cursors.user, true
	if ev.Stream != "" {
		cur, followed = c.replica.cursors.groups[ev.Stream]
	}
	evCur := eventCursor(ev)
	switch {
	case ev.Type == EventJoin:
		// The gateway starts the stream here: take it unless the replica is there already.
		if followed && cur.epoch == evCur.epoch && evCur.position <= cur.position {
			return placeDuplicate
		}
		return placeNext
	case !followed || cur.epoch != evCur.epoch:
		return placeGap
	case evCur.position <= cur.position:
		return placeDuplicate
	case evCur.position == cur.position+1:
		return placeNext
	}
	return placeGap
}

// apply applies one event placed next: counters at once, bodies marked for fetching.
func (c *Client) apply(ev Event) {
	if ev.Type == EventTooLong {
		return // the caller goes back to the state summary
	}
	c.mu.Lock()
	conv := c.replica.convs[ev.ConversationID]
	known := conv != nil
	var before Counters
	if known {
		before = conv.Counters
	}
	switch ev.Type {
	case EventLeave:
		// The user left the group: the conversation and its stream are gone for them.
		delete(c.replica.convs, ev.ConversationID)
		delete(c.pending, ev.ConversationID)
		delete(c.replica.cursors.groups, ev.Stream)
		conv = nil
	case EventJoin:
		if !known && ev.MaxSeq == 0 {
			break // a conversation without messages is not listed until it has one
		}
		fallthrough
	case EventNewMessage, EventRead, EventClear:
		if !known {
			conv = &Conversation{ID: ev.ConversationID, Messages: map[int64]Message{}}
			c.replica.convs[ev.ConversationID] = conv
		}
		prevMax := conv.MaxSeq
		// Counters only grow on the gateway. Taking the larger value keeps a replica that
		// read a newer summary than an event it replays from stepping back.
		conv.MaxSeq = max(conv.MaxSeq, ev.MaxSeq)
		conv.MinSeq = max(conv.MinSeq, ev.MinSeq)
		conv.ReadSeq = max(conv.ReadSeq, ev.ReadSeq)
		conv.UnreadCount = unreadOf(conv.MaxSeq, conv.MinSeq, conv.ReadSeq)
		if ev.Type == EventJoin && conv.MaxSeq >= max(conv.MinSeq, 1) {
			if _, held := conv.Messages[conv.MaxSeq]; !held {
				c.want(conv.ID, conv.MaxSeq) // a conversation starts with its newest message
			}
		}
		if ev.Type == EventNewMessage {
			c.want(conv.ID, ev.Seq)
			// Seqs between what the replica knew and this one were skipped: a message whose
			// event is still to come, or one that will never be written. Fetch them too.
			from := max(prevMax+1, conv.MinSeq, ev.Seq-int64(c.opts.MaxGapFill))
			for s := from; s < ev.Seq; s++ {
				if _, held := conv.Messages[s]; !held {
					c.want(conv.ID, s)
				}
			}
		}
		c.dropBelowMin(conv)
	case EventRevoke:
		if known {
			c.setStatus(conv, ev.Seq, StatusRevoked)
		}
	case EventDelete:
		if known {
			for _, s := range ev.Seqs {
				c.setStatus(conv, s, StatusDeleted)
			}
		}
	}
	if conv != nil {
		c.fillHoles(conv)
	}
	switch {
	case ev.Type == EventLeave:
	case ev.Stream == "":
		c.replica.cursors.user = eventCursor(ev)
	default:
		c.replica.cursors.groups[ev.Stream] = eventCursor(ev)
	}
	var after Counters
	if conv != nil {
		after = conv.Counters
	}
	applied := Applied{UserID: c.replica.userID, Event: ev, Known: known, Before: before, After: after,
		TotalUnread: c.totalUnread()}
	c.mu.Unlock()
	if c.opts.OnApply != nil {
		c.opts.OnApply(applied)
	}
}

// setStatus moves a held message's status forward (statuses never go back); a seq not held
// is fetched instead, when the replica keeps full history. c.mu must be held.
func (c *Client) setStatus(conv *Conversation, seq int64, st Status) {
	m, held := conv.Messages[seq]
	if !held {
		if c.opts.FullHistory && seq >= conv.MinSeq && seq <= conv.MaxSeq {
			c.want(conv.ID, seq)
		}
		return
	}
	if st.rank() > m.Status.rank() {
		m.Status, m.Content = st, ""
		conv.Messages[seq] = m
	}
}

// want marks a seq's body for fetching. c.mu must be held.
func (c *Client) want(convID string, seq int64) {
	p := c.pending[convID]
	if p == nil {
		p = map[int64]bool{}
		c.pending[convID] = p
	}
	p[seq] = true
}

// dropBelowMin forgets the messages (and pending fetches) below the conversation's min seq:
// they are gone for the user. c.mu must be held.
func (c *Client) dropBelowMin(conv *Conversation) {
	for s := range conv.Messages {
		if s < conv.MinSeq {
			delete(conv.Messages, s)
		}
	}
	for s := range c.pending[conv.ID] {
		if s < conv.MinSeq {
			delete(c.pending[conv.ID], s)
		}
	}
}

// fillHoles marks, for a replica that keeps full history, every seq of the conversation it does
// not hold. c.mu must be held.
func (c *Client) fillHoles(conv *Conversation) {
	if !c.opts.FullHistory {
		return
	}
	for s := max(conv.MinSeq, 1); s <= conv.MaxSeq; s++ {
		if _, held := conv.Messages[s]; !held {
			c.want(conv.ID, s)
		}
	}
}
