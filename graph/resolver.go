// Package graph is msggate's GraphQL boundary: the schema, gqlgen's generated executor, thin
// resolvers, the per-request dataloaders and the error presenter. It serves no protocol: the
// transports, limits and authentication middleware are internal/server's.
package graph

import (
	"log/slog"

	"github.com/99designs/gqlgen/graphql"

	"github.com/msggate/msggate/internal/history"
	"github.com/msggate/msggate/internal/ingest"
	"github.com/msggate/msggate/internal/search/finder"
	imsync "github.com/msggate/msggate/internal/sync"
)

// Resolver holds what the resolvers call. Wiring happens in internal/gateway.
//
// A gateway over msggate's own store sets Ledger, Chunks, Ingester and Hub. One over an
// OpenIM deployment (OpenIM mode) sets Conversations and Chunks (and AdjustViews) to the
// deployment's and leaves Ledger, Sync, Ingester and Hub nil: it is read-only, so every
// mutation answers READ_ONLY, and it has no event log, so syncDifference and syncEvents answer
// UNSUPPORTED.
type Resolver struct {
	// Conversations answers what reads need about conversations; nil: Ledger.
	Conversations ConversationSource
	// Sync is the per-user event log; nil: the Ledger's, and without a Ledger there is none.
	Sync SyncLog
	// Ledger is msggate's own seq ledger. The write path's mutations need it.
	Ledger *imsync.Ledger
	// Chunks is where the request's loaders read chunks from (history.Chunks over
	// cache.ReadThrough for msggate's own store).
	Chunks history.ChunkSource
	// AdjustViews is given to every history read (see history.Reader.Adjust); nil for
	// msggate's own store.
	AdjustViews history.AdjustFunc
	// ClientMsgs finds messages by client message ID (history(aroundClientMsgID:)); nil: the
	// store keeps no such index, and those pages answer UNSUPPORTED.
	ClientMsgs history.ClientMsgIndex
	// Mentions counts and lists unread mentions; nil: those fields answer UNSUPPORTED.
	Mentions MentionSource
	// Ingester is the write path; nil makes every mutation answer READ_ONLY.
	Ingester *ingest.Ingester
	// Finder answers Query.search; nil: it answers UNSUPPORTED.
	Finder *finder.Finder
	// Hub serves subscriptions; nil switches them off.
	Hub *imsync.Hub
	// RenderedNodes remembers the conversation list's rendered nodes; nil renders every node
	// every time.
	RenderedNodes *RenderedNodes
	Logger        *slog.Logger
}

// NewSchema returns the executable schema over r, its lists priced for the complexity limit
// (priceLists).
func NewSchema(r *Resolver) graphql.ExecutableSchema {
	cfg := Config{Resolvers: r}
	priceLists(&cfg.Complexity)
	return NewExecutableSchema(cfg)
}
