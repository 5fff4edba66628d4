package server

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"

	"github.com/msggate/msggate/graph"
	"github.com/msggate/msggate/internal/auth"
	"github.com/msggate/msggate/internal/im"
)

// How a request is authenticated: Dependencies.Authenticator checks the token (msggate's
// own HS256 tokens by default; an OpenIM deployment's tokens in OpenIM mode, which costs one
// read of OpenIM's Redis per check, uncached, so that a kick or logout in OpenIM holds from
// the next request on). Over HTTP the token is checked on every request; over WebSocket once,
// at connection_init (or the upgrade request's header), and the connection is closed with
// CloseTokenExpired when the token's exp passes.

// authenticateRequest reads the request's token and returns a context carrying its viewer,
// or the error that refused it: the Authorization header ("Bearer <token>"), else the header
// Dependencies.TokenHeader names (OpenIM's clients send "token: <token>"). A request with
// neither is anonymous.
func authenticateRequest(req *http.Request, o options) (context.Context, auth.Viewer) {
	ctx := req.Context()
	token, err := headerToken(req.Header, o)
	if err != nil {
		return auth.WithViewer(ctx, auth.Viewer{}, err), auth.Viewer{}
	}
	if token == "" {
		return ctx, auth.Viewer{}
	}
	viewer, err := o.Authenticator.Authenticate(ctx, token)
	if err != nil {
		viewer = auth.Viewer{}
	}
	return auth.WithViewer(ctx, viewer, err), viewer
}

// withLoaders is the HTTP middleware that authenticates the request (authenticateRequest) and
// gives it fresh loaders. A request without a token still runs (introspection needs no user),
// but every resolver that needs a viewer answers UNAUTHENTICATED.
func withLoaders(r *graph.Resolver, o options, next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		ctx, viewer := authenticateRequest(req, o)
		// A WebSocket upgrade gets none: its context lasts as long as the connection, and each
		// operation on it gets loaders of its own (connectionOperations).
		if req.Header.Get("Upgrade") == "" {
			ctx = r.WithLoaders(ctx, viewer.UserID, o.Loaders)
		}
		next.ServeHTTP(w, req.WithContext(ctx))
	})
}

// headerToken returns the token of a request's headers ("" when none).
func headerToken(h http.Header, o options) (string, error) {
	if a := h.Get("Authorization"); a != "" {
		t, ok := bearer(a)
		if !ok {
			return "", im.Errorf(im.EUNAUTHENTICATED, "the Authorization header must be \"Bearer <token>\"")
		}
		return t, nil
	}
	if o.TokenHeader != "" {
		return h.Get(o.TokenHeader), nil
	}
	return "", nil
}

// CloseTryAgainLater (RFC 6455's 1013): connection_init's token could not be checked now.
const CloseTryAgainLater = 1013

func bearer(h string) (string, bool) {
	const p = "Bearer "
	if len(h) <= len(p) || !strings.EqualFold(h[:len(p)], p) {
		return "", false
	}
	return h[len(p):], true
}

// refuseInit ends a WebSocket connection whose connection_init token was not accepted: close
// code 4403 for a refused token; 1013 (try again later) when the token could not be checked
// because a store did not answer, which is no verdict on the token.
func refuseInit(err error) error {
	if im.ErrorCode(err) == im.EUNAVAILABLE {
		return &wsRefusal{code: CloseTryAgainLater, err: err,
			reason: fmt.Sprintf("unavailable: the token could not be checked; try again; retryAfterMs=%d", graph.DefaultRetryAfter.Milliseconds())}
	}
	if err == nil {
		return &wsRefusal{code: CloseUnauthorized, err: errors.New("unauthenticated"),
			reason: "unauthenticated: connection_init needs {\"Authorization\": \"Bearer <token>\"}"}
	}
	return &wsRefusal{code: CloseUnauthorized, reason: "unauthenticated: the token is not valid", err: err}
}
