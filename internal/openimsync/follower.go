// Package openimsync follows an OpenIM deployment's changes into msggate's own event logs, so
// that syncDifference and syncEvents serve OpenIM mode as they serve msggate's own store.
//
// OpenIM tells its changes on Kafka (internal/openimfeed), but the topic is a fast hint, not
// the truth: a message can reach OpenIM's stores without a record, and a record can come
// twice. So every event is keyed (a second one under the same key is left out), and each
// conversation's followed seq (the seq up to which every seq is logged, or passed over as a
// hole) is kept in msggate's Redis: a record whose seq jumps past it, or an OpenIM max seq
// that runs ahead of it (FillGaps), makes the missing seqs be read from OpenIM's MongoDB and
// message cache and logged. The counters of every event come from OpenIM's stores, as
// OpenIM-mode reads give them.
package openimsync

import (
	"context"
	"fmt"
	"log/slog"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/msggate/msggate/internal/cache"
	"github.com/msggate/msggate/internal/im"
	"github.com/msggate/msggate/internal/openim"
	"github.com/msggate/msggate/internal/openimfeed"
	"github.com/msggate/msggate/internal/search"
	imsync "github.com/msggate/msggate/internal/sync"
)

// Options configures a Follower. The zero value is usable.
type Options struct {
	// GapFillInterval is how often the conversations active within ActiveWindow are compared
	// with OpenIM's max seqs (RunGapFill): the longest a message OpenIM stored without a record
	// waits to reach devices. Default DefaultGapFillInterval.
	GapFillInterval time.Duration
	// ActiveWindow: conversations whose followed seq moved within it are checked. Default
	// 10 minutes.
	ActiveWindow time.Duration
	// HoleGrace: a seq OpenIM allocated but neither of its stores holds (a send that failed
	// after its seq was taken) is passed over once the conversation's last allocation is this
	// old. Default 30 s.
	HoleGrace time.Duration
	// Touched, when set, is told the seqs of chat conversations whose stored message a batch of
	// records or a gap fill may have changed (a new message, a revoke, a delete), before the
	// batch is reported applied; an error fails the batch, which is then tried again. The
	// search index follows OpenIM through it.
	Touched func(ctx context.Context, keys []search.Key) error
	Logger  *slog.Logger
}

// DefaultGapFillInterval is Options.GapFillInterval's default.
const DefaultGapFillInterval = 2 * time.Second

// Bounds of one pass.
const (
	// fillPage is how many seqs of one conversation one store read covers.
	fillPage = 500
	// maxActive bounds the conversations one gap-fill pass checks.
	maxActive = 10000
)

func (o Options) withDefaults() Options {
	if o.GapFillInterval <= 0 {
		o.GapFillInterval = DefaultGapFillInterval
	}
	if o.ActiveWindow <= 0 {
		o.ActiveWindow = 10 * time.Minute
	}
	if o.HoleGrace <= 0 {
		o.HoleGrace = 30 * time.Second
	}
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	return o
}

// Follower logs an OpenIM deployment's changes in msggate's event logs.
type Follower struct {
	events *imsync.EventLog // a follower's log over the same cache and store
	store  *openim.Store
	cache  *cache.Cache
	opts   Options
}

// StateSource is what a follower's log reads OpenIM through (imsync.NewFollowerLog): the
// Store, with the conversation lists a device follows (a group the user left is not followed,
// though OpenIM keeps its conversation document).
func StateSource(s *openim.Store) imsync.StateSource { return followedState{s} }

type followedState struct{ *openim.Store }

func (f followedState) ConversationIDs(ctx context.Context, userID string) ([]string, error) {
	return f.FollowedConversationIDs(ctx, userID)
}

// membershipNotifications are OpenIM's group notifications that change who is in a group
// (protocol v0.0.72-alpha.71 constant/constant.go): an application accepted (1505), a member
// quit (1504), was kicked (1508), invited (1509) or entered (1510), the group dismissed (1511).
var membershipNotifications = map[int32]bool{1504: true, 1505: true, 1508: true, 1509: true, 1510: true, 1511: true}

// New returns a Follower that logs through events (imsync.NewFollowerLog over
// StateSource(store) and c).
func New(events *imsync.EventLog, store *openim.Store, c *cache.Cache, opts Options) *Follower {
	return &Follower{events: events, store: store, cache: c, opts: opts.withDefaults()}
}

