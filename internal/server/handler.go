// Package server is msggate's GraphQL server over graph: the POST and WebSocket transports,
// the request and connection limits, admission, persisted queries, the middleware that
// authenticates a request and gives it its loaders, and the metrics and tracing extensions.
// NewHandler assembles them; internal/gateway gives it its Settings and Dependencies.
package server

import (
	"log/slog"
	"net/http"
	"time"

	"github.com/99designs/gqlgen/graphql/handler"
	"github.com/99designs/gqlgen/graphql/handler/extension"
	"github.com/99designs/gqlgen/graphql/handler/lru"
	"github.com/99designs/gqlgen/graphql/handler/transport"
	"github.com/vektah/gqlparser/v2/ast"
	"go.opentelemetry.io/otel/trace"

	"github.com/msggate/msggate/graph"
	"github.com/msggate/msggate/internal/auth"
)

// Settings are what an operator chooses for the GraphQL handler (msggate serve's flags write
// them). The zero value of every field is its default: a zero limit takes its Default*
// constant, a negative one switches the limit off. Each limit refuses a request with a
// LIMIT_EXCEEDED error before any store is asked.
type Settings struct {
	// Introspection allows schema introspection (GraphiQL needs it); when off, an
	// introspection query is refused with FORBIDDEN. Default off in the zero value; msggate
	// serve turns it on for the embedded default only, unless told otherwise.
	Introspection bool
	// MaxBodyBytes bounds a request body. Default 1 MiB.
	MaxBodyBytes int64
	// MaxTokens bounds the tokens of a query, checked while it is parsed. Default 15000.
	MaxTokens int
	// MaxDepth bounds how deep fields nest, introspection aside. Default 12.
	MaxDepth int
	// MaxAliases bounds the aliased fields of an operation. Default 30.
	MaxAliases int
	// MaxComplexity bounds an operation's cost, about the number of objects it can resolve
	// with list sizes counted (complexity.go prices the lists). Default 5000.
	MaxComplexity int
	// RequestTimeout bounds the time a request may take; its store calls give up when it is
	// over. Default 30s.
	RequestTimeout time.Duration
	// RateLimit is the sustained requests a second each user may make. Default 20.
	RateLimit float64
	// RateBurst is the requests a user may make at once after a quiet spell. Default 40.
	RateBurst int
	// AnonymousRateLimit is the sustained requests a second one client address may make
	// without a valid token. Default DefaultAnonymousRateLimit.
	AnonymousRateLimit float64
	// AnonymousRateBurst is the requests without a valid token an address may make at once.
	// Default DefaultAnonymousRateBurst.
	AnonymousRateBurst int
	// MaxConnectionsPerUser bounds one user's WebSocket connections to this instance; one more
	// is closed at connection_init with CloseTooManyConnections. Default
	// DefaultMaxConnectionsPerUser.
	MaxConnectionsPerUser int
	// MaxPendingConnectionsPerAddress bounds the WebSocket connections from one client address
	// waiting for connection_init; one more upgrade is refused with HTTP 429. Default
	// DefaultMaxPendingConnectionsPerAddress.
	MaxPendingConnectionsPerAddress int
	// ClientIPHeader, when set, names the header in which the proxy in front of the gateway
	// gives the client's address (X-Forwarded-For, X-Real-IP), for the limits kept per address.
	// Default: the address the connection comes from. Set it only behind a proxy that writes
	// the header, or clients choose their own address.
	ClientIPHeader string
	// PersistedQueriesPerUser and PersistedQueryBytesPerUser bound what one user may register
	// in PersistedQueries in its window (a day for msggate's Redis): a query past either still
	// runs, but is not kept. Defaults DefaultPersistedQueriesPerUser and
	// DefaultPersistedQueryBytesPerUser; negative: no bound. The default store, in process,
	// is bounded by its size instead.
	PersistedQueriesPerUser    int
	PersistedQueryBytesPerUser int64
	// ConnectionRate is how many new WebSocket connections a second this instance accepts at
	// connection_init, ConnectionBurst how many at once after a quiet spell; one more is
	// closed with CloseTryAgainLater and a retry hint. It spreads a reconnect storm (hundreds
	// of devices after a gateway or Redis was lost) over seconds. Defaults
	// DefaultConnectionRate and DefaultConnectionBurst; a negative rate switches it off.
	ConnectionRate  float64
	ConnectionBurst int
	// KeepAlive is how often an idle WebSocket connection is pinged (graphql-ws "ka" messages,
	// graphql-transport-ws pings). Default DefaultKeepAlive.
	KeepAlive time.Duration
	// SessionCheckInterval is how often the tokens of live WebSocket connections are asked
	// about again when the Authenticator can withdraw tokens (auth.SessionChecker: OpenIM's);
	// a withdrawn token's connection is closed with CloseUnauthorized. Default
	// DefaultSessionCheckInterval; negative: never.
	SessionCheckInterval time.Duration
	// Loaders tunes the per-request dataloaders' batching (Wait, MaxBatch). Its ObserveBatch
	// is not a setting: Dependencies.ObserveBatch takes its place.
	Loaders graph.LoaderOptions
}

