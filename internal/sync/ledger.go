package sync

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"log/slog"
	gosync "sync"
	"time"

	"github.com/graph-gophers/dataloader/v7"

	"github.com/msggate/msggate/internal/cache"
	"github.com/msggate/msggate/internal/chunkstore"
	"github.com/msggate/msggate/internal/im"
)

// Options configures a Ledger. The zero value is usable.
type Options struct {
	// BlockSize is how many seqs one MongoDB reservation hands to the Redis allocator. Larger
	// blocks mean fewer MongoDB round trips per message. Default 100.
	BlockSize int64
	// Logger receives cache failures that were worked around. Default slog.Default().
	Logger *slog.Logger
	// IntentHandoff is how long a writer has to announce its change before the relay may
	// (chunkstore.Intent.Due). Default DefaultIntentHandoff.
	IntentHandoff time.Duration
	// Fault, when set, is called at each step of a change (after its intent is recorded,
	// after the store changed, after the announcement; for a group's member change, "resync"
	// before its live devices are told); an error stops the writer there, as if its process
	// had died (ErrWriterStopped). For tests of what a dead writer leaves.
	Fault func(step string) error
}

// Ledger is the seq ledger: seq accounting (allocation, max, min and read seqs) and
// membership (access, groups, conversation lists). Its changes are made through its Outbox
// and announced in its EventLog, which it makes with it. It is safe for concurrent use.
type Ledger struct {
	store *chunkstore.Store
	cache *cache.Cache
	opts  Options
	// token names this instance: to the seq allocator, and as the owner of its intents.
	token  string
	outbox *Outbox
	events *EventLog
	// lists and userSeqs read the conversation lists and read state Redis misses, many users
	// a query (store_loaders.go).
	lists    *storeQueue[string, storedList]
	convSeqs *storeQueue[string, chunkstore.ConversationSeqs]
	userSeqs *dataloader.Loader[chunkstore.UserSeqKey, chunkstore.UserSeqs]
	// lastLists remembers the conversation lists read last, so that the next read of one
	// can take its states in the same round trip (UserConversations); lastPages, the
	// conversations the last page of each user's list needed (ConversationPage).
	lastLists, lastPages listMemo
}

// NewLedger returns a Ledger over the store and the cache, with this instance's Outbox and
// an EventLog that reads users' state through the Ledger.
func NewLedger(store *chunkstore.Store, c *cache.Cache, opts Options) *Ledger {
	if opts.BlockSize <= 0 {
		opts.BlockSize = DefaultBlockSize
	}
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	if opts.IntentHandoff <= 0 {
		opts.IntentHandoff = DefaultIntentHandoff
	}
	b := make([]byte, 12)
	_, _ = rand.Read(b)
	l := &Ledger{store: store, cache: c, opts: opts, token: hex.EncodeToString(b)}
	l.outbox = &Outbox{store: store, cache: c, token: l.token, handoff: opts.IntentHandoff, fault: opts.Fault, logger: opts.Logger}
	l.events = &EventLog{cache: c, state: l}
	l.lists = newStoreQueue(l.loadLists, storeWait)
	// A seq read is a find by _id: a lone reader (a history page Redis misses) is not kept
	// waiting for company; readers that come while it runs share the next one.
	l.convSeqs = newStoreQueue(store.FindConversationSeqs, 0)
	l.userSeqs = newStoreLoader(l.loadUserSeqs)
	return l
}

// DefaultBlockSize is Options.BlockSize's default.
const DefaultBlockSize = 100

// Outbox is where this instance's writers record the intents of their changes (intent.go).
func (l *Ledger) Outbox() *Outbox { return l.outbox }

// Events is the event log the ledger announces its changes in.
func (l *Ledger) Events() *EventLog { return l.events }

// allocWait bounds how long Allocate waits for another instance's block refill: longer than
// the cache's refill lock lives, so a refiller that died holding it is outwaited.
const allocWait = 12 * time.Second