// Apply logs the events of a batch of the feed's changes, after any seqs the feed skipped
// before them. An error means some were not logged: the caller retries the batch (the feed
// does not commit it), which logs nothing twice. An error wrapping openimfeed.ErrRefused says
// a change can never be logged (OpenIM's ID rules refuse what it names: refused); retrying
// it is pointless, and the feed sets its record aside.
func (f *Follower) Apply(ctx context.Context, changes []openimfeed.Change) error {
	err := f.apply(ctx, changes)
	if refused(err) {
		return fmt.Errorf("%w: %w", openimfeed.ErrRefused, err)
	}
	return err
}

// refused reports whether err refuses the input itself, as opposed to a store that failed:
// an ID, a seq or a size the rules do not allow is as wrong on the next try.
func refused(err error) bool {
	switch im.ErrorCode(err) {
	case im.EINVALID, im.ELIMIT:
		return true
	}
	return false
}

func (f *Follower) apply(ctx context.Context, changes []openimfeed.Change) error {
	// The seqs of the batch, per conversation: where the batch starts (anything between the
	// followed seq and it was skipped) and which seqs it logs.
	first, batchSeqs := map[string]int64{}, map[string][]int64{}
	var convs []string
	followed := make([]bool, len(changes)) // which changes are messages devices follow
	for i, ch := range changes {
		if followed[i] = f.followable(ch); !followed[i] {
			continue
		}
		if _, ok := first[ch.ConversationID]; !ok {
			convs = append(convs, ch.ConversationID)
			first[ch.ConversationID] = ch.Seq
		}
		first[ch.ConversationID] = min(first[ch.ConversationID], ch.Seq)
		batchSeqs[ch.ConversationID] = append(batchSeqs[ch.ConversationID], ch.Seq)
	}
	logged, err := f.cache.FollowedSeqs(ctx, convs)
	if err != nil {
		return err
	}
	// What the batch changed is stale in the chunk cache and the store's memo from now on,
	// before any device hears of it and reads.
	f.store.Forget(touchedConversations(changes)...)
	if err := f.cache.InvalidateChunks(ctx, touchedChunks(changes)); err != nil {
		return err
	}
	// upTo is, per conversation, the seq up to which everything will be logged once the
	// batch is: the followed seq may go no further, or a seq below it whose record is lost
	// would never be looked for again (FillGaps reads only above the followed seq).
	upTo := make(map[string]int64, len(convs))
	since := int64(-1) // when following began, read once if needed
	for i, c := range convs {
		upTo[c] = logged[i]
		switch {
		case logged[i] > 0 && first[c] > logged[i]+1:
			if upTo[c], err = f.fill(ctx, c, logged[i]+1, first[c]-1, false, 0); err != nil {
				return err
			}
		case logged[i] == 0 && first[c] > 1:
			// The conversation's first record here: what OpenIM stored of it since msggate
			// began following, before this record, had records that were lost.
			if since < 0 {
				if since, err = f.cache.FollowingSince(ctx); err != nil {
					return err
				}
			}
			if upTo[c], err = f.fill(ctx, c, max(1, first[c]-fillPage), first[c]-1, true, since); err != nil {
				return err
			}
		}
		upTo[c] = contiguousEnd(upTo[c], batchSeqs[c])
	}
	var msgs []imsync.StoredMessage
	flush := func() error {
		err := f.events.AnnounceMessages(ctx, msgs)
		msgs = msgs[:0]
		return err
	}
	for i, ch := range changes {
		if followed[i] {
			msgs = append(msgs, imsync.StoredMessage{ConversationID: ch.ConversationID, Seq: ch.Seq, SendID: ch.SendID,
				SendTime: ch.SendTime, Readers: readers(ch.SendID, ch.RecvID)})
		}
		if ch.Kind == openimfeed.KindMessage {
			continue
		}
		// A tip is logged after the messages before it.
		if err := flush(); err != nil {
			return err
		}
		if err := f.applyTip(ctx, ch); err != nil {
			return err
		}
	}
	if err := flush(); err != nil {
		return err
	}
	if err := f.membersChanged(ctx, changes); err != nil {
		return err
	}
	if err := f.touched(ctx, touchedSeqs(changes)); err != nil {
		return err
	}
	return f.cache.RaiseFollowedSeqs(ctx, upTo)
}

// touched tells Options.Touched of the keys that are in chat conversations (single chats and
// groups; notification conversations hold OpenIM's tips, not what users write).
func (f *Follower) touched(ctx context.Context, keys []search.Key) error {
	if f.opts.Touched == nil || len(keys) == 0 {
		return nil
	}
	out := keys[:0:0]
	for _, k := range keys {
		if conv, err := f.store.ParseConversationID(k.ConversationID); err == nil && (conv.Kind == im.GroupChat || conv.Kind == im.SingleChat) {
			out = append(out, k)
		}
	}
	if len(out) == 0 {
		return nil
	}
	return f.opts.Touched(ctx, out)
}

