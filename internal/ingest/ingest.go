package ingest

import (
	"context"
	"errors"
	"log/slog"
	"time"

	"github.com/msggate/msggate/internal/cache"
	"github.com/msggate/msggate/internal/chunkstore"
	"github.com/msggate/msggate/internal/im"
	"github.com/msggate/msggate/internal/mention"
	"github.com/msggate/msggate/internal/search"
	imsync "github.com/msggate/msggate/internal/sync"
)

// Options configures an Ingester. The zero value is usable.
type Options struct {
	// MaxBatch bounds the messages of one Ingest call. Default 1000.
	MaxBatch int
	// Now returns the time stamped on messages that carry none. Default time.Now.
	Now func() time.Time
	// Search is the search index the changes are indexed in (see search_index.go); nil: none.
	Search search.Engine
	// Logger receives what went wrong without failing a change. Default slog.Default().
	Logger *slog.Logger
}

// Ingester stores messages. It is safe for concurrent use.
type Ingester struct {
	store  *chunkstore.Store
	cache  *cache.Cache
	ledger *imsync.Ledger
	// outbox and events are the ledger's: the intents of the Ingester's changes, and the log
	// they are announced in.
	outbox *imsync.Outbox
	events *imsync.EventLog
	// mentions is the mention index the Ingester's changes keep current.
	mentions *mention.Index
	opts     Options
}

