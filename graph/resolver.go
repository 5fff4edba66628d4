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
	Ledger   *imsync.Ledger
	Reader   *history.Reader
	Ingester *ingest.Ingester
	// Hub serves subscriptions; nil switches them off.
	Hub    *imsync.Hub
	Logger *slog.Logger
}
