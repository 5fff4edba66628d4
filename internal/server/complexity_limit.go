package server

import (
	"context"

	"github.com/99designs/gqlgen/complexity"
	"github.com/99designs/gqlgen/graphql"
	"github.com/99designs/gqlgen/graphql/handler/extension"
	"github.com/99designs/gqlgen/graphql/handler/lru"
	"github.com/vektah/gqlparser/v2/gqlerror"
)

// pricedOperations is gqlgen's complexity limit, with the complexity of each operation that
// takes no variables kept by its query text: such an operation costs the same every time it
// is sent, and a client that sends one query again and again (a list it refreshes) would
// otherwise have it priced, field by field, on every request. An operation with variables is
// priced each time, as its cost may follow them (first, limit, seqs).
type pricedOperations struct {
	*extension.ComplexityLimit
	known graphql.Cache[int] // the cost of each operation priced within the limit
}

func newPricedOperations(limit int) pricedOperations {
	return pricedOperations{
		ComplexityLimit: extension.FixedComplexityLimit(limit, complexity.WithFixedScalarValue(0)),
		known:           lru.New[int](1000),
	}
}

// MutateOperationContext refuses an operation over the limit, as gqlgen's does. An operation
// priced from memory gets no ComplexityStats (nothing in msggate reads them).
func (p pricedOperations) MutateOperationContext(ctx context.Context, oc *graphql.OperationContext) *gqlerror.Error {
	op := oc.Doc.Operations.ForName(oc.OperationName)
	if op == nil || len(op.VariableDefinitions) > 0 || oc.RawQuery == "" {
		return p.ComplexityLimit.MutateOperationContext(ctx, oc)
	}
	key := oc.RawQuery
	if oc.OperationName != "" {
		key = oc.OperationName + "\x00" + key
	}
	if _, ok := p.known.Get(ctx, key); ok {
		return nil
	}
	if err := p.ComplexityLimit.MutateOperationContext(ctx, oc); err != nil {
		return err
	}
	if s, ok := oc.Stats.GetExtension(p.ExtensionName()).(*extension.ComplexityStats); ok {
		p.known.Add(ctx, key, s.Complexity)
	}
	return nil
}
