package server

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/99designs/gqlgen/graphql"
	"github.com/vektah/gqlparser/v2/gqlerror"

	"github.com/msggate/msggate/graph"
	"github.com/msggate/msggate/internal/admission"
	"github.com/msggate/msggate/internal/devtools/graphqltest"
	"github.com/msggate/msggate/internal/im"
)

// Ensure an answer is 503 exactly when it is nothing but "come back later": an UNAVAILABLE
// error and no root field with a value; the longest hint wins.
func TestUnavailableStatus(t *testing.T) {
	unavailable := func(ms int64) *gqlerror.Error { return unavailableError("x", time.Duration(ms)*time.Millisecond) }
	other := &gqlerror.Error{Message: "no", Extensions: map[string]any{"code": graph.CodeBadUserInput}}
	for _, c := range []struct {
		name   string
		data   string
		errs   gqlerror.List
		want   bool
		wantMs int64
	}{
		{"no data", "", gqlerror.List{unavailable(1500), unavailable(300)}, true, 1500},
		{"null root fields", `{"a":null,"b":null}`, gqlerror.List{unavailable(200)}, true, 200},
		{"one root field answered", `{"a":null,"b":{"x":1}}`, gqlerror.List{unavailable(200)}, false, 0},
		{"no UNAVAILABLE", "null", gqlerror.List{other}, false, 0},
		{"no error", `{"a":1}`, nil, false, 0},
	} {
		got, ok := unavailableStatus(&graphql.Response{Data: json.RawMessage(c.data), Errors: c.errs})
		if ok != c.want || (ok && got != time.Duration(c.wantMs)*time.Millisecond) {
			t.Errorf("%s: %v %v, want %v %vms", c.name, got, ok, c.want, c.wantMs)
		}
	}
	w := httptest.NewRecorder()
	setRetryAfter(w, 1001*time.Millisecond)
	if h := w.Header().Get("Retry-After"); h != "2" {
		t.Errorf("Retry-After for 1.001 s: %q, want 2 (rounded up)", h)
	}
}

// Ensure the presenter answers every outage as UNAVAILABLE with a retry hint, the refusal's
// own when it has one, and keeps INTERNAL for bugs.
func TestPresenterOutages(t *testing.T) {
	present := graph.ErrorPresenter(slog.New(slog.NewTextHandler(io.Discard, nil)))
	refusal := &admission.RefusedError{Name: "message store", RetryAfter: 1234 * time.Millisecond}
	for _, c := range []struct {
		name   string
		err    error
		code   string
		hintMs int64
	}{
		{"an admission refusal", &im.Error{Code: im.EUNAVAILABLE, Message: "message store is overloaded", Cause: refusal}, graph.CodeUnavailable, 1234},
		{"a store down", im.Unavailable("message store", errors.New("dial")), graph.CodeUnavailable, graph.DefaultRetryAfter.Milliseconds()},
		{"a context that ended, without a code", fmt.Errorf("load: %w", context.DeadlineExceeded), graph.CodeUnavailable, graph.DefaultRetryAfter.Milliseconds()},
		{"a cut connection, without a code", fmt.Errorf("read: %w", io.ErrUnexpectedEOF), graph.CodeUnavailable, graph.DefaultRetryAfter.Milliseconds()},
		{"a bug", errors.New("index out of range"), graph.CodeInternal, 0},
	} {
		gerr := present(context.Background(), c.err)
		hint, _ := gerr.Extensions["retryAfterMs"].(int64)
		if gerr.Extensions["code"] != c.code || hint != c.hintMs {
			t.Errorf("%s: %v, want code %s, retryAfterMs %d", c.name, gerr.Extensions, c.code, c.hintMs)
		}
	}
}

// storeClosed is a store Admitter that refuses everything and counts the operations it saw.
type storeClosed struct{ asked int }

func (s *storeClosed) Check(context.Context) error {
	s.asked++
	return &admission.RefusedError{Name: "message store", RetryAfter: time.Second}
}

// Ensure the store's admission sees a catch-up read however the query reaches it at the root:
// as a field, or inside named and inline fragments, nested, spread many times; and that a
// query that never asks the store is not held back by it.
func TestStoreAdmissionSeesFragments(t *testing.T) {
	store := &storeClosed{}
	deps := testDependencies()
	deps.StoreAdmission = store
	h := NewHandler(&graph.Resolver{Conversations: noConversations{}}, testSettings(), deps)
	for name, query := range map[string]string{
		"field":            `{ syncState(first: 1) { token } }`,
		"named fragment":   `{ ...F } fragment F on Query { syncState(first: 1) { token } }`,
		"inline fragment":  `{ ... on Query { syncDifference(since: "x") { token } } }`,
		"nested fragments": `{ viewer { userID } ...A } fragment A on Query { ... { ...B } } fragment B on Query { syncState { token } }`,
		"many spreads": `{ ...A ...A } fragment A on Query { ...B ...B ...C } fragment B on Query { viewer { userID } }
			fragment C on Query { ...B ... { syncState { token } } }`,
	} {
		store.asked = 0
		out := askHandler(t, h, query)
		if graphqltest.ErrorCodes(out) != "UNAVAILABLE" || store.asked != 1 {
			t.Errorf("%s: answered %v after %d store checks, want UNAVAILABLE after one", name, out, store.asked)
		}
	}
	store.asked = 0
	out := askHandler(t, h, `{ ...F } fragment F on Query { viewer { userID } }`)
	if out["errors"] != nil || store.asked != 0 {
		t.Errorf("a read without the store through a fragment: %v after %d store checks, want an answer and none", out, store.asked)
	}
}
