package server

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"net/http"
	"strconv"
	"sync"
	"time"

	"github.com/99designs/gqlgen/graphql"
	"github.com/vektah/gqlparser/v2/ast"
	"github.com/vektah/gqlparser/v2/gqlerror"

	"github.com/msggate/msggate/graph"
	"github.com/msggate/msggate/internal/admission"
)

// How the gateway refuses work it cannot finish in time (overload) and answers outages:
//
//   - Each dependency has an admission limiter below graph (internal/admission, wired into
//     chunkstore and cache), which refuses an operation at once when the work queued before
//     it cannot finish within its request's time. The refusal is EUNAVAILABLE with a retry
//     hint.
//   - Before an operation runs, admissionCheck asks the limiters whether they would take
//     more work now, so that a request is refused before it has done anything: every
//     operation asks Redis's, mutations and the catch-up reads (syncState, syncDifference)
//     the store's too. A warm read needs no store, so it is not refused for the store's queue.
//     An operation let in this way is committed: its store operations are not refused for
//     waiting longer than the admission wait, only for its own deadline.
//   - Every UNAVAILABLE error carries extensions.retryAfterMs (the refusal's hint, else
//     graph.DefaultRetryAfter). Over POST, an answer whose errors include UNAVAILABLE and whose
//     root fields all failed is HTTP 503 with Retry-After (whole seconds, rounded up); over
//     WebSocket the error payload carries the same extensions.
//   - New WebSocket connections are paced (Settings.ConnectionRate): one over the rate is
//     closed at connection_init with CloseTryAgainLater and the hint in the reason.

// Admitter tells whether a dependency would take one more operation with ctx's deadline now
// (*admission.Limiter is one): nil, or a refusal carrying a retry hint (RetryHint). It answers
// at once: it reads ctx's deadline and values but never waits for ctx to end.
type Admitter interface {
	Check(ctx context.Context) error
}

// Acquirer lets an operation in for as long as it runs, or refuses it with a retry hint
// (*admission.Limiter is one).
type Acquirer interface {
	Acquire(ctx context.Context) (context.Context, func(), error)
}

// Defaults of the WebSocket connection pacing (Settings.ConnectionRate, ConnectionBurst).
const (
	DefaultConnectionRate  = 50
	DefaultConnectionBurst = 100
)

// setRetryAfter is the one place a retry hint becomes the Retry-After header: whole seconds,
// rounded up, so that a client never comes back before the hint.
func setRetryAfter(w http.ResponseWriter, d time.Duration) {
	w.Header().Set("Retry-After", strconv.Itoa(max(1, int(math.Ceil(d.Seconds())))))
}

// unavailableError is the GraphQL error of a refusal or outage.
func unavailableError(message string, retry time.Duration) *gqlerror.Error {
	return &gqlerror.Error{Message: message, Extensions: map[string]any{
		"code": graph.CodeUnavailable, "retryAfterMs": retry.Milliseconds()}}
}

// unavailableStatus reports whether an answer is "come back later" as a whole: one of its
// errors is UNAVAILABLE and no root field has a value. It returns the longest hint among them.
func unavailableStatus(r *graphql.Response) (time.Duration, bool) {
	var longest time.Duration
	found := false
	for _, e := range r.Errors {
		if code, _ := e.Extensions["code"].(string); code != graph.CodeUnavailable {
			continue
		}
		found = true
		if ms, ok := e.Extensions["retryAfterMs"].(int64); ok {
			longest = max(longest, time.Duration(ms)*time.Millisecond)
		}
	}
	if !found || !noRootValue(r.Data) {
		return 0, false
	}
	return max(longest, time.Millisecond), true
}

// noRootValue reports whether data holds no value: absent, null, or every root field null.
func noRootValue(data json.RawMessage) bool {
	if len(data) == 0 || string(data) == "null" {
		return true
	}
	var fields map[string]json.RawMessage
	if json.Unmarshal(data, &fields) != nil {
		return false
	}
	for _, v := range fields {
		if string(v) != "null" {
			return false
		}
	}
	return true
}

// admissionCheck refuses an operation before it runs when a dependency it needs has more work
// queued than it could finish within the operation's time.
type admissionCheck struct {
	store, cache Admitter
	requests     Acquirer
	timeout      time.Duration
	o            options
}

var _ interface {
	graphql.HandlerExtension
	graphql.OperationInterceptor
} = admissionCheck{}

func (admissionCheck) ExtensionName() string { return "AdmissionCheck" }

func (admissionCheck) Validate(graphql.ExecutableSchema) error { return nil }