// New returns an Ingester.
func New(store *chunkstore.Store, c *cache.Cache, ledger *imsync.Ledger, opts Options) *Ingester {
	if opts.MaxBatch <= 0 {
		opts.MaxBatch = 1000
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	return &Ingester{store: store, cache: c, ledger: ledger, outbox: ledger.Outbox(), events: ledger.Events(),
		mentions: mention.New(store, c, nil), opts: opts}
}

// Placed is where one incoming message went.
type Placed struct {
	ConversationID string
	// Seq is the message's seq, or 0 when the message is not stored (published only).
	Seq int64
	// Duplicate is true when an earlier send of the same message got this seq.
	Duplicate bool
	// Message is the message as stored (with its seq, server message ID and times).
	Message *im.Message
}

// Result is what became of one incoming message: usually one placement; a notification that is
// also shown in its chat (IsSendMsg) has two.
type Result struct {
	Placements []Placed
}

// maxRounds bounds how often a message whose seq was found taken gets a new one.
const maxRounds = 4

// Ingest stores a batch of messages for any number of conversations and returns, aligned with
// msgs, where each went. All of a batch's messages that land in one chunk are written by one
// MongoDB operation. On error, some messages may be stored; sending the same batch again
// (same client message IDs) stores nothing twice.
func (in *Ingester) Ingest(ctx context.Context, msgs []*im.Message) ([]Result, error) {
	return in.ingest(ctx, msgs, false)
}

// Import is Ingest for a bulk import: the same rules (validation, seq allocation, the client
// message IDs that keep a message from being stored twice), with a batch's store work done in
// a number of commands that follows the batch's size, not the number of its conversations:
//   - a batch none of whose messages is known yet (two of its keys are looked up, not every
//     one) claims its client message IDs without looking each up first: a claim refused as a
//     duplicate is a retry (see allocate), and its message keeps the seq it had;
//   - the chunks the batch starts are inserted whole, together (chunkstore.WriteMessagesBulk);
//   - each conversation's devices are told of its newest message only, with the counters that
//     cover the others (an imported history is read, not delivered message by message).
func (in *Ingester) Import(ctx context.Context, msgs []*im.Message) ([]Result, error) {
	return in.ingest(ctx, msgs, true)
}

func (in *Ingester) ingest(ctx context.Context, msgs []*im.Message, bulk bool) ([]Result, error) {
	if len(msgs) > in.opts.MaxBatch {
		return nil, im.Errorf(im.ELIMIT, "a batch holds at most %d messages, got %d", in.opts.MaxBatch, len(msgs))
	}
	results, stored, err := plan(msgs, in.opts.Now().UnixMilli())
	if err != nil {
		return nil, err
	}
	if len(stored) == 0 {
		return results, nil
	}
	if err := in.storePlacements(ctx, stored, bulk); err != nil {
		return nil, err
	}
	for _, p := range stored {
		pl := &results[p.result].Placements[p.index]
		pl.Seq, pl.Message, pl.Duplicate = p.msg.Seq, p.msg, p.retry
	}
	return results, nil
}

func (in *Ingester) storePlacements(ctx context.Context, stored []*placement, bulk bool) error {
	if err := in.findRetries(ctx, stored, bulk); err != nil {
		return err
	}
	// Once a chunk write has been sent, a message may be stored: what makes it visible and
	// announces it runs to its end even if the caller gives up meanwhile (a client's timeout),
	// so that no stored message stays unannounced, or its chunk cached as it was, because the
	// request that wrote it was cut.
	detached := func() (context.Context, context.CancelFunc) {
		return context.WithTimeout(context.WithoutCancel(ctx), finishTimeout)
	}
	pending := stored
	var touched, intents []string
	for round := 0; len(pending) > 0; round++ {
		if round == maxRounds {
			return im.Errorf(im.ECONFLICT, "could not find free seqs for %d messages; retry", len(pending))
		}
		if err := in.allocate(ctx, pending); err != nil {
			return err
		}
		// The intent names the seqs this round writes, before any of them is written: if this
		// writer dies from here on, the relay finds what it stored and announces it.
		intent := sendIntent(pending)
		release, err := in.outbox.BeginIntent(ctx, intent)
		defer release()
		if err != nil {
			return err
		}
		intents = append(intents, intent.ID)
		var docIDs []string
		pending, docIDs, err = in.write(ctx, pending, bulk)
		touched = append(touched, docIDs...)
		if err == nil {
			err = in.outbox.Fault("store")
		}
		if errors.Is(err, imsync.ErrWriterStopped) {
			return err
		}
		if err != nil {
			// Some chunks may have changed before the failure: drop their cached copies now
			// rather than leave them to a retry that may never come.
			finish, cancel := detached()
			defer cancel()
			_ = in.cache.InvalidateChunks(finish, dedupe(touched))
			return err
		}
	}
	finish, cancel := detached()
	defer cancel()
	msgs := storedMessages(stored)
	announced := msgs
	if bulk {
		announced = newestPerConversation(msgs)
	}
	indexed, err := in.finishSend(finish, msgs, announced, mentionsOf(stored), dedupe(touched), sendChanges(stored), in.index)
	if err != nil {
		return err
	}
	if !indexed {
		return nil // the intents stay for the relay, which indexes the messages later
	}
	for _, id := range intents {
		in.outbox.EndIntent(finish, id)
	}
	return nil
}

// finishSend makes stored messages visible, indexes and announces them: the steps after the
// chunk writes, which the writer runs and, when the writer could not, the relay. Each step may
// run twice: chunks are invalidated again, the index takes a Put again, seqs are raised with
// $max, and the log keeps one event per message. announced are the messages whose events are
// logged: msgs, or for an import each conversation's newest (its event's counters cover the
// others). indexed is false when the search index did not take changes: the other steps go
// on, and the caller leaves the intent to the relay. index applies changes: the writer's
// Ingester.index (nobody can revoke or delete the messages before their max seq is raised), the
// relay's Ingester.indexSettled (they may be revoked or deleted by now).
func (in *Ingester) finishSend(ctx context.Context, msgs, announced []imsync.StoredMessage, mentions mentionsByConv, docIDs []string, changes []search.Change,
	index func(context.Context, []search.Change) error) (indexed bool, err error) {
	// The mention index learns of the messages before anyone can see them: before their
	// chunks' new version and their max seq, so that a count read with either includes them.
	if err := mentions.record(ctx, in.mentions); err != nil {
		return false, err
	}
	// Readers must not keep serving the chunks as they were. This comes before the max seq is
	// raised, so that a reader that sees the new seqs also sees the chunks' new version, never
	// an older copy without them.
	if err := in.cache.InvalidateChunks(ctx, docIDs); err != nil {
		return false, err
	}
	if err := in.outbox.Fault("invalidate"); err != nil {
		return false, err
	}
	if err := in.ledger.AddUserConversations(ctx, listEntries(msgs)); err != nil {
		return false, err
	}
	// Indexed before the max seq is raised: see search_index.go.
	indexed = index(ctx, changes) == nil
	if err := in.ledger.RecordStored(ctx, msgs); err != nil {
		return false, err
	}
	if err := in.outbox.Fault("record"); err != nil {
		return false, err
	}
	// Devices learn of the messages only now, when a read finds them.
	if err := in.events.AnnounceMessages(ctx, announced); err != nil {
		return false, err
	}
	return indexed, in.outbox.Fault("announce")
}

// finishTimeout bounds the steps after the chunk writes, which run on when the caller has gone.
const finishTimeout = 30 * time.Second

// findRetries gives placements whose client message ID their sender used before their earlier
// seq, and marks later copies of the same message within the batch as retries of the first. A
// seq found unowned (a store of an earlier version) is tried the same way: the write finds the
// slot taken unless it holds this sender's message (im.SameMessage), and the placement then
// gets a new seq and a claim of its own.
//
// With probe (an import), the batch's first and last keys are looked up first, and the others
// only when one of them is known: an import stores its batches whole (their claims are one
// insert), so a batch that an earlier run stored shows it in those keys. A message known
// after all is refused its claim (allocate) and keeps its seq; the seq allocated for it stays
// unused (a MISSING placeholder), which only a batch stored in part can cost.
func (in *Ingester) findRetries(ctx context.Context, stored []*placement, probe bool) error {
	first, keys := batchCopies(stored)
	if probe && len(keys) > 2 && !in.store.HasSenderlessClientMsgIDs() {
		known, err := in.store.FindClientMsgSeqs(ctx, []chunkstore.ClientMsgKey{keys[0], keys[len(keys)-1]})
		if err != nil || len(known) == 0 {
			return err
		}
	}
	seqs, err := in.store.FindClientMsgSeqs(ctx, keys)
	if err != nil {
		return err
	}
	for k, found := range seqs {
		p := first[k]
		p.msg.Seq, p.retry, p.claimed = found.Seq, true, !found.Unowned
	}
	return nil
}

// allocate gives every pending placement without a seq a new one, a block per conversation
// (all conversations in one AllocateMany), in input order, and claims the client message IDs. In later rounds, when pending placements
// lost their seqs to other messages, a claim of their own follows them to the new seq; a
// placement whose seq was found unowned has none yet and claims one.
func (in *Ingester) allocate(ctx context.Context, pending []*placement) error {
	claims := map[chunkstore.ClientMsgKey]int64{}
	need := needingSeqs(pending)
	reqs := make([]cache.AllocRequest, len(need))
	for i, b := range need {
		reqs[i] = cache.AllocRequest{ConversationID: b.conv, N: int64(len(b.ps))}
	}
	firsts, err := in.ledger.AllocateMany(ctx, reqs)
	if err != nil {
		return err
	}
	for bi, b := range need {
		first := firsts[bi]
		for i, p := range b.ps {
			p.msg.Seq = first + int64(i)
			if !p.dedup {
				continue
			}
			if p.claimed {
				if err := in.store.MoveClientMsgSeq(ctx, p.clientMsgKey(), p.msg.Seq); err != nil {
					return err
				}
				continue
			}
			claims[p.clientMsgKey()] = p.msg.Seq
			p.claimed = true
		}
	}
	lost, err := in.store.ClaimClientMsgIDs(ctx, claims)
	if err != nil {
		return err
	}
	// A concurrent send of the same message claimed first: use its seq. The seq allocated here
	// stays unused and reads as a MISSING placeholder.
	for _, p := range pending {
		if !p.dedup {
			continue
		}
		if seq, ok := lost[p.clientMsgKey()]; ok {
			p.msg.Seq, p.retry = seq, true
		}
	}
	return nil
}

// write writes the pending placements, one WriteMessages call per conversation (with bulk,
// the new messages of all conversations in one WriteMessagesBulk call), and returns those
// whose seq turned out to be taken (their seq reset to 0) and the chunks it touched.
func (in *Ingester) write(ctx context.Context, pending []*placement, bulk bool) ([]*placement, []string, error) {
	var again []*placement
	var touched []string
	// settled takes the outcomes of a write of ps.
	settled := func(ps []*placement, outcomes []chunkstore.SlotOutcome) {
		for i, o := range outcomes {
			if o == chunkstore.Taken {
				// Another message holds the seq, so this one is stored nowhere yet: it gets a
				// new seq as a new message, not as a retry.
				ps[i].msg.Seq, ps[i].retry = 0, false
				again = append(again, ps[i])
			}
		}
	}
	messagesOf := func(conv string, ps []*placement) []*im.Message {
		msgs := make([]*im.Message, len(ps))
		for i, p := range ps {
			msgs[i] = p.msg
			touched = append(touched, im.DocID(conv, p.msg.Seq))
		}
		return msgs
	}
	var bulkParts [][]*placement
	var bulkWrites []chunkstore.ConversationMessages
	for _, b := range byConversation(pending) {
		fresh, retries := splitRetries(b.ps)
		if bulk && len(fresh) > 0 {
			bulkParts = append(bulkParts, fresh)
			bulkWrites = append(bulkWrites, chunkstore.ConversationMessages{ConversationID: b.conv, Messages: messagesOf(b.conv, fresh)})
			fresh = nil
		}
		for _, part := range []struct {
			ps    []*placement
			write func(context.Context, string, []*im.Message) ([]chunkstore.SlotOutcome, error)
		}{{fresh, in.store.WriteMessages}, {retries, in.store.RewriteMessages}} {
			if len(part.ps) == 0 {
				continue
			}
			outcomes, err := part.write(ctx, b.conv, messagesOf(b.conv, part.ps))
			if err != nil {
				return nil, touched, err
			}
			settled(part.ps, outcomes)
		}
	}
	if len(bulkWrites) > 0 {
		outcomes, err := in.store.WriteMessagesBulk(ctx, bulkWrites)
		if err != nil {
			return nil, touched, err
		}
		for i, ps := range bulkParts {
			settled(ps, outcomes[i])
		}
	}
	return again, touched, nil
}
