package ingest

import (
	"context"

	"github.com/msggate/msggate/internal/im"
)

// Clear hides a conversation's history up to now from the actor only, or, forEveryone, from
// every member (see im.CanClearForEveryone for who may). It returns the actor's state after
// the change.
func (in *Ingester) Clear(ctx context.Context, actor Actor, conv im.Conversation, forEveryone bool) (im.SeqState, error) {
	if !forEveryone {
		return in.ledger.ClearForUser(ctx, actor.UserID, conv.ID)
	}
	if !im.CanClearForEveryone(conv.Kind, actor.Role) {
		return im.SeqState{}, im.Errorf(im.EFORBIDDEN, "only a group's owner or an admin may clear its history for everyone")
	}
	return in.ledger.ClearForEveryone(ctx, actor.UserID, conv.ID)
}
