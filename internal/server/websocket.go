package server

import (
	"context"
	"net/http"
	"strings"
	gosync "sync"
	"time"

	"github.com/99designs/gqlgen/graphql"
	"github.com/vektah/gqlparser/v2/ast"
	"github.com/vektah/gqlparser/v2/gqlerror"

	"github.com/msggate/msggate/graph"
	"github.com/msggate/msggate/internal/auth"
	"github.com/msggate/msggate/internal/im"
)

// WebSocket close codes msggate sends, beyond RFC 6455's (graph.CloseGoingAway and
// graph.CloseSlowConsumer are a subscription's).
const (
	// CloseTokenExpired: the token the connection was authenticated with reached its exp. The
	// client reconnects with a fresh token (and resumes from its last sync token).
	CloseTokenExpired = 4401
	// CloseUnauthorized: connection_init carried no valid token (the code graphql-transport-ws
	// uses for "Forbidden").
	CloseUnauthorized = 4403
)

// CloseTooManyConnections (connection_limits.go) is msggate's fourth: the user holds the most
// WebSocket connections one user may.

// authenticate admits a connection with its connection_init payload: it paces new
// connections, checks the bearer token (or the upgrade request's), and counts the connection
// towards its user's. A refusal is a *wsRefusal.
func (t *wsTransport) authenticate(ctx context.Context, payload map[string]any, headers http.Header) (context.Context, string, error) {
	o := t.o
	if ok, retry := t.pacer.Take(); !ok {
		// Before the token is checked: pacing is what keeps a storm cheap.
		o.countRefusal(limitConnectionRate)
		return ctx, "", refuseForNow(retry)
	}
	var v auth.Viewer
	var err error
	token := initToken(payload)
	if token == "" {
		if v, err = auth.ViewerFrom(ctx); err != nil {
			if im.ErrorCode(err) != im.EUNAVAILABLE {
				err = nil // no token, or a bad one: either way connection_init needs one
			}
			return ctx, "", refuseInit(err)
		}
		// authenticated by the upgrade request's header
		token, _ = headerToken(headers, *o)
	} else {
		if v, err = o.Authenticator.Authenticate(ctx, token); err != nil {
			return ctx, "", refuseInit(err)
		}
		ctx = auth.WithViewer(ctx, v, nil)
	}
	if err := admitUser(ctx, v.UserID); err != nil {
		o.countRefusal(limitUserConnections)
		return ctx, "", err
	}
	closeAtExpiry(ctx, v.Expires)
	return withConnectionLoaders(ctx, t.r, t.o, v), token, nil
}

// closeAtExpiry closes the WebSocket connection of ctx with CloseTokenExpired when its token
// expires (a zero exp: never). The timer is stopped when the connection ends earlier: ctx is
// its upgrade request's, which ends when the transport returns.
func closeAtExpiry(ctx context.Context, exp time.Time) {
	if exp.IsZero() {
		return
	}
	t := time.AfterFunc(time.Until(exp), func() {
		closeConnection(ctx, CloseTokenExpired, "token expired: reconnect with a fresh token")
	})
	context.AfterFunc(ctx, func() { t.Stop() })
}

// initToken finds the bearer token in a connection_init payload: {"Authorization": "Bearer
// <jwt>"} (any case), or {"authToken": "<jwt>"}.
func initToken(p map[string]any) string {
	for k, v := range p {
		s, ok := v.(string)
		if !ok {
			continue
		}
		switch strings.ToLower(k) {
		case "authorization":
			if t, ok := bearer(s); ok {
				return t
			}
		case "authtoken", "token":
			return s
		}
	}
	return ""
}

// connLoadersKey marks a WebSocket connection's context: each operation on it gets fresh
// loaders, since memoised answers must not outlive one operation.
type connLoadersKey struct{}

type connLoaders struct {
	r      *graph.Resolver
	o      *options // the transport's: a copy in each connection would cost every idle one
	viewer string
}

func withConnectionLoaders(ctx context.Context, r *graph.Resolver, o *options, v auth.Viewer) context.Context {
	return context.WithValue(ctx, connLoadersKey{}, connLoaders{r: r, o: o, viewer: v.UserID})
}

