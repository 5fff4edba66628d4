package server

import (
	"context"

	"github.com/99designs/gqlgen/graphql"
	"github.com/99designs/gqlgen/graphql/errcode"
	"github.com/99designs/gqlgen/graphql/handler/extension"
	"github.com/99designs/gqlgen/graphql/handler/lru"
	"github.com/vektah/gqlparser/v2/gqlerror"

	"github.com/msggate/msggate/graph"
	"github.com/msggate/msggate/internal/auth"
)

// MaxPersistedQueryBytes bounds a query kept for automatic persisted queries. Clients of a
// longer query keep sending it in full, which the protocol allows.
const MaxPersistedQueryBytes = 64 << 10

// Defaults of what one user may register in persisted queries in the store's window, a day
// for msggate's Redis (Settings.PersistedQueriesPerUser, PersistedQueryBytesPerUser).
// An application registers each of its operations once when the store has lost it, and
// several users share what one of them registered: these are far above what one needs.
const (
	DefaultPersistedQueriesPerUser    = 200
	DefaultPersistedQueryBytesPerUser = 1 << 20
)

// PersistedQueryStore keeps the queries of automatic persisted queries (APQ).
// *cache.PersistedQueries is one, in Redis.
type PersistedQueryStore interface {
	// Get returns the query registered under hash.
	Get(ctx context.Context, hash string) (string, bool)
	// Register keeps query under hash, its SHA-256, on userID's account, unless that would
	// take what userID registered in the store's window past maxQueries queries or maxBytes
	// bytes (negative: no bound). It answers whether the query is kept.
	Register(ctx context.Context, userID, hash, query string, maxQueries int, maxBytes int64) (bool, error)
}

// persistedQueries is automatic persisted queries (the Apollo APQ protocol) over a
// PersistedQueryStore. gqlgen's extension finds a query by its hash and checks a hash sent
// with its query; it would store the query before reading it, so it is given a store it
// cannot add to, and the query is registered here once it has been parsed, validated and
// found within the limits (NewHandler installs this after them), and only for an
// authenticated user, within their bound: anonymous requests are not rate limited and can
// only introspect, so nothing is lost by that.
type persistedQueries struct {
	apq   extension.AutomaticPersistedQuery
	store PersistedQueryStore
	o     options
}

func newPersistedQueries(o options) persistedQueries {
	return persistedQueries{apq: extension.AutomaticPersistedQuery{Cache: lookupOnly{o.PersistedQueries}},
		store: o.PersistedQueries, o: o}
}

var _ interface {
	graphql.HandlerExtension
	graphql.OperationParameterMutator
	graphql.OperationContextMutator
} = persistedQueries{}

func (persistedQueries) ExtensionName() string { return "PersistedQueries" }

func (p persistedQueries) Validate(schema graphql.ExecutableSchema) error {
	return p.apq.Validate(schema)
}

// MutateOperationParameters gives gqlgen's APQ errors that have no code (a hash that does not
// match its query, an unknown protocol version) BAD_USER_INPUT: they are the client's, and an
// error without a code would be answered as INTERNAL and logged as a failure.
func (p persistedQueries) MutateOperationParameters(ctx context.Context, params *graphql.RawParams) *gqlerror.Error {
	err := p.apq.MutateOperationParameters(ctx, params)
	if err != nil && err.Extensions["code"] == nil {
		errcode.Set(err, graph.CodeBadUserInput)
	}
	return err
}

// MutateOperationContext registers the query the request sent with its hash: gqlgen calls it
// only for an operation that parsed and validated, and after the limits that are installed
// before it. A registration that is refused or fails (Redis is down: the rate limiter logs
// that) does not fail the request: the client sends the full query again next time, as the
// protocol has it do after any miss.
func (p persistedQueries) MutateOperationContext(ctx context.Context, opCtx *graphql.OperationContext) *gqlerror.Error {
	stats := extension.GetApqStats(ctx)
	if stats == nil || !stats.SentQuery || len(opCtx.RawQuery) > MaxPersistedQueryBytes {
		return nil
	}
	viewer, err := auth.ViewerFrom(ctx)
	if err != nil {
		return nil
	}
	kept, err := p.store.Register(ctx, viewer.UserID, stats.Hash, opCtx.RawQuery, p.o.PersistedQueriesPerUser, p.o.PersistedQueryBytesPerUser)
	if err == nil && !kept {
		p.o.countRefusal(limitPersistedQueries)
	}
	return nil
}

// lookupOnly is a persisted-query store as gqlgen's APQ extension sees it: it finds queries,
// and what the extension adds is dropped (persistedQueries registers them).
type lookupOnly struct{ store PersistedQueryStore }

func (l lookupOnly) Get(ctx context.Context, hash string) (string, bool) {
	return l.store.Get(ctx, hash)
}

func (lookupOnly) Add(context.Context, string, string) {}

// processQueries is the default PersistedQueryStore: an LRU of 1000 queries in this process,
// which other instances do not see. Its size bounds it, whoever registers.
type processQueries struct{ lru *lru.LRU[string] }

func newProcessQueries() processQueries { return processQueries{lru.New[string](1000)} }

func (p processQueries) Get(ctx context.Context, hash string) (string, bool) {
	return p.lru.Get(ctx, hash)
}

func (p processQueries) Register(ctx context.Context, _, hash, query string, _ int, _ int64) (bool, error) {
	p.lru.Add(ctx, hash, query)
	return true, nil
}
