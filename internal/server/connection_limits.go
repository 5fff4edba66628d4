package server

import (
	"context"
	"net/http"
	gosync "sync"
)

// Defaults of the WebSocket connection limits (Settings).
const (
	// DefaultMaxConnectionsPerUser bounds one user's WebSocket connections to one gateway
	// instance: a connection per device or browser tab, with room to spare.
	DefaultMaxConnectionsPerUser = 16
	// DefaultMaxPendingConnectionsPerAddress bounds the WebSocket connections from one client
	// address that have not yet sent connection_init (they have proved nothing yet). A client
	// sends it at once, so only clients behind one NAT that all reconnect together come near.
	DefaultMaxPendingConnectionsPerAddress = 16
)

// CloseTooManyConnections is the WebSocket close code of a connection refused at
// connection_init because its user already holds the most connections one user may.
const CloseTooManyConnections = 4429

// connectionLimits counts this instance's WebSocket connections: per client address those
// that wait for connection_init, per user those that are authenticated. A connection is
// counted from its upgrade request until its handler returns, which the WebSocket transport
// does once the connection is closed, whatever closed it. The counts are per instance: a user
// behind a load balancer may hold up to the limit on each instance.
type connectionLimits struct {
	perUser, pendingPerAddress int // <= 0: no limit

	mu      gosync.Mutex
	users   map[string]int
	pending map[string]int
}

func newConnectionLimits(o options) *connectionLimits {
	return &connectionLimits{perUser: o.MaxConnectionsPerUser, pendingPerAddress: o.MaxPendingConnectionsPerAddress,
		users: map[string]int{}, pending: map[string]int{}}
}

// connectionGate counts an upgrade request's connection as waiting for connection_init, or
// refuses it with HTTP 429 when its address has too many waiting already.
func connectionGate(l *connectionLimits, o options) gate {
	return func(w http.ResponseWriter, req *http.Request) (*http.Request, *refusal) {
		h, ok := req.Context().Value(connHolderKey{}).(*connHolder)
		if !ok {
			return req, nil
		}
		addr := clientAddress(req, o.ClientIPHeader)
		l.mu.Lock()
		defer l.mu.Unlock()
		if l.pendingPerAddress > 0 && l.pending[addr] >= l.pendingPerAddress {
			return req, &refusal{http.StatusTooManyRequests, limitError(limitPendingConnections,
				"too many connections from this address are waiting for connection_init: at most %d", l.pendingPerAddress)}
		}
		l.pending[addr]++
		h.limits, h.pendingAddr = l, addr
		return req, nil
	}
}

// admitUser moves the connection of ctx from waiting to authenticated as userID, unless the
// user holds the most connections already: then the connection is to be closed with
// CloseTooManyConnections.
func admitUser(ctx context.Context, userID string) error {
	h, ok := ctx.Value(connHolderKey{}).(*connHolder)
	if !ok || h.limits == nil {
		return nil
	}
	l := h.limits
	l.mu.Lock()
	defer l.mu.Unlock()
	h.releasePendingLocked()
	if l.perUser > 0 && l.users[userID] >= l.perUser {
		err := limitError(limitUserConnections, "too many connections: a user may hold at most %d on this server", l.perUser)
		return &wsRefusal{code: CloseTooManyConnections, reason: "too many connections: close another one of this user's first", err: err}
	}
	l.users[userID]++
	h.user = userID
	return nil
}

// releasePendingLocked gives back the connection's count towards its address; l.mu is held.
func (h *connHolder) releasePendingLocked() {
	if h.pendingAddr == "" {
		return
	}
	l := h.limits
	if l.pending[h.pendingAddr]--; l.pending[h.pendingAddr] <= 0 {
		delete(l.pending, h.pendingAddr)
	}
	h.pendingAddr = ""
}

// release gives back every count the connection holds, once its handler has returned.
func (h *connHolder) release() {
	l := h.limits
	if l == nil {
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	h.releasePendingLocked()
	if h.user != "" {
		if l.users[h.user]--; l.users[h.user] <= 0 {
			delete(l.users, h.user)
		}
		h.user = ""
	}
}