// touchedSeqs returns the seqs whose stored message the changes may have altered: each new
// message, and the seqs a revoke or delete names.
func touchedSeqs(changes []openimfeed.Change) []search.Key {
	seen := map[search.Key]bool{}
	var out []search.Key
	add := func(conv string, seq int64) {
		k := search.Key{ConversationID: conv, Seq: seq}
		if conv != "" && seq > 0 && !seen[k] {
			seen[k] = true
			out = append(out, k)
		}
	}
	for _, ch := range changes {
		switch ch.Kind {
		case openimfeed.KindMessage:
			add(ch.ConversationID, ch.Seq)
		case openimfeed.KindRevoke, openimfeed.KindDelete:
			target := ch.TargetConversationID
			if target == "" {
				target = ch.ConversationID
			}
			for _, s := range ch.Seqs {
				add(target, s)
			}
		}
	}
	return out
}

// contiguousEnd returns how far a run of logged seqs reaches: from done (everything up to it
// is logged), over the seqs that continue it without a gap.
func contiguousEnd(done int64, seqs []int64) int64 {
	for _, s := range slices.Sorted(slices.Values(seqs)) {
		if s > done+1 {
			break
		}
		done = max(done, s)
	}
	return done
}

// membersChanged has the devices following a group whose members changed re-read what they
// follow, so that a member who left stops following it (and gets LEAVE) at once.
func (f *Follower) membersChanged(ctx context.Context, changes []openimfeed.Change) error {
	var groups []string
	for _, ch := range changes {
		if ch.GroupID != "" && membershipNotifications[ch.ContentType] {
			f.store.Forget(ch.GroupID)
			groups = append(groups, "sg_"+ch.GroupID)
		}
	}
	return f.cache.ResyncGroups(ctx, dedupe(groups))
}

// touchedChunks returns the chunks the changes altered: those holding a new message, and those
// holding the seqs a revoke, delete or read names.
func touchedChunks(changes []openimfeed.Change) []string {
	var out []string
	for _, ch := range changes {
		if ch.Seq > 0 && ch.ConversationID != "" {
			out = append(out, im.DocID(ch.ConversationID, ch.Seq))
		}
		switch ch.Kind {
		case openimfeed.KindRevoke, openimfeed.KindDelete, openimfeed.KindRead:
			target := ch.TargetConversationID
			if target == "" {
				target = ch.ConversationID
			}
			for _, s := range ch.Seqs {
				if s > 0 && target != "" {
					out = append(out, im.DocID(target, s))
				}
			}
		}
	}
	return dedupe(out)
}

// touchedConversations returns the conversations the changes are about.
func touchedConversations(changes []openimfeed.Change) []string {
	var out []string
	for _, ch := range changes {
		for _, id := range append([]string{ch.ConversationID, ch.TargetConversationID}, ch.ConversationIDs...) {
			if id != "" {
				out = append(out, id)
			}
		}
	}
	return dedupe(out)
}

func dedupe(ids []string) []string {
	slices.Sort(ids)
	return slices.Compact(ids)
}

// followable reports whether a record is a message of a conversation whose devices follow it:
// a group chat (its stream) or a single chat (its two users' logs, named by the record).
// Notification conversations (n_, sn_) are not followed: a group's has no user list msggate
// can read, and the tips in them are applied for what they say (applyTip).
func (f *Follower) followable(ch openimfeed.Change) bool {
	if ch.Seq <= 0 {
		return false
	}
	conv, err := f.store.ParseConversationID(ch.ConversationID)
	if err != nil {
		f.opts.Logger.Warn("OpenIM feed: a record of a conversation msggate cannot address is left out", "conversation", ch.ConversationID, "err", err)
		return false
	}
	switch {
	case conv.Kind.IsGroup():
		return true
	case conv.Kind == im.SingleChat:
		return len(readers(ch.SendID, ch.RecvID)) > 0
	}
	return false
}

// valid reports whether id is a conversation OpenIM's clients address; a record of another
// is left alone (logged).
func (f *Follower) valid(id string) bool {
	if _, err := f.store.ParseConversationID(id); err != nil {
		f.opts.Logger.Warn("OpenIM feed: a record of a conversation msggate cannot address is left out", "conversation", id, "err", err)
		return false
	}
	return true
}

