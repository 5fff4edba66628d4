package graph

import (
	"context"
	"math"
	gosync "sync"

	"github.com/msggate/msggate/graph/model"
	"github.com/msggate/msggate/internal/auth"
	"github.com/msggate/msggate/internal/im"
	"github.com/msggate/msggate/internal/search"
	"github.com/msggate/msggate/internal/search/finder"
)

// search answers Query.search: the finder decides what the viewer may find, and the hits'
// messages are read through the request's loaders, as every read is.
func (r *Resolver) search(ctx context.Context, q finder.Query) (*model.SearchResults, error) {
	viewer, err := auth.ViewerFrom(ctx)
	if err != nil {
		return nil, err
	}
	if r.Finder == nil {
		return nil, im.Errorf(im.EUNSUPPORTED, "this gateway has no search index")
	}
	p, err := r.Finder.Find(ctx, viewer.UserID, q)
	if err != nil {
		return nil, err
	}
	views, err := r.hitViews(ctx, p.Hits)
	if err != nil {
		return nil, err
	}
	out := &model.SearchResults{Hits: []*model.SearchHit{}, Count: p.Count, CountIsExact: p.CountIsExact, HasMore: p.HasMore}
	if p.EndCursor != "" {
		out.EndCursor = &p.EndCursor
	}
	for _, h := range p.Hits {
		v, ok := views[h.Key]
		// The index follows the store by a moment: a message revoked or deleted since it
		// was found is left out rather than shown.
		if !ok || v.Status != im.StatusOK {
			continue
		}
		hit := &model.SearchHit{Message: messageOf(v)}
		if h.Highlight != "" {
			hit.Highlight = &h.Highlight
		}
		out.Hits = append(out.Hits, hit)
	}
	return out, nil
}

// hitViews reads the hits' messages as the viewer sees them, the conversations side by side
// so that their chunk reads share the loaders' batches.
func (r *Resolver) hitViews(ctx context.Context, hits []search.Hit) (map[search.Key]im.MessageView, error) {
	h, err := r.historyOf(ctx)
	if err != nil {
		return nil, err
	}
	var convs []string
	seqs := map[string][]int64{}
	for _, hit := range hits {
		if _, ok := seqs[hit.ConversationID]; !ok {
			convs = append(convs, hit.ConversationID)
		}
		seqs[hit.ConversationID] = append(seqs[hit.ConversationID], hit.Seq)
	}
	results := make([][]im.MessageView, len(convs))
	errs := make([]error, len(convs))
	var wg gosync.WaitGroup
	for i, conv := range convs {
		wg.Go(func() {
			defer func() {
				if p := recover(); p != nil {
					errs[i] = im.Errorf(im.EINTERNAL, "reading a search hit failed")
				}
			}()
			results[i], errs[i] = h.Messages(withSiblings(ctx), conv, seqs[conv])
		})
	}
	wg.Wait()
	out := make(map[search.Key]im.MessageView, len(hits))
	for i := range convs {
		// A clear or retention since the search: those hits are no longer readable.
		if err := errs[i]; err != nil && im.ErrorCode(err) != im.EHISTORY {
			return nil, errs[i]
		}
		for _, v := range results[i] {
			out[search.Key{ConversationID: v.ConversationID, Seq: v.Seq}] = v
		}
	}
	return out, nil
}

// searchQuery gathers Query.search's arguments.
func searchQuery(text string, conversationID, senderID *string, contentTypes []int, sentAfter, sentBefore *int64, first *int, after *string) finder.Query {
	q := finder.Query{Text: text, First: first}
	if conversationID != nil {
		q.ConversationID = *conversationID
	}
	if senderID != nil {
		q.SenderID = *senderID
	}
	for _, t := range contentTypes {
		q.ContentTypes = append(q.ContentTypes, int32(min(max(t, -1), math.MaxInt32))) // out of range: refused as negative, or matching nothing
	}
	if sentAfter != nil {
		q.SentAfter = *sentAfter
	}
	if sentBefore != nil {
		q.SentBefore = *sentBefore
	}
	if after != nil {
		q.After = *after
	}
	return q
}