// Dependencies are what the gateway wires into the handler from what it opened. JWTSecret
// must be set unless Authenticator is; the rest may be left nil.
type Dependencies struct {
	// JWTSecret verifies bearer tokens (HS256).
	JWTSecret []byte
	// Authenticator checks the tokens clients present (see authenticate.go). Default
	// msggate's own tokens: auth.HS256(JWTSecret).
	Authenticator auth.Authenticator
	// TokenHeader, when set, names a header that carries a bare token, read when there is no
	// Authorization header (OpenIM's clients send "token").
	TokenHeader string
	// RateLimiter keeps the per-user token buckets; nil means no rate limit.
	RateLimiter RateLimiter
	// PersistedQueries keeps the queries of automatic persisted queries (APQ). Default: an
	// in-process LRU of 1000, which other instances do not see.
	PersistedQueries PersistedQueryStore
	// StoreAdmission and CacheAdmission, when set, say whether the message store and Redis
	// would take more work now: an operation that needs one that would not is refused before
	// it runs, with UNAVAILABLE and a retry hint (admission.go).
	StoreAdmission Admitter
	CacheAdmission Admitter
	// StoreRequests, when set, bounds the operations that need the store (mutations,
	// catch-up reads) running at once, for their whole run: each makes several store
	// operations in turn, so letting in more than the store finishes quickly only makes every
	// one of them slow. One that would wait too long for its turn is refused (admission.go).
	StoreRequests Acquirer
	// Logger receives internal errors. Default slog.Default().
	Logger *slog.Logger
	// Metrics, when set, is told of every operation and answer. Its extension is installed
	// first, so that it wraps every other one and sees every answer, the limits' too.
	Metrics OperationMetrics
	// ObserveBatch, when set, is told of every dataloader batch (graph.LoaderOptions).
	ObserveBatch func(loader string, keys int)
	// TracerProvider, when set (tracing on), makes a span for each operation and each
	// loader batch (tracing.go). nil, the default, installs no tracing at all: it costs
	// nothing.
	TracerProvider trace.TracerProvider
}

// options are a handler's settings and dependencies, with the defaults filled in.
type options struct {
	Settings
	Dependencies
}