// Allocate hands out n consecutive seqs of a conversation and returns the first. Seqs come from
// the Redis allocator; when its block is used up (or its state is gone) this caller takes the
// refill lock, reserves a block in MongoDB, and installs it. After a loss of Redis state the
// allocator resumes right after the highest stored seq, so no gap opens; a seq handed out
// before the loss and used after it is caught by the chunk store's conditional slot write.
func (l *Ledger) Allocate(ctx context.Context, conversationID string, n int64) (int64, error) {
	firsts, err := l.AllocateMany(ctx, []cache.AllocRequest{{ConversationID: conversationID, N: n}})
	if err != nil {
		return 0, err
	}
	return firsts[0], nil
}

// maxBlockRefills bounds the blocks AllocateMany reserves in MongoDB side by side.
const maxBlockRefills = 8

// maxAllocAsks bounds the conversations AllocateMany asks Redis for in one round trip: each
// one whose block ran out takes its refill lock then, and all of them must be refilled well
// within the lock's life (cache.Options.AllocLockTTL).
const maxAllocAsks = 64

// AllocateMany is Allocate for many conversations (each once) at once: one Redis round trip
// for up to maxAllocAsks of them while their blocks last, and the blocks that ran out refilled
// side by side. It returns the first seq of each, aligned with reqs. It waits for other
// instances' refills for at most allocWait at a time.
func (l *Ledger) AllocateMany(ctx context.Context, reqs []cache.AllocRequest) ([]int64, error) {
	for _, r := range reqs {
		if r.N <= 0 {
			return nil, im.Errorf(im.EINTERNAL, "allocate %d seqs", r.N)
		}
	}
	firsts := make([]int64, len(reqs))
	pending := make([]int, len(reqs)) // indexes into reqs still without seqs
	for i := range pending {
		pending[i] = i
	}
	deadline := time.Now().Add(allocWait)
	backoff := time.Millisecond
	for len(pending) > 0 {
		if time.Now().After(deadline) {
			return nil, im.Errorf(im.EUNAVAILABLE, "seq allocator for %s is busy; retry", reqs[pending[0]].ConversationID)
		}
		asked, later := pending[:min(len(pending), maxAllocAsks)], pending[min(len(pending), maxAllocAsks):]
		ask := make([]cache.AllocRequest, len(asked))
		for j, i := range asked {
			ask[j] = reqs[i]
		}
		answers, err := l.cache.AllocSeqsMany(ctx, ask, l.token)
		if err != nil {
			return nil, err
		}
		var refill, busy []int
		for j, a := range answers {
			switch a.State {
			case cache.Allocated:
				firsts[asked[j]] = a.First
			case cache.NeedInit, cache.NeedBlock:
				refill = append(refill, asked[j])
			default:
				busy = append(busy, asked[j])
			}
		}
		if err := l.refillBlocks(ctx, reqs, refill); err != nil {
			return nil, err
		}
		pending = append(append(append([]int(nil), later...), refill...), busy...)
		if len(busy) < len(asked) {
			deadline = time.Now().Add(allocWait) // progress: the wait starts again
		}
		if len(busy) < len(asked) || len(later) > 0 {
			continue
		}
		select {
		case <-ctx.Done():
			return nil, im.Unavailable("seq allocator", ctx.Err())
		case <-time.After(backoff):
		}
		if backoff < 50*time.Millisecond {
			backoff *= 2
		}
	}
	return firsts, nil
}

// refillBlocks reserves a block in MongoDB for each of reqs[which], whose refill locks this
// caller holds, and installs it, maxBlockRefills at a time.
func (l *Ledger) refillBlocks(ctx context.Context, reqs []cache.AllocRequest, which []int) error {
	sem := make(chan struct{}, maxBlockRefills)
	errs := make([]error, len(which))
	var wg gosync.WaitGroup
	for j, i := range which {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer func() { <-sem; wg.Done() }()
			r := reqs[i]
			doc, err := l.store.ReserveSeqBlock(ctx, r.ConversationID, l.opts.BlockSize+r.N)
			if err == nil {
				_, err = l.cache.SetAllocBlock(ctx, r.ConversationID, l.token, doc.MaxSeq, doc.ReservedSeq)
			}
			errs[j] = err
		}()
	}
	wg.Wait()
	return errors.Join(errs...)
}

