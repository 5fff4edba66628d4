package loadfault

import (
	"context"
	"fmt"
	"math/rand"
	"slices"
	"sync"
	"time"
)

// conversation is one conversation of the load: a single chat between two users or a group.
type conversation struct {
	id      string
	groupID string // "" for a single chat
	members []string
}

// user is one user of the load and the conversations they take part in.
type user struct {
	id    string
	token string
	convs []*conversation
}

// sendRecord is one message a user sent (or tried to): what it is, and what the gateway
// answered.
type sendRecord struct {
	conv        *conversation
	sender      string
	clientMsgID string
	content     string
	failures    int // attempts that failed before the one answered (or all, if none was)

	// Set once answered, guarded by sendLedger.mu.
	seq        int64
	ackedAt    time.Time
	revokedAt  time.Time // revoke acknowledged
	deletedAt  time.Time // delete for everyone acknowledged
	hiddenFrom map[string]time.Time
}

// sendLedger is every send of the run, answered or not.
type sendLedger struct {
	mu    sync.Mutex
	all   []*sendRecord
	acked map[string]map[int64]*sendRecord // conversation ID → seq → send
}

func newSendLedger() *sendLedger {
	return &sendLedger{acked: map[string]map[int64]*sendRecord{}}
}

func (l *sendLedger) add(s *sendRecord) {
	l.mu.Lock()
	l.all = append(l.all, s)
	l.mu.Unlock()
}

// ack records the seq s was answered with; it returns the send already answered with that
// seq in that conversation, if any: two messages at one seq.
func (l *sendLedger) ack(s *sendRecord, seq int64) *sendRecord {
	l.mu.Lock()
	defer l.mu.Unlock()
	s.seq, s.ackedAt = seq, time.Now()
	bySeq := l.acked[s.conv.id]
	if bySeq == nil {
		bySeq = map[int64]*sendRecord{}
		l.acked[s.conv.id] = bySeq
	}
	if prev := bySeq[seq]; prev != nil && prev != s {
		return prev
	}
	bySeq[seq] = s
	return nil
}

// pickAcked returns up to n answered sends of conv, chosen at random, mine only when
// ownOnly.
func (l *sendLedger) pickAcked(rng *rand.Rand, conv *conversation, n int, ownOnly string) []*sendRecord {
	l.mu.Lock()
	defer l.mu.Unlock()
	var cands []*sendRecord
	for _, s := range l.acked[conv.id] {
		if ownOnly == "" || s.sender == ownOnly {
			cands = append(cands, s)
		}
	}
	slices.SortFunc(cands, func(a, b *sendRecord) int { return int(a.seq - b.seq) })
	rng.Shuffle(len(cands), func(i, j int) { cands[i], cands[j] = cands[j], cands[i] })
	return cands[:min(n, len(cands))]
}

// sendView is what a reader of one seq must see of an answered send.
type sendView struct {
	sender, clientMsgID, content  string
	ackedAt, revokedAt, deletedAt time.Time
	hiddenAt                      time.Time // deleted for the reader only
}

// lookup returns what userID must see of the answered send at seq of conv.
func (l *sendLedger) lookup(convID string, seq int64, userID string) (sendView, bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	s, ok := l.acked[convID][seq]
	if !ok {
		return sendView{}, false
	}
	return sendView{sender: s.sender, clientMsgID: s.clientMsgID, content: s.content,
		ackedAt: s.ackedAt, revokedAt: s.revokedAt, deletedAt: s.deletedAt, hiddenAt: s.hiddenFrom[userID]}, true
}

func (l *sendLedger) markRevoked(s *sendRecord) {
	l.mu.Lock()
	if s.revokedAt.IsZero() {
		s.revokedAt = time.Now()
	}
	l.mu.Unlock()
}

func (l *sendLedger) markDeleted(s *sendRecord, forUser string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if forUser == "" {
		if s.deletedAt.IsZero() {
			s.deletedAt = time.Now()
		}
		return
	}
	if s.hiddenFrom == nil {
		s.hiddenFrom = map[string]time.Time{}
	}
	if _, ok := s.hiddenFrom[forUser]; !ok {
		s.hiddenFrom[forUser] = time.Now()
	}
}

// buildUsers makes n users, each in single chats with the two users on either side of them
// (a ring) and in one group of up to groupSize.
func buildUsers(n int) ([]*user, []*conversation) {
	users := make([]*user, n)
	for i := range users {
		users[i] = &user{id: fmt.Sprintf("u%04d", i)}
	}
	var convs []*conversation
	seen := map[string]bool{}
	for i, u := range users {
		for _, d := range []int{1, 2} {
			peer := users[(i+d)%n]
			if peer == u {
				continue
			}
			a, b := min(u.id, peer.id), max(u.id, peer.id)
			c := &conversation{id: "si_" + a + "_" + b, members: []string{a, b}}
			if seen[c.id] {
				continue
			}
			seen[c.id] = true
			convs = append(convs, c)
			u.convs = append(u.convs, c)
			peer.convs = append(peer.convs, c)
		}
	}
	for g := 0; g*groupSize < n; g++ {
		c := &conversation{groupID: fmt.Sprintf("g%03d", g)}
		c.id = "sg_" + c.groupID
		for _, u := range users[g*groupSize : min(n, (g+1)*groupSize)] {
			c.members = append(c.members, u.id)
			u.convs = append(u.convs, c)
		}
		convs = append(convs, c)
	}
	return users, convs
}

// groupSize is how many users share a group conversation.
const groupSize = 10

// sleepCtx waits d or until ctx ends; false when ctx ended.
func sleepCtx(ctx context.Context, d time.Duration) bool {
	if d <= 0 {
		return ctx.Err() == nil
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C:
		return true
	}
}
