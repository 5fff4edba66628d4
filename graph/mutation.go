package graph

import (
	"context"
	"time"

	"github.com/msggate/msggate/graph/model"
	"github.com/msggate/msggate/internal/auth"
	"github.com/msggate/msggate/internal/im"
	"github.com/msggate/msggate/internal/ingest"
)

// actorIn authorizes the viewer for a conversation and returns them with their group role.
func (r *Resolver) actorIn(ctx context.Context, conversationID string) (ingest.Actor, im.Conversation, error) {
	viewer, conv, err := authorize(ctx, conversationID)
	if err != nil {
		return ingest.Actor{}, im.Conversation{}, err
	}
	role, err := r.Ledger.Role(ctx, viewer.UserID, conv)
	if err != nil {
		return ingest.Actor{}, im.Conversation{}, err
	}
	return ingest.Actor{UserID: viewer.UserID, Role: role}, conv, nil
}

// revokeMessage answers Mutation.revokeMessage.
func (r *Resolver) revokeMessage(ctx context.Context, conversationID string, seq int64) (*model.Message, error) {
	if err := r.writable(); err != nil {
		return nil, err
	}
	if err := im.ValidateSeq(seq); err != nil {
		return nil, err
	}
	actor, conv, err := r.actorIn(ctx, conversationID)
	if err != nil {
		return nil, err
	}
	v, err := r.Ingester.Revoke(ctx, actor, conv, seq, time.Now().UnixMilli())
	if err != nil {
		return nil, err
	}
	return messageOf(v), nil
}

// deleteMessages answers Mutation.deleteMessages.
func (r *Resolver) deleteMessages(ctx context.Context, conversationID string, seqs []int64, forEveryone *bool) ([]*model.Message, error) {
	if err := r.writable(); err != nil {
		return nil, err
	}
	if err := im.ValidateSeqs(seqs); err != nil {
		return nil, err
	}
	actor, conv, err := r.actorIn(ctx, conversationID)
	if err != nil {
		return nil, err
	}
	views, err := r.Ingester.Delete(ctx, actor, conv, seqs, forEveryone != nil && *forEveryone)
	if err != nil {
		return nil, err
	}
	return messagesOf(views), nil
}

// clearConversation answers Mutation.clearConversation and primes the state loader with the
// state after the change.
func (r *Resolver) clearConversation(ctx context.Context, conversationID string, forEveryone *bool) (*model.Conversation, error) {
	if err := r.writable(); err != nil {
		return nil, err
	}
	actor, conv, err := r.actorIn(ctx, conversationID)
	if err != nil {
		return nil, err
	}
	st, err := r.Ingester.Clear(ctx, actor, conv, forEveryone != nil && *forEveryone)
	if err != nil {
		return nil, err
	}
	loadersFrom(ctx).stateLoader().Replace(ctx, conv.ID, st)
	return &model.Conversation{ID: conv.ID}, nil
}

var roleOf = map[model.GroupRole]int32{
	model.GroupRoleOwner:  im.RoleOwner,
	model.GroupRoleAdmin:  im.RoleAdmin,
	model.GroupRoleMember: im.RoleMember,
}

// upsertGroup answers Mutation.upsertGroup (admin tokens only). The ledger checks the list.
func (r *Resolver) upsertGroup(ctx context.Context, groupID string, members []*model.GroupMemberInput) (*model.Group, error) {
	if err := r.writable(); err != nil {
		return nil, err
	}
	viewer, err := auth.ViewerFrom(ctx)
	if err != nil {
		return nil, err
	}
	if !viewer.Admin {
		return nil, im.Errorf(im.EFORBIDDEN, "managing groups needs an admin token")
	}
	out := &model.Group{ID: groupID, Members: make([]*model.GroupMember, 0, len(members))}
	list := make([]im.GroupMember, 0, len(members))
	for _, m := range members {
		role := model.GroupRoleMember
		if m.Role != nil {
			role = *m.Role
		}
		list = append(list, im.GroupMember{UserID: m.UserID, Role: roleOf[role]})
		out.Members = append(out.Members, &model.GroupMember{UserID: m.UserID, Role: role})
	}
	if err := r.Ledger.SetGroup(ctx, groupID, list); err != nil {
		return nil, err
	}
	return out, nil
}
