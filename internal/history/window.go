package history

import "github.com/msggate/msggate/internal/im"

// inWindow keeps, in order, the seqs the viewer may read now: those up to the max seq (higher
// ones do not exist yet). A seq below the viewer's min seq existed and is gone for them
// (retention, clearing): that is an answer of its own, im.HistoryUnavailable, not a message
// left out.
func inWindow(conversationID string, st im.SeqState, seqs []int64) ([]int64, error) {
	lo := st.VisibleMin()
	visible := make([]int64, 0, len(seqs))
	for _, s := range seqs {
		if s < lo {
			return nil, im.HistoryUnavailable(conversationID, lo)
		}
		if s <= st.MaxSeq {
			visible = append(visible, s)
		}
	}
	return visible, nil
}
