package graph

import (
	"log/slog"
	"net/http"

	"github.com/99designs/gqlgen/graphql/handler"
	"github.com/99designs/gqlgen/graphql/handler/extension"
	"github.com/99designs/gqlgen/graphql/handler/lru"
	"github.com/99designs/gqlgen/graphql/handler/transport"
	"github.com/vektah/gqlparser/v2/ast"
)

// HandlerOptions configures the GraphQL HTTP handler. The zero value is usable except for
// JWTSecret, which must be set.
type HandlerOptions struct {
	// JWTSecret verifies bearer tokens (HS256).
	JWTSecret []byte
	// Introspection allows schema introspection (GraphiQL needs it). Default off in the zero
	// value; the server turns it on unless told otherwise.
	Introspection bool
	// MaxBodyBytes bounds a request body. Default 1 MiB.
	MaxBodyBytes int64
	// Loaders tunes the per-request dataloaders.
	Loaders LoaderOptions
	// Logger receives internal errors. Default slog.Default().
	Logger *slog.Logger
}

// NewHandler returns the GraphQL endpoint: GET and POST transports, a parsed-query cache, the
// error presenter and panic recovery, behind the middleware that authenticates the request
// and creates its loaders.
func NewHandler(r *Resolver, o HandlerOptions) http.Handler {
	if o.MaxBodyBytes == 0 {
		o.MaxBodyBytes = 1 << 20
	}
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	if r.Logger == nil {
		r.Logger = o.Logger
	}
	srv := handler.New(NewExecutableSchema(Config{Resolvers: r}))
	srv.AddTransport(transport.Options{})
	srv.AddTransport(transport.GET{})
	srv.AddTransport(transport.POST{})
	srv.SetQueryCache(lru.New[*ast.QueryDocument](1000))
	if o.Introspection {
		srv.Use(extension.Introspection{})
	}
	srv.SetErrorPresenter(errorPresenter(o.Logger))
	srv.SetRecoverFunc(recoverFunc(o.Logger))
	limited := http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		req.Body = http.MaxBytesReader(w, req.Body, o.MaxBodyBytes)
		srv.ServeHTTP(w, req)
	})
	return withLoaders(r, o.JWTSecret, o.Loaders, limited)
}