// States returns userID's state in each conversation (aligned with conversationIDs): one
// Redis round trip, plus, for what Redis misses, one MongoDB query per collection and one
// round trip to fill Redis. A Redis failure is logged and served from MongoDB.
func (l *Ledger) States(ctx context.Context, userID string, conversationIDs []string) ([]im.SeqState, error) {
	res, _, err := l.statesMany(ctx, []cache.StateQuery{{UserID: userID, ConversationIDs: conversationIDs}}, false)
	if err != nil {
		return nil, err
	}
	return res[0], nil
}

// statesMany answers several users' state queries with one Redis round trip (and, for misses,
// one MongoDB query per collection and one more round trip to fill Redis). With withHeads it
// also returns each query's user's event log head, read in the same round trip; a Redis
// failure is then an error, since no token can be given without the log.
func (l *Ledger) statesMany(ctx context.Context, queries []cache.StateQuery, withHeads bool) ([][]im.SeqState, []im.Cursor, error) {
	cached, err := l.cache.GetStatesMany(ctx, queries, withHeads)
	return l.statesFromCache(ctx, queries, withHeads, cached, err)
}

// statesFromCache completes what a cache read of queries' states answered (err: it failed)
// from MongoDB, and fills Redis with what it read there.
func (l *Ledger) statesFromCache(ctx context.Context, queries []cache.StateQuery, withHeads bool, cached cache.States, err error) ([][]im.SeqState, []im.Cursor, error) {
	out := make([][]im.SeqState, len(queries))
	if err != nil {
		if withHeads {
			return nil, nil, err
		}
		l.opts.Logger.WarnContext(ctx, "reading seq state from MongoDB: cache failed", "err", err)
		cached = cache.States{Conversations: make([][]cache.ConversationState, len(queries)), Users: make([][]cache.UserState, len(queries))}
		for i, q := range queries {
			cached.Conversations[i] = make([]cache.ConversationState, len(q.ConversationIDs))
			cached.Users[i] = make([]cache.UserState, len(q.ConversationIDs))
		}
	}
	convMissSet := map[string]bool{}
	var convMiss []string
	var userMiss []chunkstore.UserSeqKey
	for qi, q := range queries {
		out[qi] = make([]im.SeqState, len(q.ConversationIDs))
		for i, id := range q.ConversationIDs {
			cv, us := cached.Conversations[qi][i], cached.Users[qi][i]
			out[qi][i] = im.SeqState{ConversationID: id, MaxSeq: cv.MaxSeq, MinSeq: cv.MinSeq, LastTime: cv.LastTime,
				ReadSeq: us.ReadSeq, UserMinSeq: us.UserMinSeq, ChunksVersion: cv.ChunksVersion}
			if !cv.Cached && !convMissSet[id] {
				convMissSet[id] = true
				convMiss = append(convMiss, id)
			}
			if q.UserID != "" && !us.Cached {
				userMiss = append(userMiss, chunkstore.UserSeqKey{ConversationID: id, UserID: q.UserID})
			}
		}
	}
	if len(convMiss) == 0 && len(userMiss) == 0 {
		return out, cached.Heads, nil
	}
	seqDocs, err := l.convSeqs.load(ctx, convMiss)
	if err != nil {
		return nil, nil, err
	}
	userDocs, err := l.findUserSeqs(ctx, userMiss)
	if err != nil {
		return nil, nil, err
	}
	var convFill []cache.ConversationRaise
	var userFill []cache.UserRaise
	for qi, q := range queries {
		for i, id := range q.ConversationIDs {
			if !cached.Conversations[qi][i].Cached {
				d := seqDocs[id]
				out[qi][i].MaxSeq, out[qi][i].MinSeq, out[qi][i].LastTime = d.MaxSeq, d.MinSeq, d.LastTime
				if convMissSet[id] {
					delete(convMissSet, id)
					convFill = append(convFill, cache.ConversationRaise{ConversationID: id, MaxSeq: &d.MaxSeq, MinSeq: &d.MinSeq, LastTime: &d.LastTime})
				}
			}
			if q.UserID != "" && !cached.Users[qi][i].Cached {
				d := userDocs[chunkstore.UserSeqKey{ConversationID: id, UserID: q.UserID}]
				out[qi][i].ReadSeq, out[qi][i].UserMinSeq = d.ReadSeq, d.MinSeq
				userFill = append(userFill, cache.UserRaise{UserID: q.UserID, ConversationID: id, ReadSeq: &d.ReadSeq, UserMinSeq: &d.MinSeq})
			}
		}
	}
	if err := l.cache.RaiseStates(ctx, convFill, userFill); err != nil {
		l.opts.Logger.WarnContext(ctx, "filling seq state cache failed", "err", err)
	}
	return out, cached.Heads, nil
}

