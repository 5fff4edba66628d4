package sync

import (
	"context"
	"errors"
	"log/slog"
	"strconv"
	gosync "sync"
	"time"

	"github.com/msggate/msggate/internal/cache"
	"github.com/msggate/msggate/internal/chunkstore"
	"github.com/msggate/msggate/internal/im"
)

// Every change that devices must learn is made in four steps: its intent is recorded in the
// store's outbox, the store is changed, the change is announced (events appended to the logs),
// and the intent is dropped. An intent that outlives its Due was left by a writer that died, was
// cut off, or could not reach Redis; the relay (ingest.Relay) finishes it: it checks in the
// store whether the change happened and, if so, announces it. Writer and relay give every event
// the same key, so a change announced by both, or by a retried call, is logged once.

// DefaultIntentHandoff is how long an intent is left to its writer before a relay looks at it:
// a relay then takes it only once its writer has stopped (or its instance died).
const DefaultIntentHandoff = 5 * time.Second

// IntentGrace is how long after its creation an intent whose change the store does not show
// is kept, in case the change is still on its way: a store command sent before its writer
// stopped, which the store may still be running. The store gives up a command at its
// caller's deadline (maxTimeMS), at most the request's 30 s.
const IntentGrace = 45 * time.Second

// Outbox records the intents of this instance's writers and tells the relay which intents
// nobody works on any more. It is made with the Ledger (Ledger.Outbox), whose instance token
// it shares. It is safe for concurrent use.
type Outbox struct {
	store   *chunkstore.Store
	cache   *cache.Cache
	token   string
	handoff time.Duration
	fault   func(step string) error
	logger  *slog.Logger
	// writing holds the IDs of the intents this instance's writers are working on.
	writing gosync.Map
}

// ErrWriterStopped is what an injected fault returns (Options.Fault): the writer stops where it
// is, as if its process had died there.
var ErrWriterStopped = errors.New("writer stopped by an injected fault")

// BeginIntent records the intent of a change, owned by this instance and due after the
// handoff. Nothing of the change may reach the store before it returns without error. The
// writer calls release when it stops, however it stops: until then no relay takes the intent.
func (o *Outbox) BeginIntent(ctx context.Context, in *chunkstore.Intent) (release func(), err error) {
	now := time.Now()
	in.Owner = o.token
	in.Created, in.Due = now.UnixMilli(), now.Add(o.handoff).UnixMilli()
	if in.ID == "" {
		in.ID = chunkstore.NewIntentID()
	}
	o.writing.Store(in.ID, true)
	release = func() { o.writing.Delete(in.ID) }
	if err := o.store.RecordIntent(ctx, in); err != nil {
		release()
		return func() {}, err
	}
	return release, o.Fault("intent")
}

// Change makes a change under an intent (the steps above): apply changes the store, announce
// tells the devices (the intent's ID is set by then). With Options.Fault, a fault may stop
// the writer after each step.
func (o *Outbox) Change(ctx context.Context, in *chunkstore.Intent, apply, announce func() error) error {
	release, err := o.BeginIntent(ctx, in)
	defer release()
	if err != nil {
		return err
	}
	if err := apply(); err != nil {
		return err
	}
	if err := o.Fault("store"); err != nil {
		return err
	}
	if err := announce(); err != nil {
		if errors.Is(err, ErrKeepIntent) {
			return nil // done, but left for the relay to finish again
		}
		return err
	}
	if err := o.Fault("announce"); err != nil {
		return err
	}
	o.EndIntent(ctx, in.ID)
	return nil
}

// ErrKeepIntent, returned (wrapped) by a Change's announce, says the change is made and
// announced but a store that follows it (the search index) did not take it: Change succeeds
// and leaves the intent for the relay, which finishes it again, announcing nothing twice.
var ErrKeepIntent = errors.New("change made; its intent is kept for the relay")

// EndIntent drops the intent of a change that is announced. A failure is logged only: the
// relay finds the intent later, and finishing it again announces nothing twice.
func (o *Outbox) EndIntent(ctx context.Context, id string) {
	if err := o.store.DropIntent(ctx, id); err != nil {
		o.logger.WarnContext(ctx, "dropping a finished intent failed; the relay will drop it", "intent", id, "err", err)
	}
}

// InstanceTTL is how long an instance counts as alive after it last said so (Heartbeat);
// it says so three times as often.
const InstanceTTL = 3 * time.Second

// Heartbeat says this instance is alive until ctx ends, so that no other instance's relay
// takes the intents its writers are still working on.
func (o *Outbox) Heartbeat(ctx context.Context) {
	for {
		if err := o.cache.MarkAlive(ctx, o.token, InstanceTTL); err != nil && ctx.Err() == nil {
			o.logger.DebugContext(ctx, "saying this instance is alive failed", "err", err)
		}
		select {
		case <-ctx.Done():
			return
		case <-time.After(InstanceTTL / 3):
		}
	}
}