// NewHandler returns the GraphQL endpoint: GET and POST transports, automatic persisted
// queries, a parsed-query cache, the limits, the error presenter and panic recovery, behind
// the middleware that authenticates the request and creates its loaders.
func NewHandler(r *graph.Resolver, s Settings, d Dependencies) http.Handler {
	o := options{s.withDefaults(), d.withDefaults()}
	o.Loaders.ObserveBatch = o.ObserveBatch
	var tracer trace.Tracer
	if o.TracerProvider != nil {
		tracer = o.TracerProvider.Tracer(tracerName)
		o.Loaders = o.Loaders.WithTracer(tracer)
	}
	if r.Logger == nil {
		r.Logger = o.Logger
	}
	srv := handler.New(graph.NewSchema(r))
	if o.Metrics != nil {
		srv.Use(metricsExtension{o.Metrics})
	}
	if tracer != nil {
		// Next to the metrics: its span covers every answer, the limits' refusals too.
		srv.Use(tracingExtension{tracer})
	}
	srv.AddTransport(refusedTransport{})
	srv.AddTransport(transport.Options{})
	srv.AddTransport(transport.GET{})
	srv.AddTransport(postTransport{})
	srv.AddTransport(newWSTransport(r, o))
	srv.AroundOperations(connectionOperations)
	srv.SetQueryCache(lru.New[*ast.QueryDocument](1000))
	if o.MaxTokens > 0 {
		srv.SetParserTokenLimit(o.MaxTokens)
	}
	if o.Introspection {
		srv.Use(extension.Introspection{})
	}
	srv.Use(shapeLimit{maxDepth: o.MaxDepth, maxAliases: o.MaxAliases, introspection: o.Introspection})
	if o.MaxComplexity > 0 {
		srv.Use(newPricedOperations(o.MaxComplexity))
	}
	// After the limits: a query is registered only once they have let it through.
	srv.Use(newPersistedQueries(o))
	// Last of the checks before execution: the others cost nothing and refuse for good.
	srv.Use(admissionCheck{store: o.StoreAdmission, cache: o.CacheAdmission, requests: o.StoreRequests, timeout: o.RequestTimeout, o: o})
	srv.AroundRootFields(timeLimit)
	srv.SetErrorPresenter(presentLimits(graph.ErrorPresenter(o.Logger), o.RequestTimeout, o.Logger))
	srv.SetRecoverFunc(graph.RecoverFunc(o.Logger))
	h := gated(srv, o,
		bodyGate(o.MaxBodyBytes),
		rateGate(o),
		connectionGate(newConnectionLimits(o), o))
	return withConnHolder(withLoaders(r, o, withDeadline(o.RequestTimeout, h)))
}

func (o Settings) withDefaults() Settings {
	if o.MaxBodyBytes == 0 {
		o.MaxBodyBytes = DefaultMaxBodyBytes
	}
	if o.MaxTokens == 0 {
		o.MaxTokens = DefaultMaxTokens
	}
	if o.MaxDepth == 0 {
		o.MaxDepth = DefaultMaxDepth
	}
	if o.MaxAliases == 0 {
		o.MaxAliases = DefaultMaxAliases
	}
	if o.MaxComplexity == 0 {
		o.MaxComplexity = DefaultMaxComplexity
	}
	if o.RequestTimeout == 0 {
		o.RequestTimeout = DefaultRequestTimeout
	}
	if o.RateLimit == 0 {
		o.RateLimit = DefaultRateLimit
	}
	if o.RateBurst == 0 {
		o.RateBurst = DefaultRateBurst
	}
	if o.AnonymousRateLimit == 0 {
		o.AnonymousRateLimit = DefaultAnonymousRateLimit
	}
	if o.AnonymousRateBurst == 0 {
		o.AnonymousRateBurst = DefaultAnonymousRateBurst
	}
	if o.MaxConnectionsPerUser == 0 {
		o.MaxConnectionsPerUser = DefaultMaxConnectionsPerUser
	}
	if o.MaxPendingConnectionsPerAddress == 0 {
		o.MaxPendingConnectionsPerAddress = DefaultMaxPendingConnectionsPerAddress
	}
	if o.PersistedQueriesPerUser == 0 {
		o.PersistedQueriesPerUser = DefaultPersistedQueriesPerUser
	}
	if o.PersistedQueryBytesPerUser == 0 {
		o.PersistedQueryBytesPerUser = DefaultPersistedQueryBytesPerUser
	}
	if o.ConnectionRate == 0 {
		o.ConnectionRate = DefaultConnectionRate
	}
	if o.ConnectionBurst == 0 {
		o.ConnectionBurst = DefaultConnectionBurst
	}
	if o.KeepAlive == 0 {
		o.KeepAlive = DefaultKeepAlive
	}
	return o
}

func (o Dependencies) withDefaults() Dependencies {
	if o.Authenticator == nil {
		o.Authenticator = auth.HS256(o.JWTSecret)
	}
	if o.PersistedQueries == nil {
		o.PersistedQueries = newProcessQueries()
	}
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	return o
}
