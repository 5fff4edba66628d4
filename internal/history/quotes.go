package history

import (
	"context"

	"github.com/msggate/msggate/internal/im"
)

// Quotes returns an AdjustFunc for a dialect whose messages may quote another message of
// their conversation and show the quoted one as it stands now (OpenIM's quote rewrite, with
// openim.QuotedSeq and openim.ViewQuote). quoted tells the seq a message quotes, false when it
// quotes none that must be read; view returns the message to show given the quoted seq's slot
// (nil: no such slot, or nothing to read). The quoted messages of all the views are read with
// one call of the chunk source per conversation, as stored, whoever the viewer is.
func Quotes(quoted func(*im.Message) (int64, bool), view func(m *im.Message, quoted *im.Slot) *im.Message) AdjustFunc {
	return func(ctx context.Context, chunks ChunkSource, _ string, views []im.MessageView) error {
		type lookup struct {
			at  []int
			seq []int64
		}
		var order []string
		byConv := map[string]*lookup{}
		for i, v := range views {
			if v.Status != im.StatusOK || v.Message == nil {
				continue
			}
			seq, ok := quoted(v.Message)
			if !ok {
				// A quote view can decide without reading (or no quote at all).
				views[i].Message = view(v.Message, nil)
				continue
			}
			if im.ValidateSeq(seq) != nil {
				// No such seq can hold a message: as if the store found none there.
				views[i].Message = view(v.Message, nil)
				continue
			}
			l := byConv[v.ConversationID]
			if l == nil {
				l = &lookup{}
				byConv[v.ConversationID] = l
				order = append(order, v.ConversationID)
			}
			l.at = append(l.at, i)
			l.seq = append(l.seq, seq)
		}
		for _, conv := range order {
			l := byConv[conv]
			slots, err := Slots(ctx, chunks, conv, l.seq)
			if err != nil {
				return err
			}
			for j, i := range l.at {
				views[i].Message = view(views[i].Message, slots[j])
			}
		}
		return nil
	}
}