// InterceptOperation refuses the operation, or lets it in as committed work
// (admission.Committed): its later store operations wait for their turn up to its deadline
// rather than being refused half-way, which would waste what it did before.
func (a admissionCheck) InterceptOperation(ctx context.Context, next graphql.OperationHandler) graphql.ResponseHandler {
	opCtx := graphql.GetOperationContext(ctx)
	if opCtx.Operation == nil || opCtx.Operation.Operation == ast.Subscription {
		// A subscription is paced, not refused: its start retries what Redis refuses after the
		// hint, spread out (sync.Subscription.Run), while the device waits on its open
		// connection. Refused here, every device of a reconnect storm would reconnect
		// and subscribe again, each time through the whole connection set-up.
		return next(ctx)
	}
	// The request's deadline is kept aside until its root fields run (withDeadline,
	// connectionOperations): the check takes it from there.
	deadline, ok := ctx.Value(deadlineKey{}).(time.Time)
	if !ok && a.timeout > 0 {
		deadline, ok = time.Now().Add(a.timeout), true
	}
	if !ok {
		return next(ctx)
	}
	// The checks only read the deadline; waiting for a turn (requests) needs it to end.
	cctx := context.Context(deadlineOnly{ctx, deadline})
	store := needsStore(opCtx.Doc, opCtx.Operation)
	if store && a.requests != nil {
		var cancel context.CancelFunc
		cctx, cancel = context.WithDeadline(ctx, deadline)
		defer cancel()
	}
	refusal := func(name string, err error) *gqlerror.Error {
		a.o.countRefusal(limitOverload)
		retry := graph.RetryAfter(err)
		return unavailableError(fmt.Sprintf("the %s is overloaded: retry in %v", name, retry.Round(time.Millisecond)), retry)
	}
	check := func(name string, dep Admitter) *gqlerror.Error {
		if dep == nil {
			return nil
		}
		if err := dep.Check(cctx); err != nil {
			return refusal(name, err)
		}
		return nil
	}
	refused := check("cache", a.cache)
	if refused == nil && store {
		refused = check("message store", a.store)
	}
	release := func() {}
	if refused == nil && store && a.requests != nil {
		_, done, err := a.requests.Acquire(cctx)
		if err != nil {
			refused = refusal("message store", err)
		} else {
			var once sync.Once
			release = func() { once.Do(done) }
			// A response handler that is never called must not keep its turn.
			context.AfterFunc(ctx, release)
		}
	}
	if refused != nil {
		return graphql.OneShot(&graphql.Response{Errors: gqlerror.List{refused}})
	}
	if !store {
		return next(ctx)
	}
	respond := next(admission.Committed(ctx))
	return func(ctx context.Context) *graphql.Response {
		defer release()
		return respond(ctx)
	}
}

// deadlineOnly is a context that reports a deadline without keeping a timer to end at it:
// enough for what only reads the deadline (Admitter.Check), where a timer per request costs
// more than the check itself.
type deadlineOnly struct {
	context.Context
	deadline time.Time
}

func (c deadlineOnly) Deadline() (time.Time, bool) { return c.deadline, true }

// needsStore reports whether an operation of doc will ask the store for sure: a mutation, or
// a catch-up read, which the devices of a reconnect storm all make at once.
func needsStore(doc *ast.QueryDocument, op *ast.OperationDefinition) bool {
	if op.Operation == ast.Mutation {
		return true
	}
	var walked map[string]bool
	if len(doc.Fragments) > 0 {
		walked = make(map[string]bool, len(doc.Fragments))
	}
	return asksCatchUp(doc, op.SelectionSet, walked)
}

// asksCatchUp reports whether a root selection set asks for a catch-up read, in a field of
// its own or in the fragments it spreads, however they nest. Each named fragment is looked
// into once (walked, which it adds to, has room for them all): a fragment spread many times over would otherwise
// cost as much as the answer it multiplies. @skip and @include are not looked at: a field
// they leave out only makes the check stricter than the answer needs.
func asksCatchUp(doc *ast.QueryDocument, set ast.SelectionSet, walked map[string]bool) bool {
	for _, sel := range set {
		switch s := sel.(type) {
		case *ast.Field:
			if s.Name == "syncState" || s.Name == "syncDifference" {
				return true
			}
		case *ast.InlineFragment:
			if asksCatchUp(doc, s.SelectionSet, walked) {
				return true
			}
		case *ast.FragmentSpread:
			f := doc.Fragments.ForName(s.Name)
			if f == nil || walked[s.Name] {
				continue
			}
			walked[s.Name] = true
			if asksCatchUp(doc, f.SelectionSet, walked) {
				return true
			}
		}
	}
	return false
}

// refuseForNow closes a WebSocket connection at connection_init because new connections come
// faster than this instance accepts them: close code CloseTryAgainLater, with the hint in the
// reason as "retryAfterMs=<n>" (a close frame has no other place for it).
func refuseForNow(retry time.Duration) error {
	retry = max(retry, time.Millisecond)
	reason := fmt.Sprintf("try again later: too many new connections; retryAfterMs=%d", retry.Milliseconds())
	return &wsRefusal{code: CloseTryAgainLater, reason: reason, err: errors.New(reason)}
}
