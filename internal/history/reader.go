package history

import (
	"context"

	"github.com/msggate/msggate/internal/im"
)

// Reader reads one viewer's history through its two sources. It holds nothing else, so it
// is built wherever it is needed: the GraphQL layer builds one per request over the
// request's dataloaders.
type Reader struct {
	// Viewer is the user whose view is applied: their deletions, their window.
	Viewer string
	Chunks ChunkSource
	// States gives the Viewer's seq state.
	States StateLoader
	// Adjust, when set, is given the views of every read after the per-user view and may
	// change them in place. It is where a storage dialect shows a message differently for a
	// reason outside the message's own slot (OpenIM withholds the quoted text of a revoked
	// message); it may read further chunks through the Reader's chunk source. nil: msggate's
	// own view.
	Adjust AdjustFunc
	// ClientMsgs finds messages by client message ID for pages around one
	// (PageQuery.AroundClientMsgID); nil: the store keeps no such index, and those pages
	// answer im.EUNSUPPORTED.
	ClientMsgs ClientMsgIndex
}

// AdjustFunc changes views in place for viewer (see Reader.Adjust).
type AdjustFunc func(ctx context.Context, chunks ChunkSource, viewer string, views []im.MessageView) error

// Messages returns seqs as the viewer sees them, in request order, duplicates kept. A seq
// that holds no message is a MISSING placeholder, never left out (a client would read a gap
// as a hole to fetch again); seqs above the max seq do not exist yet and are left out. A seq
// below the viewer's min seq answers im.HistoryUnavailable. One call reads each chunk the
// seqs fall into once.
func (r Reader) Messages(ctx context.Context, conversationID string, seqs []int64) ([]im.MessageView, error) {
	if err := im.ValidateSeqs(seqs); err != nil {
		return nil, err
	}
	st, err := r.States.LoadState(ctx, conversationID)
	if err != nil {
		return nil, err
	}
	visible, err := inWindow(conversationID, st, seqs)
	if err != nil {
		return nil, err
	}
	return r.views(ctx, conversationID, st.ChunksVersion, visible)
}

// LastMessage returns the message at the viewer's max seq (a placeholder when that seq holds
// none), or nil when the viewer may read no seq of the conversation.
func (r Reader) LastMessage(ctx context.Context, conversationID string) (*im.MessageView, error) {
	st, err := r.States.LoadState(ctx, conversationID)
	if err != nil {
		return nil, err
	}
	if st.MaxSeq < st.VisibleMin() {
		return nil, nil
	}
	views, err := r.views(ctx, conversationID, st.ChunksVersion, []int64{st.MaxSeq})
	if err != nil {
		return nil, err
	}
	return &views[0], nil
}

// LastMessages is LastMessage for several conversations at once (a page of the conversation
// list), given the viewer's states in them as the caller read them (the list holds them, so
// asking the state source again would only cost): the chunks holding their last messages are
// read with one call of the chunk source, and the dialect's adjustment is applied once to them
// all. The result is aligned with states.
func (r Reader) LastMessages(ctx context.Context, states []im.SeqState) ([]*im.MessageView, error) {
	out := make([]*im.MessageView, len(states))
	refs := make([]ChunkRef, 0, len(states))
	at := make([]int, 0, len(states))
	for i, st := range states {
		if st.MaxSeq < st.VisibleMin() {
			continue
		}
		refs = append(refs, ChunkRef{DocID: im.DocID(st.ConversationID, st.MaxSeq), Version: st.ChunksVersion})
		at = append(at, i)
	}
	if len(refs) == 0 {
		return out, nil
	}
	chunks, err := r.Chunks.LoadChunks(ctx, refs)
	if err != nil {
		return nil, err
	}
	if len(chunks) != len(refs) {
		return nil, im.Errorf(im.EINTERNAL, "chunk source answered %d of %d chunks", len(chunks), len(refs))
	}
	views := make([]im.MessageView, len(refs))
	for j, i := range at {
		st := states[i]
		views[j] = im.ViewSlot(st.ConversationID, st.MaxSeq, chunks[j].Slot(st.MaxSeq), r.Viewer)
	}
	if r.Adjust != nil {
		if err := r.Adjust(ctx, r.Chunks, r.Viewer, views); err != nil {
			return nil, err
		}
	}
	for j, i := range at {
		out[i] = &views[j]
	}
	return out, nil
}

// views reads seqs and applies the viewer's view, then the dialect's adjustment. version is
// the chunks version read with the viewer's state (im.SeqState.ChunksVersion). The result is
// aligned with seqs.
func (r Reader) views(ctx context.Context, conversationID, version string, seqs []int64) ([]im.MessageView, error) {
	slots, err := slotsAt(ctx, r.Chunks, conversationID, version, seqs)
	if err != nil {
		return nil, err
	}
	out := make([]im.MessageView, len(seqs))
	for i, s := range seqs {
		out[i] = im.ViewSlot(conversationID, s, slots[i], r.Viewer)
	}
	if r.Adjust != nil && len(out) > 0 {
		if err := r.Adjust(ctx, r.Chunks, r.Viewer, out); err != nil {
			return nil, err
		}
	}
	return out, nil
}