// RecordStored records what a write stored: each conversation's highest stored seq and newest
// send time, and each sender's read seq (a sender has read their own message). MongoDB first,
// then the cache; the write is acknowledged only after this returns.
func (l *Ledger) RecordStored(ctx context.Context, msgs []StoredMessage) error {
	stored := map[string]chunkstore.StoredMax{}
	senderReads := map[chunkstore.UserSeqKey]int64{}
	for _, m := range msgs {
		s := stored[m.ConversationID]
		s.Seq, s.Time = max(s.Seq, m.Seq), max(s.Time, m.SendTime)
		stored[m.ConversationID] = s
		k := chunkstore.UserSeqKey{ConversationID: m.ConversationID, UserID: m.SendID}
		senderReads[k] = max(senderReads[k], m.Seq)
	}
	if err := l.store.RaiseMaxSeqs(ctx, stored); err != nil {
		return err
	}
	if err := l.store.RaiseReadSeqs(ctx, senderReads); err != nil {
		return err
	}
	convs := make([]cache.ConversationRaise, 0, len(stored))
	for conv, m := range stored {
		r := cache.ConversationRaise{ConversationID: conv, MaxSeq: &m.Seq, LastTime: &m.Time}
		if c, err := im.ParseConversationID(conv); err == nil && !c.Kind.IsGroup() {
			r.Users = c.UserIDs // their order moves the conversation forward; a group's is read from its state
		}
		convs = append(convs, r)
	}
	users := make([]cache.UserRaise, 0, len(senderReads))
	for k, seq := range senderReads {
		users = append(users, cache.UserRaise{UserID: k.UserID, ConversationID: k.ConversationID, ReadSeq: &seq})
	}
	l.raiseCache(ctx, convs, users)
	return nil
}

// raiseCache pushes raised values to the cache. A failure is logged, not returned: MongoDB
// already has the values, and a Redis that fails a write is down for reads too, which then
// come from MongoDB.
func (l *Ledger) raiseCache(ctx context.Context, convs []cache.ConversationRaise, users []cache.UserRaise) {
	if err := l.cache.RaiseStates(ctx, convs, users); err != nil {
		l.opts.Logger.WarnContext(ctx, "raising cached seq state failed", "err", err)
	}
}

// MarkRead moves userID's read seq in a conversation up to readSeq, or to the max seq when
// readSeq is nil. It is monotonic (a lower value changes nothing), idempotent, and clamped to
// the max seq. It returns the state after the change and the read seq before it, so the caller
// knows which seqs were newly read.
func (l *Ledger) MarkRead(ctx context.Context, userID, conversationID string, readSeq *int64) (after im.SeqState, prevReadSeq int64, err error) {
	st, err := l.States(ctx, userID, []string{conversationID})
	if err != nil {
		return im.SeqState{}, 0, err
	}
	s := st[0]
	prev := s.ReadSeq
	target := s.MaxSeq
	if readSeq != nil {
		if *readSeq < 0 {
			return im.SeqState{}, 0, im.Errorf(im.EINVALID, "readSeq must not be negative")
		}
		if *readSeq < target {
			target = *readSeq
		}
	}
	if target <= s.ReadSeq {
		// Nothing moves, so nothing is announced: a read whose announcement failed before is
		// announced from its intent (see intent.go).
		return s, prev, nil
	}
	intent := &chunkstore.Intent{Kind: chunkstore.IntentRead, ConversationID: conversationID, UserID: userID, Target: target}
	key := chunkstore.UserSeqKey{ConversationID: conversationID, UserID: userID}
	err = l.outbox.Change(ctx, intent, func() error {
		return l.store.RaiseReadSeqs(ctx, map[chunkstore.UserSeqKey]int64{key: target})
	}, func() error {
		s.ReadSeq = target
		// The event raises the cached read seq too, and its counters are what the user's
		// other devices will show; the caller gets the same numbers.
		evs, err := l.events.announceStates(ctx, im.Event{Type: im.EventRead, ConversationID: conversationID}, []string{userID}, []im.SeqState{s}, readKey(conversationID, target))
		if err == nil {
			applyCounters(&s, evs[0])
		}
		return err
	})
	if err != nil {
		return im.SeqState{}, 0, err
	}
	return s, prev, nil
}

