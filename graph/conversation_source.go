package graph

import (
	"context"

	"github.com/msggate/msggate/internal/auth"
	"github.com/msggate/msggate/internal/im"
	imsync "github.com/msggate/msggate/internal/sync"
)

// ConversationSource is what reads need to know about conversations besides their messages:
// how their IDs are spelled, who may read them, their seq state for a user, and a user's
// list. msggate's own *imsync.Ledger is one; an OpenIM deployment's *openim.Store is another,
// whose IDs follow OpenIM's rules and whose access comes from OpenIM's records. Every method
// answers a whole batch at once (the request's loaders call them once per query depth).
type ConversationSource interface {
	// ParseConversationID checks an ID by the store's rules (EINVALID when malformed). It
	// does not say whether the conversation exists: CanRead does.
	ParseConversationID(id string) (im.Conversation, error)
	// CanRead reports, aligned with conversationIDs, whether userID may read each.
	CanRead(ctx context.Context, userID string, conversationIDs []string) ([]bool, error)
	// States returns userID's seq state in each conversation, aligned with conversationIDs.
	States(ctx context.Context, userID string, conversationIDs []string) ([]im.SeqState, error)
	// UserConversations returns userID's conversations that hold messages, with their
	// states, newest activity first (ties by conversation ID).
	UserConversations(ctx context.Context, userID string) ([]im.SeqState, error)
}

// AccessWithStates is a ConversationSource whose access decision may cost a round trip (a
// group's membership) that can carry the viewer's states as well (*imsync.Ledger): a page of
// the conversation, which reads its state next, then needs no round trip of its own for it.
type AccessWithStates interface {
	// CanReadWithStates is CanRead that also returns userID's state in the conversations it
	// read along (aligned with conversationIDs; a state without ConversationID was not read).
	CanReadWithStates(ctx context.Context, userID string, conversationIDs []string) ([]bool, []im.SeqState, error)
}

// ConversationPager is a ConversationSource that answers a page of a user's list without
// reading the whole list (*imsync.Ledger, from its order in Redis). The list page asks it when
// the source is one; another source's page is cut from UserConversations.
type ConversationPager interface {
	// ConversationPage returns the page of at most n of userID's conversations after the
	// position after (nil: the first page), as im.PageAfter would cut it from
	// UserConversations.
	ConversationPage(ctx context.Context, userID string, after *im.ListPosition, n int) (im.ConversationPage, error)
}

// SyncLog is the per-user event log multi-device sync reads (*imsync.EventLog).
type SyncLog interface {
	// Summary returns userID's state summary and the log token it is valid from.
	Summary(ctx context.Context, userID string) (imsync.Summary, error)
	// ParseToken parses a token Summary or Difference gave, by the ID rules of the log's store.
	ParseToken(s string) (im.SyncToken, error)
	// Difference returns userID's events after since.
	Difference(ctx context.Context, userID string, since im.SyncToken, limit int) (imsync.Difference, error)
}

// conversations returns the resolver's conversation source: Conversations, else the Ledger.
func (r *Resolver) conversations() ConversationSource {
	if r.Conversations != nil {
		return r.Conversations
	}
	if r.Ledger != nil {
		return r.Ledger
	}
	return nil
}

// syncLog returns the resolver's event log (Sync, else the Ledger's), nil when there is none.
func (r *Resolver) syncLog() SyncLog {
	if r.Sync != nil {
		return r.Sync
	}
	if r.Ledger != nil {
		return r.Ledger.Events()
	}
	return nil
}

// viewerLog is the event log and the viewer whose events a sync operation reads, or why the
// operation cannot run.
func (r *Resolver) viewerLog(ctx context.Context) (SyncLog, auth.Viewer, error) {
	log := r.syncLog()
	if log == nil {
		return nil, auth.Viewer{}, errNoEventLog
	}
	viewer, err := auth.ViewerFrom(ctx)
	if err != nil {
		return nil, auth.Viewer{}, err
	}
	return log, viewer, nil
}

// errNoEventLog answers what needs the event log on a gateway without one.
var errNoEventLog = im.Errorf(im.EUNSUPPORTED,
	"this gateway keeps no per-user event log (it serves a store without one, such as an OpenIM deployment): read syncState again instead")

// errReadOnly answers every mutation on a gateway without a write path.
var errReadOnly = im.Errorf(im.EREADONLY,
	"this gateway is read-only (it serves a store it must not change, such as an OpenIM deployment): nothing was changed")

// writable refuses a mutation on a read-only gateway, before anything else is looked at.
func (r *Resolver) writable() error {
	if r.Ingester == nil || r.Ledger == nil {
		return errReadOnly
	}
	return nil
}