// connectionOperations gives each operation on a WebSocket connection what an HTTP request
// gets from the middleware: its own loaders and a deadline (subscriptions ignore it: see
// timeLimit). Its token from the user's rate-limit bucket was taken before it was read
// (takeOperationToken).
func connectionOperations(ctx context.Context, next graphql.OperationHandler) graphql.ResponseHandler {
	c, ok := ctx.Value(connLoadersKey{}).(connLoaders)
	if !ok {
		return next(ctx)
	}
	// A subscription's events are plain values: it needs no loaders, and would hold them for
	// as long as it lasts.
	if oc := graphql.GetOperationContext(ctx); oc.Operation == nil || oc.Operation.Operation != ast.Subscription {
		ctx = c.r.WithLoaders(ctx, c.viewer, c.o.Loaders)
	}
	if c.o.RequestTimeout > 0 {
		ctx = context.WithValue(ctx, deadlineKey{}, time.Now().Add(c.o.RequestTimeout))
	}
	return next(ctx)
}

// takeOperationToken takes a token from the rate-limit bucket of the user of the WebSocket
// connection ctx belongs to, for one operation, before anything of the operation is read:
// parsing and validating it and registering its persisted query are work a client over its
// rate must not cause, as over HTTP (rateGate). It answers the refusal, or nil. As over HTTP,
// a limiter that cannot answer lets the operation through.
func takeOperationToken(ctx context.Context) *gqlerror.Error {
	c, ok := ctx.Value(connLoadersKey{}).(connLoaders)
	if !ok {
		return nil
	}
	if lim := c.o.RateLimiter; lim != nil && c.o.RateLimit > 0 && c.o.RateBurst > 0 {
		if ok, retry, err := lim.TakeToken(ctx, c.viewer, c.o.RateLimit, c.o.RateBurst); err == nil && !ok {
			c.o.countRefusal(limitRate)
			return rateError(limitRate, "", c.o.RateLimit, c.o.RateBurst, retry)
		}
	}
	return nil
}

// MaxSubscriptionsPerConnection bounds the syncEvents subscriptions one WebSocket connection
// may hold open: each holds a goroutine and a buffer, and one per device is what is needed.
const MaxSubscriptionsPerConnection = 8

// DefaultKeepAlive is how often an idle WebSocket connection is pinged (Settings).
const DefaultKeepAlive = 15 * time.Second

type connHolderKey struct{}

// connHolder keeps one WebSocket connection for whoever must close it, counts its open
// subscriptions, and holds what it counts towards the connection limits (connection_limits.go).
type connHolder struct {
	mu            gosync.Mutex
	conn          *wsConnection
	subscriptions int
	// handedOff is set, by the upgrade request's goroutine, when the connection outlives it.
	handedOff bool

	// Set and read under limits.mu.
	limits      *connectionLimits
	pendingAddr string // the address it counts towards while waiting for connection_init
	user        string // the user it counts towards once authenticated
}

// openSubscription counts one more subscription on the connection, unless it holds the most
// it may; release undoes it.
func (h *connHolder) openSubscription() (release func(), err error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.subscriptions >= MaxSubscriptionsPerConnection {
		return nil, limitError(limitSubscriptions, "a connection holds at most %d subscriptions", MaxSubscriptionsPerConnection)
	}
	h.subscriptions++
	return func() {
		h.mu.Lock()
		h.subscriptions--
		h.mu.Unlock()
	}, nil
}

// handOff makes whoever serves the connection past its upgrade request responsible for
// releasing its counts (the transport's reader, when it ends).
func (h *connHolder) handOff() { h.handedOff = true }

func (h *connHolder) set(c *wsConnection) {
	h.mu.Lock()
	h.conn = c
	h.mu.Unlock()
}

// withConnHolder prepares a WebSocket upgrade request's context to hold its connection, and
// gives back what the connection counted towards the limits when it is over: when the request
// returns, unless the transport took the connection over (its reader then gives them back
// when the connection closes). (The HTTP server's read timeout does not
// reach a WebSocket: net/http clears the connection's deadlines when it is hijacked, and
// keepalive pings find dead peers instead.)
func withConnHolder(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		if req.Header.Get("Upgrade") == "" {
			next.ServeHTTP(w, req)
			return
		}
		h := &connHolder{}
		next.ServeHTTP(w, req.WithContext(context.WithValue(req.Context(), connHolderKey{}, h)))
		if !h.handedOff {
			h.release()
		}
	})
}

// closeConnection closes the WebSocket connection the context belongs to, if any.
func closeConnection(ctx context.Context, code int, reason string) {
	if h, ok := ctx.Value(connHolderKey{}).(*connHolder); ok {
		h.close(code, reason)
	}
}

// close closes the held connection, if any.
func (h *connHolder) close(code int, reason string) {
	h.mu.Lock()
	conn := h.conn
	h.mu.Unlock()
	if conn != nil {
		conn.close(code, reason)
	}
}