// applyCounters takes what an event says about the user's state (values only go up).
func applyCounters(s *im.SeqState, ev im.Event) {
	s.MaxSeq = max(s.MaxSeq, ev.MaxSeq)
	s.ReadSeq = max(s.ReadSeq, ev.ReadSeq)
}

// ClearForUser hides a conversation's history up to now from userID only: their min seq moves
// past the max seq, so their unread count becomes 0 and later messages show as usual.
func (l *Ledger) ClearForUser(ctx context.Context, userID, conversationID string) (im.SeqState, error) {
	st, err := l.States(ctx, userID, []string{conversationID})
	if err != nil {
		return im.SeqState{}, err
	}
	s := st[0]
	next := s.MaxSeq + 1
	if next <= s.UserMinSeq {
		// Nothing new to clear, so nothing is announced: a clear whose announcement failed
		// before is announced from its intent (see intent.go).
		return s, nil
	}
	intent := &chunkstore.Intent{Kind: chunkstore.IntentClear, ConversationID: conversationID, UserID: userID, Target: next}
	key := chunkstore.UserSeqKey{ConversationID: conversationID, UserID: userID}
	err = l.outbox.Change(ctx, intent, func() error {
		return l.store.RaiseUserMinSeqs(ctx, map[chunkstore.UserSeqKey]int64{key: next})
	}, func() error {
		l.raiseCache(ctx, nil, []cache.UserRaise{{UserID: userID, ConversationID: conversationID, UserMinSeq: &next}})
		s.UserMinSeq = next
		_, err := l.events.announceStates(ctx, im.Event{Type: im.EventClear, ConversationID: conversationID}, []string{userID}, []im.SeqState{s}, userClearKey(conversationID, next))
		return err
	})
	if err != nil {
		return im.SeqState{}, err
	}
	return s, nil
}

// ClearForEveryone moves the conversation's min seq past its max seq: the history up to now is
// gone for every member. It returns userID's state after the change.
func (l *Ledger) ClearForEveryone(ctx context.Context, userID, conversationID string) (im.SeqState, error) {
	st, err := l.States(ctx, userID, []string{conversationID})
	if err != nil {
		return im.SeqState{}, err
	}
	s := st[0]
	next := s.MaxSeq + 1
	if next <= s.MinSeq {
		// Nothing new to clear, so nothing is announced: a clear whose announcement failed
		// before is announced from its intent (see intent.go).
		return s, nil
	}
	if err := l.RaiseMinSeq(ctx, conversationID, next); err != nil {
		return im.SeqState{}, err
	}
	s.MinSeq = next
	return s, nil
}

// RaiseMinSeq makes every seq below minSeq unreadable for every member of the conversation
// (clear for everyone, retention). It is monotonic: a lower value changes nothing, but is
// announced all the same.
func (l *Ledger) RaiseMinSeq(ctx context.Context, conversationID string, minSeq int64) error {
	if _, err := im.ParseConversationID(conversationID); err != nil {
		return err
	}
	intent := &chunkstore.Intent{Kind: chunkstore.IntentClear, ConversationID: conversationID, ForEveryone: true, Target: minSeq}
	return l.outbox.Change(ctx, intent, func() error {
		return l.store.RaiseMinSeq(ctx, conversationID, minSeq)
	}, func() error {
		l.raiseCache(ctx, []cache.ConversationRaise{{ConversationID: conversationID, MinSeq: &minSeq}}, nil)
		return l.events.announceMinSeq(ctx, conversationID, minSeq, clearKey(conversationID, minSeq))
	})
}
