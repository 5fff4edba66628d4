// Package graph is msggate's GraphQL boundary: the schema, gqlgen's generated executor, thin
// resolvers, the per-request dataloaders, authentication and the error presenter.
package graph

import (
	"log/slog"

	"github.com/msggate/msggate/internal/history"
	"github.com/msggate/msggate/internal/ingest"
	imsync "github.com/msggate/msggate/internal/sync"
)

// Resolver holds what the resolvers call. Wiring happens in server.go.
type Resolver struct {
	Ledger *imsync.Ledger
	// Chunks is where the request's loaders read chunks from (history.CachedChunks for
	// msggate's own store).
	Chunks history.ChunkSource
	// AdjustViews is given to every history read (see history.Reader.Adjust); nil for
	// msggate's own store.
	AdjustViews history.AdjustFunc
	Ingester    *ingest.Ingester
	// Hub serves subscriptions; nil switches them off.
	Hub    *imsync.Hub
	Logger *slog.Logger
}