// Orphaned returns the intents among due that nobody works on any more: this instance's whose
// writer has stopped, and other instances' whose instance is dead. Without Redis it returns
// none: their changes could not be announced anyway.
func (o *Outbox) Orphaned(ctx context.Context, due []chunkstore.Intent) ([]chunkstore.Intent, error) {
	var owners []string
	seen := map[string]bool{}
	for _, in := range due {
		if in.Owner != "" && in.Owner != o.token && !seen[in.Owner] {
			seen[in.Owner] = true
			owners = append(owners, in.Owner)
		}
	}
	alive, err := o.cache.Alive(ctx, owners)
	if err != nil {
		return nil, err
	}
	var out []chunkstore.Intent
	for _, in := range due {
		switch {
		case in.Owner == o.token:
			if _, writing := o.writing.Load(in.ID); writing {
				continue
			}
		case alive[in.Owner]:
			continue
		}
		out = append(out, in)
	}
	return out, nil
}

// Fault runs the injected fault for a step of a write (Options.Fault).
func (o *Outbox) Fault(step string) error {
	if o.fault == nil {
		return nil
	}
	return o.fault(step)
}

// IntentKey is the event key of the change an intent records (cache.EventAppend.Key).
func IntentKey(id string) string { return "i:" + id }

// moveKey is the event key of a move of a monotonic value (a read seq, a min seq) to target:
// such a move happens once, however many callers ask for it, so every announcement of it,
// with whichever intent, is one event.
func moveKey(what, conversationID string, target int64) string {
	return what + ":" + conversationID + ":" + strconv.FormatInt(target, 10)
}

func readKey(conversationID string, target int64) string {
	return moveKey("rd", conversationID, target)
}

func userClearKey(conversationID string, target int64) string {
	return moveKey("cu", conversationID, target)
}

func clearKey(conversationID string, target int64) string {
	return moveKey("ce", conversationID, target)
}

// IntentOutcome is what finishing an intent came to.
type IntentOutcome int

const (
	// IntentDone: the change is announced (or never happened and never will): drop the intent.
	IntentDone IntentOutcome = iota
	// IntentPending: the store does not show the change yet; ask again later.
	IntentPending
)

// Unverified is the outcome for a change the store does not show: pending while the change
// may still arrive, done (nothing to announce) after that.
func Unverified(in chunkstore.Intent) IntentOutcome {
	if time.Since(time.UnixMilli(in.Created)) < IntentGrace {
		return IntentPending
	}
	return IntentDone
}

// FinishIntent finishes a read or a clear whose writer left its intent behind: when the store
// shows the change, it is announced, with the intent's key.
func (l *Ledger) FinishIntent(ctx context.Context, in chunkstore.Intent) (IntentOutcome, error) {
	switch in.Kind {
	case chunkstore.IntentRead:
		return l.finishRead(ctx, in)
	case chunkstore.IntentClear:
		return l.finishClear(ctx, in)
	}
	return IntentDone, im.Errorf(im.EINTERNAL, "the ledger does not finish %q intents", in.Kind)
}

func (l *Ledger) finishRead(ctx context.Context, in chunkstore.Intent) (IntentOutcome, error) {
	return l.finishUserMove(ctx, in, im.EventRead, readKey(in.ConversationID, in.Target),
		func(d chunkstore.UserSeqs) int64 { return d.ReadSeq },
		func(s *im.SeqState) { s.ReadSeq = max(s.ReadSeq, in.Target) })
}

// finishUserMove announces the move of one of a user's values in a conversation (the read
// seq, the user's min seq) to the intent's target, once the store shows it there: stored
// reads the value from the store's document, apply moves it in the user's state.
func (l *Ledger) finishUserMove(ctx context.Context, in chunkstore.Intent, kind im.EventType, key string,
	stored func(chunkstore.UserSeqs) int64, apply func(*im.SeqState)) (IntentOutcome, error) {
	doc := chunkstore.UserSeqKey{ConversationID: in.ConversationID, UserID: in.UserID}
	docs, err := l.store.FindUserSeqs(ctx, []chunkstore.UserSeqKey{doc})
	if err != nil {
		return IntentPending, err
	}
	if stored(docs[doc]) < in.Target {
		return Unverified(in), nil
	}
	st, err := l.States(ctx, in.UserID, []string{in.ConversationID})
	if err != nil {
		return IntentPending, err
	}
	apply(&st[0])
	if _, err := l.events.announceStates(ctx, im.Event{Type: kind, ConversationID: in.ConversationID},
		[]string{in.UserID}, st[:1], key); err != nil {
		return IntentPending, err
	}
	return IntentDone, nil
}

func (l *Ledger) finishClear(ctx context.Context, in chunkstore.Intent) (IntentOutcome, error) {
	if !in.ForEveryone {
		return l.finishUserMove(ctx, in, im.EventClear, userClearKey(in.ConversationID, in.Target),
			func(d chunkstore.UserSeqs) int64 { return d.MinSeq },
			func(s *im.SeqState) { s.UserMinSeq = max(s.UserMinSeq, in.Target) })
	}
	docs, err := l.store.FindConversationSeqs(ctx, []string{in.ConversationID})
	if err != nil {
		return IntentPending, err
	}
	if docs[in.ConversationID].MinSeq < in.Target {
		return Unverified(in), nil
	}
	if err := l.events.announceMinSeq(ctx, in.ConversationID, in.Target, clearKey(in.ConversationID, in.Target)); err != nil {
		return IntentPending, err
	}
	return IntentDone, nil
}
