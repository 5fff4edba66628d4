package server

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"time"

	"github.com/99designs/gqlgen/graphql"
	"github.com/99designs/gqlgen/graphql/errcode"
	"github.com/vektah/gqlparser/v2/ast"
	"github.com/vektah/gqlparser/v2/gqlerror"

	"github.com/msggate/msggate/graph"
	"github.com/msggate/msggate/internal/im"
)

// Defaults of the request limits (Settings). Each is checked before any resolver runs,
// except the timeout, which bounds the resolvers.
const (
	DefaultMaxBodyBytes   = 1 << 20
	DefaultMaxTokens      = 15000
	DefaultMaxDepth       = 12
	DefaultMaxAliases     = 30
	DefaultMaxComplexity  = graph.DefaultMaxComplexity
	DefaultRequestTimeout = 30 * time.Second
)

// The names in extensions.limit of a LIMIT_EXCEEDED error, saying which limit refused it.
const (
	limitBodySize      = "bodySize"
	limitTokens        = "tokens"
	limitDepth         = "depth"
	limitAliases       = "aliases"
	limitComplexity    = "complexity"
	limitRate          = "rate"
	limitTimeout       = "timeout"
	limitSubscriptions = "subscriptions"
	// Per client address, requests without a valid token (HTTP 429).
	limitAnonymousRate = "anonymousRate"
	// WebSocket connections from one address waiting for connection_init (HTTP 429), and one
	// user's connections (close code CloseTooManyConnections).
	limitPendingConnections = "pendingConnections"
	limitUserConnections    = "userConnections"
	// Refusals that are not LIMIT_EXCEEDED but UNAVAILABLE, counted with the others: an
	// operation refused before it ran because a dependency is overloaded (admission.go), and
	// a WebSocket connection over the pace new connections are accepted at.
	limitOverload       = "overload"
	limitConnectionRate = "connectionRate"
	// Not a refusal of the request: a persisted query it sent was not kept, as its user
	// registered the most they may in the store's window (persisted_queries.go).
	limitPersistedQueries = "persistedQueries"
)

// limitError is the error of a request refused by one of the limits.
func limitError(limit, format string, args ...any) *gqlerror.Error {
	err := gqlerror.Errorf(format, args...)
	err.Extensions = map[string]any{"code": graph.CodeLimitExceeded, "limit": limit}
	return err
}

// A gate looks at a request before gqlgen reads it. It lets the request through, maybe
// replaced (with its body read, say), or refuses it.
type gate func(w http.ResponseWriter, req *http.Request) (*http.Request, *refusal)

// refusal is a gate's answer to a request it turned away.
type refusal struct {
	status int
	err    *gqlerror.Error
}

type refusalKey struct{}

// gated runs the gates in order in front of srv. A refused request still goes to srv, which
// answers it through refusedTransport, so that its error passes the error presenter and the
// response interceptors (metrics) like any other; its limit is counted as a refusal too.
func gated(srv http.Handler, o options, gates ...gate) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		for _, g := range gates {
			var refused *refusal
			if req, refused = g(w, req); refused != nil {
				limit, _ := refused.err.Extensions["limit"].(string)
				o.countRefusal(limit)
				req = req.WithContext(context.WithValue(req.Context(), refusalKey{}, refused))
				break
			}
		}
		srv.ServeHTTP(w, req)
	})
}

// refusedTransport answers the requests a gate refused, without reading them. It must be
// the first transport, so that no other one takes them.
type refusedTransport struct{}

var _ graphql.Transport = refusedTransport{}

func (refusedTransport) Supports(req *http.Request) bool {
	_, ok := req.Context().Value(refusalKey{}).(*refusal)
	return ok
}

func (refusedTransport) Do(w http.ResponseWriter, req *http.Request, exec graphql.GraphExecutor) {
	refused := req.Context().Value(refusalKey{}).(*refusal)
	resp := exec.DispatchError(req.Context(), gqlerror.List{refused.err})
	contentType := "application/json"
	if strings.Contains(req.Header.Get("Accept"), "application/graphql-response+json") {
		contentType = "application/graphql-response+json"
	}
	w.Header().Set("Content-Type", contentType)
	w.WriteHeader(refused.status)
	body, _ := json.Marshal(resp)
	_, _ = w.Write(body)
}

