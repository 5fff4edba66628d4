package gateway

import (
	"github.com/msggate/msggate/graph"
	"github.com/msggate/msggate/internal/auth"
	"github.com/msggate/msggate/internal/cache"
	"github.com/msggate/msggate/internal/history"
	"github.com/msggate/msggate/internal/mention"
	"github.com/msggate/msggate/internal/ops"
)

// readPath is what the GraphQL layer reads through, how it authenticates, and what /readyz
// checks: msggate's own store, or in OpenIM mode the deployment's (openIMReadPath).
type readPath struct {
	resolver      *graph.Resolver
	authenticator auth.Authenticator
	tokenHeader   string
	checks        []ops.Check
}

func (g *Gateway) readPath() readPath {
	own := ops.Check{Name: "redis", Ping: g.Cache.Ping}
	if s := g.OpenIM; s != nil {
		return g.openIMReadPath(s, own)
	}
	cached := cache.NewReadThrough(g.Store, g.Cache, g.Logger)
	cached.ObserveCache = g.Metrics.ObserveChunkCache
	return readPath{
		resolver: &graph.Resolver{
			Ledger:     g.Ledger,
			Chunks:     &history.Chunks{Store: cached, Memory: g.ChunkMemory},
			ClientMsgs: g.Store,
			Mentions:   mention.New(g.Store, g.Cache, g.Logger),
			Ingester:   g.Ingest,
			Finder:     g.finder(g.Ledger),
			Hub:        g.Hub,
			// OpenIM's states carry no chunks version, so its nodes could not be remembered.
			RenderedNodes: g.renderedNodes(),
			Logger:        g.Logger,
		},
		authenticator: g.authenticator(),
		checks:        []ops.Check{{Name: "mongodb", Ping: g.Store.Ping}, own},
	}
}

// renderedNodes is the memory of rendered list nodes Config.RenderedNodes asks for; nil: off.
func (g *Gateway) renderedNodes() *graph.RenderedNodes {
	if g.Config.RenderedNodes < 0 {
		return nil
	}
	return graph.NewRenderedNodes(g.Config.RenderedNodes)
}

// authenticator checks msggate's own tokens and, when one is configured, the identity
// provider's.
func (g *Gateway) authenticator() auth.Authenticator {
	if g.IdentityProvider == nil {
		return auth.HS256(g.Secret)
	}
	return auth.WithIdentityProvider(auth.HS256(g.Secret), g.IdentityProvider)
}
