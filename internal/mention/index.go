package mention

import (
	"context"
	"log/slog"
	"strconv"

	"golang.org/x/sync/singleflight"

	"github.com/msggate/msggate/internal/cache"
	"github.com/msggate/msggate/internal/chunkstore"
	"github.com/msggate/msggate/internal/im"
)

// Index is msggate's own mention index: the store's collection and its Redis copy. It is safe
// for concurrent use.
type Index struct {
	store  *chunkstore.Store
	cache  *cache.Cache
	logger *slog.Logger
	// fills joins concurrent fills of one range: a request's count, list and total each miss
	// the same emptied copy at once, and would each read the store for it.
	fills singleflight.Group
}

// New returns the index over a store and its cache. logger may be nil.
func New(store *chunkstore.Store, c *cache.Cache, logger *slog.Logger) *Index {
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	return &Index{store: store, cache: c, logger: logger}
}

// fillMargin is how far above the unread range a fill reads the store: a message being stored
// right now may have its mention in the store, and its copy in Redis lost with the rest, before
// its seq is counted in the max seq the reader saw. A fill covers everything above its range's
// start, so it reads one block beyond.
const fillMargin = chunkstore.MentionBlock

// Record adds the mentions of newly stored messages of a conversation: to the store, then to
// Redis. When Redis cannot take them, its copy of the conversation is marked unknown, to be
// read from the store again.
func (x *Index) Record(ctx context.Context, conversationID string, ms []im.Mention) error {
	if len(ms) == 0 {
		return nil
	}
	if err := x.store.RecordMentions(ctx, conversationID, ms); err != nil {
		return err
	}
	if err := x.cache.AddMentions(ctx, conversationID, ms); err != nil {
		x.forget(ctx, conversationID, err)
	}
	return nil
}

// Remove takes the messages at seqs out of the index: for everyone (userID ""; revoked or
// deleted for everyone) or for userID, who deleted them for themselves.
func (x *Index) Remove(ctx context.Context, conversationID, userID string, seqs []int64) error {
	if len(seqs) == 0 {
		return nil
	}
	var err error
	if userID == "" {
		err = x.store.DropMentions(ctx, conversationID, seqs)
	} else {
		err = x.store.HideMentions(ctx, conversationID, userID, seqs)
	}
	if err != nil {
		return err
	}
	if err := x.cache.RemoveMentions(ctx, conversationID, userID, seqs); err != nil {
		x.forget(ctx, conversationID, err)
	}
	return nil
}

func (x *Index) forget(ctx context.Context, conversationID string, cause error) {
	if err := x.cache.ForgetMentions(ctx, conversationID); err != nil {
		x.logger.Warn("mention index: Redis missed a change and could not be told to forget the conversation",
			"conversation", conversationID, "cause", cause, "err", err)
	}
}

// UnreadMentionCounts returns userID's unread mentions in each conversation, aligned with
// states (the user's): one Redis round trip for all of them, plus, for each conversation Redis
// does not cover, a read of the store's blocks over its unread range.
func (x *Index) UnreadMentionCounts(ctx context.Context, userID string, states []im.SeqState) ([]int64, error) {
	rs := make([]cache.MentionRange, 0, len(states))
	at := make([]int, 0, len(states))
	out := make([]int64, len(states))
	for i, st := range states {
		after, upTo := st.UnreadRange()
		if upTo > after {
			rs = append(rs, cache.MentionRange{ConversationID: st.ConversationID, After: after, UpTo: upTo})
			at = append(at, i)
		}
	}
	if len(rs) == 0 {
		return out, nil
	}
	counts, err := x.cache.CountMentions(ctx, userID, rs)
	if err != nil {
		x.logger.Debug("mention index: counting from the store, Redis failed", "err", err)
		counts = nil
	}
	for k, r := range rs {
		if counts != nil && counts[k] >= 0 {
			out[at[k]] = counts[k]
			continue
		}
		ms, err := x.fill(ctx, r)
		if err != nil {
			return nil, err
		}
		for _, m := range ms {
			if m.Seq <= r.UpTo && m.Mentions(userID) {
				out[at[k]]++
			}
		}
	}
	return out, nil
}

// UnreadMentionSeqs returns the seqs of userID's first limit unread mentions in the
// conversation of st, oldest first.
func (x *Index) UnreadMentionSeqs(ctx context.Context, userID string, st im.SeqState, limit int) ([]int64, error) {
	after, upTo := st.UnreadRange()
	if upTo <= after {
		return nil, nil
	}
	r := cache.MentionRange{ConversationID: st.ConversationID, After: after, UpTo: upTo}
	seqs, ok, err := x.cache.ListMentions(ctx, userID, r, limit)
	if err == nil && ok {
		return seqs, nil
	}
	ms, err := x.fill(ctx, r)
	if err != nil {
		return nil, err
	}
	seqs = seqs[:0]
	for _, m := range ms {
		if len(seqs) < limit && m.Seq <= upTo && m.Mentions(userID) {
			seqs = append(seqs, m.Seq)
		}
	}
	return seqs, nil
}

// fill reads the conversation's mentions above r.After from the store (through the block
// past r.UpTo) and gives Redis its copy of them, unless a removal came between.
// The mentions returned may be shared with concurrent callers: they are read, never changed.
func (x *Index) fill(ctx context.Context, r cache.MentionRange) ([]im.Mention, error) {
	key := strconv.FormatInt(r.After, 10) + ":" + strconv.FormatInt(r.UpTo, 10) + ":" + r.ConversationID
	v, err, _ := x.fills.Do(key, func() (any, error) { return x.fillOnce(ctx, r) })
	if err != nil {
		return nil, err
	}
	return v.([]im.Mention), nil
}

func (x *Index) fillOnce(ctx context.Context, r cache.MentionRange) ([]im.Mention, error) {
	gen, genErr := x.cache.MentionGen(ctx, r.ConversationID)
	ms, err := x.store.FindMentions(ctx, r.ConversationID, r.After, r.UpTo+fillMargin)
	if err != nil {
		return nil, err
	}
	if genErr == nil {
		if _, err := x.cache.FillMentions(ctx, r.ConversationID, gen, r.After, ms); err != nil {
			x.logger.Debug("mention index: could not fill Redis", "conversation", r.ConversationID, "err", err)
		}
	}
	return ms, nil
}