// bodyGate reads the whole body, up to max bytes, before gqlgen does: gqlgen would answer a
// body cut short by http.MaxBytesReader with a generic read error.
func bodyGate(max int64) gate {
	tooLarge := func() *refusal {
		return &refusal{http.StatusRequestEntityTooLarge,
			limitError(limitBodySize, "the request body is larger than %d bytes", max)}
	}
	return func(w http.ResponseWriter, req *http.Request) (*http.Request, *refusal) {
		if max <= 0 {
			return req, nil
		}
		if req.ContentLength > max {
			return req, tooLarge()
		}
		if req.Body == nil || req.Body == http.NoBody {
			return req, nil
		}
		body, err := io.ReadAll(http.MaxBytesReader(w, req.Body, max))
		if _, over := errors.AsType[*http.MaxBytesError](err); over {
			return req, tooLarge()
		}
		if err != nil {
			unread := gqlerror.Errorf("the request body could not be read")
			unread.Extensions = map[string]any{"code": graph.CodeBadUserInput}
			return req, &refusal{http.StatusBadRequest, unread}
		}
		req.Body = bufferedBody{bytes.NewReader(body), body}
		return req, nil
	}
}

// bufferedBody is a request body bodyGate has read whole: readBody takes its bytes as they
// are, where reading it again would copy them.
type bufferedBody struct {
	*bytes.Reader
	data []byte
}

func (bufferedBody) Close() error { return nil }

// readBody reads a request body, without a copy when bodyGate read it already.
func readBody(body io.Reader) ([]byte, error) {
	if b, ok := body.(bufferedBody); ok && b.Len() == len(b.data) {
		_, _ = b.Seek(0, io.SeekEnd) // read, as io.ReadAll would leave it
		return b.data, nil
	}
	return io.ReadAll(body)
}

// errRequestTimeout is the cause of a context that ran out of the request's time.
var errRequestTimeout = errors.New("the request ran out of time")

type deadlineKey struct{}

// withDeadline notes when the request's time is up, counted from its arrival. The deadline goes
// on each root field's context (timeLimit) rather than on the request's, because gqlgen answers
// a request whose own context is done with an empty body, where a client needs an error.
func withDeadline(d time.Duration, next http.Handler) http.Handler {
	if d <= 0 {
		return next
	}
	return http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		if req.Header.Get("Upgrade") != "" {
			// A WebSocket connection lives as long as its client wants; its operations are
			// bounded one by one (timeLimit) and subscriptions by the client.
			next.ServeHTTP(w, req)
			return
		}
		ctx := context.WithValue(req.Context(), deadlineKey{}, time.Now().Add(d))
		next.ServeHTTP(w, req.WithContext(ctx))
	})
}

// timeLimit runs a root field, with everything below it, under the request's deadline, so that
// its store calls give up at it. Below a root field everything is resolved before it returns,
// so its context can end then.
func timeLimit(ctx context.Context, next graphql.RootResolver) graphql.Marshaler {
	if oc := graphql.GetOperationContext(ctx); oc.Operation != nil && oc.Operation.Operation == ast.Subscription {
		return next(ctx) // a subscription's context lives as long as the subscription
	}
	deadline, ok := ctx.Value(deadlineKey{}).(time.Time)
	if !ok {
		return next(ctx)
	}
	ctx, cancel := context.WithDeadlineCause(ctx, deadline, errRequestTimeout)
	defer cancel()
	return next(ctx)
}

// shapeLimit refuses operations nested too deep or with too many aliases, after parsing and
// before any resolver runs (gqlgen has neither limit), and introspection when it is switched
// off (gqlgen would answer it with an error that reads as an internal one).
//
// Fragments count as if written out in place. Introspection (__schema, __type) does not count
// towards the depth: GraphiQL's standard introspection query nests 14 fields deep, more than
// any query of msggate's schema needs, and gqlparser's MaxIntrospectionDepth rule already
// bounds how deep introspection may go.
type shapeLimit struct {
	maxDepth, maxAliases int
	introspection        bool
}

var _ interface {
	graphql.HandlerExtension
	graphql.OperationContextMutator
} = shapeLimit{}

func (shapeLimit) ExtensionName() string { return "ShapeLimit" }

func (shapeLimit) Validate(graphql.ExecutableSchema) error { return nil }

func (l shapeLimit) MutateOperationContext(_ context.Context, opCtx *graphql.OperationContext) *gqlerror.Error {
	shape := measureShape(opCtx.Doc, opCtx.Operation)
	if shape.introspects && !l.introspection {
		err := gqlerror.Errorf("introspection is switched off on this server")
		err.Extensions = map[string]any{"code": graph.CodeForbidden}
		return err
	}
	if l.maxDepth > 0 && shape.depth > l.maxDepth {
		return limitError(limitDepth, "the operation nests %d fields deep; the limit is %d", shape.depth, l.maxDepth)
	}
	if l.maxAliases > 0 && shape.aliases > l.maxAliases {
		return limitError(limitAliases, "the operation uses %d aliases; the limit is %d", shape.aliases, l.maxAliases)
	}
	return nil
}

// operationShape is what shapeLimit measures: the deepest chain of fields, the aliases once
// every fragment is written out in place, and whether the operation introspects the schema.
type operationShape struct {
	depth, aliases int
	introspects    bool
}

