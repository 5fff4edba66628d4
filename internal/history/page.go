package history

import (
	"context"

	"github.com/msggate/msggate/internal/im"
)

// PageQuery names one page of history as a client asks for it.
type PageQuery struct {
	// BeforeSeq and AfterSeq are exclusive bounds; nil: none. With AfterSeq the page starts
	// right after it; otherwise it holds the newest seqs below BeforeSeq (or up to the max
	// seq).
	BeforeSeq, AfterSeq *int64
	// Limit is the most seqs the page holds; nil: im.DefaultHistoryLimit. At most
	// im.MaxHistoryLimit.
	Limit *int
	// AroundSeq, or AroundClientMsgID (the newest message the viewer can read with that client
	// message ID), centres the page on one message: it and (Limit-1)/2 seqs after it, the rest
	// before it, shifted to fill the page where either end of the viewer's window comes first.
	// At most one of them, and neither with BeforeSeq or AfterSeq.
	AroundSeq         *int64
	AroundClientMsgID *string
}

// Page is one page of history, in ascending seq order.
type Page struct {
	Messages []im.MessageView
	// HasMoreBefore and HasMoreAfter tell whether the viewer may read seqs below and above
	// the page.
	HasMoreBefore, HasMoreAfter bool
}

// Page returns one page of the viewer's history. A page that lies wholly below the viewer's
// min seq answers im.HistoryUnavailable; a page that reaches it answers its readable part
// with HasMoreBefore false.
func (r Reader) Page(ctx context.Context, conversationID string, q PageQuery) (Page, error) {
	limit, err := im.PageSize("history limit", q.Limit, im.DefaultHistoryLimit, im.MaxHistoryLimit)
	if err != nil {
		return Page{}, err
	}
	if q.AroundSeq != nil || q.AroundClientMsgID != nil {
		if q.AroundSeq != nil && q.AroundClientMsgID != nil || q.BeforeSeq != nil || q.AfterSeq != nil {
			return Page{}, im.Errorf(im.EINVALID,
				"a page around a message takes one of aroundSeq and aroundClientMsgID, and neither beforeSeq nor afterSeq")
		}
		return r.aroundPage(ctx, conversationID, q, limit)
	}
	var before, after int64
	for _, b := range []struct {
		arg *int64
		out *int64
	}{{q.BeforeSeq, &before}, {q.AfterSeq, &after}} {
		if b.arg != nil {
			if err := im.ValidateSeq(*b.arg); err != nil {
				return Page{}, err
			}
			*b.out = *b.arg
		}
	}
	st, err := r.States.LoadState(ctx, conversationID)
	if err != nil {
		return Page{}, err
	}
	b, err := pageBoundsOf(conversationID, st, before, after, limit)
	if err != nil {
		return Page{}, err
	}
	var seqs []int64
	for s := b.from; s <= b.to; s++ {
		seqs = append(seqs, s)
	}
	views, err := r.views(ctx, conversationID, st.ChunksVersion, seqs)
	if err != nil {
		return Page{}, err
	}
	return Page{Messages: views, HasMoreBefore: b.hasMoreBefore, HasMoreAfter: b.hasMoreAfter}, nil
}

// pageBounds is the arithmetic of one page: its seqs from..to (none when from > to) and
// whether readable seqs lie beyond either end.
type pageBounds struct {
	from, to                    int64
	hasMoreBefore, hasMoreAfter bool
}

// pageBoundsOf places a page (before, after: exclusive bounds, 0 = none) in the viewer's
// window [VisibleMin, MaxSeq].
func pageBoundsOf(conversationID string, st im.SeqState, before, after int64, limit int) (pageBounds, error) {
	lo := st.VisibleMin()
	// A page asked for before a seq whose every seq lies below the min seq is history that is
	// gone: say so rather than answer an empty page.
	if before > 0 {
		first := max(after+1, 1)
		if last := before - 1; first <= last && last < lo {
			return pageBounds{}, im.HistoryUnavailable(conversationID, lo)
		}
	}
	b := pageBounds{}
	b.from, b.to = im.HistoryPage(lo, st.MaxSeq, before, after, limit)
	if b.from <= b.to {
		b.hasMoreBefore, b.hasMoreAfter = b.from > lo, b.to < st.MaxSeq
	} else {
		b.hasMoreBefore = before > lo && st.MaxSeq >= lo
		b.hasMoreAfter = after > 0 && after < st.MaxSeq
	}
	return b, nil
}