// applyTip logs what a notification record says happened.
func (f *Follower) applyTip(ctx context.Context, ch openimfeed.Change) error {
	target := ch.TargetConversationID
	if target == "" {
		target = ch.ConversationID
	}
	switch ch.Kind {
	case openimfeed.KindRevoke:
		conv, err := f.tipConversation(target, ch)
		if err != nil {
			return f.skip(ch, err)
		}
		for _, seq := range ch.Seqs {
			if err := f.events.AnnounceRevoke(ctx, conv, seq); err != nil {
				return err
			}
		}
	case openimfeed.KindDelete:
		conv, err := f.tipConversation(target, ch)
		if err != nil {
			return f.skip(ch, err)
		}
		if len(ch.Seqs) == 0 {
			return nil
		}
		// A tip a user sends to themselves is about their own view only.
		forEveryone := ch.SendID != ch.RecvID
		seqs := slices.Sorted(slices.Values(ch.Seqs))
		key := "od:" + target + ":" + ch.UserID + ":" + strconv.FormatBool(forEveryone) + ":" + joinSeqs(seqs)
		return f.events.AnnounceDelete(ctx, ch.UserID, conv, seqs, forEveryone, key)
	case openimfeed.KindClear:
		if ch.UserID == "" {
			return f.skip(ch, nil)
		}
		// A tip to the clearer alone is a clear for them; one to the other side, for everyone.
		forEveryone := ch.SendID != ch.RecvID
		for _, id := range ch.ConversationIDs {
			if !forEveryone {
				if f.valid(id) {
					if err := f.events.AnnounceUserClear(ctx, ch.UserID, id); err != nil {
						return err
					}
				}
				continue
			}
			conv, err := f.tipConversation(id, ch)
			if err != nil {
				if err := f.skip(ch, err); err != nil {
					return err
				}
				continue
			}
			if err := f.events.AnnounceConversationClear(ctx, ch.UserID, conv); err != nil {
				return err
			}
		}
	case openimfeed.KindRead:
		if ch.UserID == "" || !f.valid(target) {
			return f.skip(ch, nil)
		}
		return f.events.AnnounceRead(ctx, ch.UserID, target, ch.HasReadSeq)
	}
	return nil
}

// readers returns the users of a single chat, or the owner of a notification conversation,
// from a record: OpenIM's conversation IDs do not name them unambiguously (a user ID may hold
// the "_" that separates them). A group message's readers come from the group's stream.
func readers(sendID, recvID string) []string {
	switch {
	case recvID == "":
		return nil
	case sendID == "" || sendID == recvID:
		return []string{recvID}
	}
	return []string{sendID, recvID}
}

// tipConversation parses the conversation a tip is about, with its users from the tip's
// record when it is a single chat (the tip goes from the one who acted to the other user).
func (f *Follower) tipConversation(id string, ch openimfeed.Change) (im.Conversation, error) {
	conv, err := f.store.ParseConversationID(id)
	if err != nil {
		return conv, err
	}
	if !conv.Kind.IsGroup() && len(conv.UserIDs) == 0 {
		conv.UserIDs = readers(ch.SendID, ch.RecvID)
		if len(conv.UserIDs) == 0 {
			return conv, im.Errorf(im.EINVALID, "a tip of conversation %s names no user", id)
		}
	}
	return conv, nil
}

func (f *Follower) skip(ch openimfeed.Change, err error) error {
	f.opts.Logger.Warn("OpenIM feed: a notification msggate cannot apply is left out",
		"kind", ch.Kind, "conversation", ch.ConversationID, "partition", ch.Partition, "offset", ch.Offset, "err", err)
	return nil
}

func joinSeqs(seqs []int64) string {
	var b strings.Builder
	for i, s := range seqs {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString(strconv.FormatInt(s, 10))
	}
	return b.String()
}