// measureShape measures an operation. Each fragment is measured once: written out, a few
// fragments that spread each other twice would multiply into billions of fields.
func measureShape(doc *ast.QueryDocument, op *ast.OperationDefinition) operationShape {
	m := shapeMeter{doc: doc, fragments: map[string]*operationShape{}}
	return m.selections(op.SelectionSet)
}

type shapeMeter struct {
	doc       *ast.QueryDocument
	fragments map[string]*operationShape // nil while the fragment is being measured
}

func (m *shapeMeter) selections(set ast.SelectionSet) operationShape {
	var total operationShape
	for _, sel := range set {
		var s operationShape
		switch sel := sel.(type) {
		case *ast.Field:
			if sel.Name != "__schema" && sel.Name != "__type" {
				s = m.selections(sel.SelectionSet)
			} else {
				s.aliases = m.selections(sel.SelectionSet).aliases
				s.introspects = true
			}
			s.depth++
			if sel.Alias != sel.Name {
				s.aliases = graph.SaturatingAdd(s.aliases, 1)
			}
		case *ast.InlineFragment:
			s = m.selections(sel.SelectionSet)
		case *ast.FragmentSpread:
			s = m.fragment(sel)
		}
		total.depth = max(total.depth, s.depth)
		total.aliases = graph.SaturatingAdd(total.aliases, s.aliases)
		total.introspects = total.introspects || s.introspects
	}
	return total
}

func (m *shapeMeter) fragment(spread *ast.FragmentSpread) operationShape {
	if s, seen := m.fragments[spread.Name]; seen {
		if s == nil {
			return operationShape{} // a cycle: validation refuses it before this runs
		}
		return *s
	}
	def := spread.Definition
	if def == nil && m.doc != nil {
		def = m.doc.Fragments.ForName(spread.Name)
	}
	if def == nil {
		return operationShape{}
	}
	m.fragments[spread.Name] = nil
	s := m.selections(def.SelectionSet)
	m.fragments[spread.Name] = &s
	return s
}

// gqlgen's own codes for two of the limits it enforces.
const (
	gqlgenComplexityCode = "COMPLEXITY_LIMIT_EXCEEDED"
	gqlparserTokenLimit  = "exceeded token limit of "
)

// timeoutRetryAfter is the retry hint of a request that ran out of its time.
const timeoutRetryAfter = 2 * time.Second

// presentLimits gives every refusal by a limit the code LIMIT_EXCEEDED: gqlgen's complexity
// and parser-token errors, and store failures of a request that ran out of its time (which
// would otherwise read as UNAVAILABLE or INTERNAL, and be logged as failures).
func presentLimits(next graphql.ErrorPresenterFunc, timeout time.Duration, logger *slog.Logger) graphql.ErrorPresenterFunc {
	return func(ctx context.Context, err error) *gqlerror.Error {
		if errors.Is(context.Cause(ctx), errRequestTimeout) && isServerFault(err) {
			logger.WarnContext(ctx, "request timed out", "timeout", timeout, "path", graphql.GetPath(ctx).String(), "err", err)
			gerr := limitError(limitTimeout, "the request did not finish within %v", timeout)
			// The stores were too slow for it: like a refusal, it says when to ask again, so
			// that clients back off instead of asking at once.
			gerr.Extensions["retryAfterMs"] = timeoutRetryAfter.Milliseconds()
			gerr.Path = graphql.GetPath(ctx)
			if prev, ok := errors.AsType[*gqlerror.Error](err); ok && prev.Path != nil {
				gerr.Path = prev.Path
			}
			return gerr
		}
		gerr := next(ctx, err)
		if gerr == nil {
			return nil
		}
		code, _ := gerr.Extensions["code"].(string)
		switch {
		case code == gqlgenComplexityCode:
			gerr.Extensions["code"] = graph.CodeLimitExceeded
			gerr.Extensions["limit"] = limitComplexity
		case code == errcode.ParseFailed && strings.HasPrefix(gerr.Message, gqlparserTokenLimit):
			gerr.Extensions["code"] = graph.CodeLimitExceeded
			gerr.Extensions["limit"] = limitTokens
		}
		return gerr
	}
}

// isServerFault reports whether err would be presented as a failure of msggate or its stores
// rather than as the client's mistake: those are the errors a timeout explains.
func isServerFault(err error) bool {
	var domain *im.Error
	if errors.As(err, &domain) {
		switch domain.Code {
		case im.EUNAVAILABLE, im.ECONFLICT, im.EINTERNAL:
			return true
		}
		return false
	}
	if gerr, ok := err.(*gqlerror.Error); ok && gerr.Extensions["code"] != nil {
		return false
	}
	return true
}
