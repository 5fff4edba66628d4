package graph

import (
	"context"

	"github.com/99designs/gqlgen/graphql"
	"github.com/vektah/gqlparser/v2/ast"

	"github.com/msggate/msggate/graph/model"
	"github.com/msggate/msggate/internal/history"
)

// seqAtTime answers Conversation.seqAtTime: null when no message the viewer can read was sent
// on that side of the time.
func (r *Resolver) seqAtTime(ctx context.Context, conversationID string, sendTime int64, direction *model.TimeDirection) (*int64, error) {
	h, err := r.historyOf(ctx)
	if err != nil {
		return nil, err
	}
	return seqAtTimeOf(ctx, h, conversationID, sendTime, direction)
}

func seqAtTimeOf(ctx context.Context, h history.Reader, conversationID string, sendTime int64, direction *model.TimeDirection) (*int64, error) {
	dir := history.AtOrAfter
	if direction != nil && *direction == model.TimeDirectionAtOrBefore {
		dir = history.AtOrBefore
	}
	seq, ok, err := h.SeqAtTime(ctx, conversationID, sendTime, dir)
	if err != nil || !ok {
		return nil, err
	}
	return &seq, nil
}

// seqsAtTimeOf answers the seqAtTime field f of every node of a conversation page, side by
// side as historiesOf reads pages; a failure fails the page at the field that failed (the
// writer writes the nodes, so no null can stand in for one).
func seqsAtTimeOf(ctx context.Context, h history.Reader, f graphql.CollectedField, nodes []model.ConversationNode) error {
	args := f.ArgumentMap(graphql.GetOperationContext(ctx).Variables)
	sendTime, err := model.UnmarshalInt64(args["time"])
	if err != nil {
		return err
	}
	var direction *model.TimeDirection
	if v, ok := args["direction"]; ok && v != nil {
		var d model.TimeDirection
		if err := d.UnmarshalGQL(v); err != nil {
			return err
		}
		direction = &d
	}
	seqs := make([]*int64, len(nodes))
	siblings := withSiblings(ctx)
	if err := eachNode(ctx, f, len(nodes), func(i int) (err error) {
		seqs[i], err = seqAtTimeOf(siblings, h, nodes[i].ID, sendTime, direction)
		return err
	}); err != nil {
		return err
	}
	for i := range nodes {
		if nodes[i].SeqsAtTime == nil {
			nodes[i].SeqsAtTime = map[*ast.Field]*int64{}
		}
		nodes[i].SeqsAtTime[f.Field] = seqs[i]
	}
	return nil
}