// fill logs the messages of seqs from..to of a conversation that OpenIM's stores hold, in
// pages, and returns the highest seq up to which everything is logged or passed over. A seq
// neither store holds stops it there, unless passHoles (the allocation is old enough for the
// seq to be a hole, not a message on its way). Messages sent before sentSince (ms; 0: none)
// are passed over.
func (f *Follower) fill(ctx context.Context, conversationID string, from, to int64, passHoles bool, sentSince int64) (int64, error) {
	done := from - 1
	for start := from; start <= to; start += fillPage {
		end := min(to, start+fillPage-1)
		seqs := make([]int64, 0, end-start+1)
		for s := start; s <= end; s++ {
			seqs = append(seqs, s)
		}
		chunks, err := f.store.Chunks(ctx, im.GroupSeqsByDocID(conversationID, seqs))
		if err != nil {
			return done, err
		}
		found := map[int64]*im.Message{}
		for _, c := range chunks {
			if c == nil {
				continue
			}
			_, index, err := im.ParseDocID(c.DocID)
			if err != nil {
				return done, err
			}
			for i, slot := range c.Slots {
				if slot.Msg != nil {
					found[index*im.ChunkSize+int64(i)+1] = slot.Msg
				}
			}
		}
		var msgs []imsync.StoredMessage
		for _, s := range seqs {
			m, ok := found[s]
			if !ok {
				if !passHoles {
					break
				}
				done = s
				continue
			}
			done = s
			// A slot deleted for everyone (a tombstone) names no sender or receiver, so it has
			// no readers to announce to; there is nothing left to tell of it either.
			if m.SendTime < sentSince || m.Status == im.DeletedMessageStatus && m.SendID == "" {
				continue
			}
			msgs = append(msgs, imsync.StoredMessage{ConversationID: conversationID, Seq: s, SendID: m.SendID,
				SendTime: m.SendTime, Readers: readers(m.SendID, m.RecvID)})
		}
		var docIDs []string
		for _, m := range msgs {
			docIDs = append(docIDs, im.DocID(m.ConversationID, m.Seq))
		}
		f.store.Forget(conversationID)
		if err := f.cache.InvalidateChunks(ctx, dedupe(docIDs)); err != nil {
			return from - 1, err
		}
		if err := f.announceStored(ctx, msgs); err != nil {
			return from - 1, err
		}
		keys := make([]search.Key, len(msgs))
		for i, m := range msgs {
			keys[i] = search.Key{ConversationID: m.ConversationID, Seq: m.Seq}
		}
		if err := f.touched(ctx, keys); err != nil {
			return from - 1, err
		}
		if done < end {
			break
		}
	}
	if done >= from {
		f.opts.Logger.Info("OpenIM feed: logged seqs that reached OpenIM's stores without a record", "conversation", conversationID, "from", from, "to", done)
	}
	return done, nil
}

// announceStored logs messages read from OpenIM's stores. One the rules refuse (a user ID
// OpenIM allows and msggate cannot log for) is passed over, logged, as a hole is: it must not
// hold back the messages after it, nor fail every gap fill.
func (f *Follower) announceStored(ctx context.Context, msgs []imsync.StoredMessage) error {
	err := f.events.AnnounceMessages(ctx, msgs)
	if !refused(err) || len(msgs) == 0 {
		return err
	}
	for _, m := range msgs {
		err := f.events.AnnounceMessages(ctx, []imsync.StoredMessage{m})
		switch {
		case refused(err):
			f.opts.Logger.Warn("OpenIM feed: a message of OpenIM's stores msggate cannot log is passed over",
				"conversation", m.ConversationID, "seq", m.Seq, "err", err)
		case err != nil:
			return err
		}
	}
	return nil
}

// FillGaps compares each conversation active within ActiveWindow with OpenIM's max seq, and
// logs what OpenIM's stores hold beyond the followed seq: the messages whose records never
// came (or have not come yet: the events are keyed, so a record that comes later adds nothing).
func (f *Follower) FillGaps(ctx context.Context) error {
	ids, err := f.cache.ActiveFollowed(ctx, time.Now().Add(-f.opts.ActiveWindow), maxActive)
	if err != nil || len(ids) == 0 {
		return err
	}
	followed, err := f.cache.FollowedSeqs(ctx, ids)
	if err != nil {
		return err
	}
	heads, err := f.store.MaxSeqs(ctx, ids)
	if err != nil {
		return err
	}
	raise := map[string]int64{}
	now := time.Now().UnixMilli()
	for i, id := range ids {
		if heads[i].MaxSeq <= followed[i] || followed[i] == 0 {
			continue
		}
		old := now-heads[i].LastTime >= f.opts.HoleGrace.Milliseconds()
		done, err := f.fill(ctx, id, followed[i]+1, heads[i].MaxSeq, old, 0)
		if err != nil {
			return err
		}
		if done > followed[i] {
			raise[id] = done
		}
	}
	return f.cache.RaiseFollowedSeqs(ctx, raise)
}

// RunGapFill runs FillGaps every GapFillInterval until ctx ends. A failed pass is logged and
// tried again at the next tick.
func (f *Follower) RunGapFill(ctx context.Context) {
	// Where following began, if this is the first instance to follow: a conversation whose
	// first records here were lost is filled from then on (Apply).
	if _, err := f.cache.FollowingSince(ctx); err != nil {
		f.opts.Logger.Warn("OpenIM feed: recording when following began failed", "err", err)
	}
	t := time.NewTicker(f.opts.GapFillInterval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			if err := f.FillGaps(ctx); err != nil && ctx.Err() == nil {
				f.opts.Logger.Warn("OpenIM feed: gap fill failed; trying again", "err", err)
			}
		}
	}
}
