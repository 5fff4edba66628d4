package graph

import (
	"context"

	"github.com/99designs/gqlgen/graphql"
	"github.com/99designs/gqlgen/graphql/errcode"
	"github.com/99designs/gqlgen/graphql/handler/extension"
	"github.com/vektah/gqlparser/v2/gqlerror"

	"github.com/msggate/msggate/internal/auth"
)

// MaxPersistedQueryBytes bounds a query kept for automatic persisted queries. Clients of a
// longer query keep sending it in full, which the protocol allows.
const MaxPersistedQueryBytes = 64 << 10

// persistedQueries is gqlgen's automatic persisted queries (the Apollo APQ protocol) over
// store, which only authenticated requests may add to.
func persistedQueries(store graphql.Cache[string]) graphql.HandlerExtension {
	return apqWithCodes{extension.AutomaticPersistedQuery{Cache: userRegisteredQueries{store}}}
}

// apqWithCodes gives gqlgen's APQ errors that have no code (a hash that does not match its
// query, an unknown protocol version) BAD_USER_INPUT: they are the client's, and an error
// without a code would be answered as INTERNAL and logged as a failure.
type apqWithCodes struct {
	extension.AutomaticPersistedQuery
}

func (a apqWithCodes) MutateOperationParameters(ctx context.Context, params *graphql.RawParams) *gqlerror.Error {
	err := a.AutomaticPersistedQuery.MutateOperationParameters(ctx, params)
	if err != nil && err.Extensions["code"] == nil {
		errcode.Set(err, CodeBadUserInput)
	}
	return err
}

// userRegisteredQueries lets every request look up a persisted query but only an
// authenticated one register it: anonymous requests are not rate limited, and must not be able
// to fill the shared store. Nothing is lost by it, as anonymous clients can only introspect.
type userRegisteredQueries struct {
	graphql.Cache[string]
}

func (c userRegisteredQueries) Add(ctx context.Context, hash, query string) {
	if len(query) > MaxPersistedQueryBytes {
		return
	}
	if _, err := auth.ViewerFrom(ctx); err != nil {
		return
	}
	c.Cache.Add(ctx, hash, query)
}
