package server

import (
	"context"
	"log/slog"
	gosync "sync"
	"time"

	"github.com/msggate/msggate/internal/auth"
)

// DefaultSessionCheckInterval is how often the tokens of live WebSocket connections are asked
// about again, when the authenticator can withdraw tokens (Settings).
const DefaultSessionCheckInterval = 2 * time.Second

// sessionCheckBatch bounds the tokens one question carries.
const sessionCheckBatch = 1000

// sessionWatch closes the WebSocket connections whose token was withdrawn after it was
// accepted (OpenIM kicks, logs out or replaces tokens; HTTP requests see that on their next
// check). Every interval it asks the authenticator about all live connections' tokens, many
// at a time, from one goroutine for the whole instance. A failed check closes nothing.
type sessionWatch struct {
	checker  auth.SessionChecker
	interval time.Duration
	logger   *slog.Logger

	mu      gosync.Mutex
	conns   map[*wsConnection]string
	running bool
}

func newSessionWatch(a auth.Authenticator, interval time.Duration, logger *slog.Logger) *sessionWatch {
	checker, ok := a.(auth.SessionChecker)
	if !ok || interval < 0 {
		return nil
	}
	if interval == 0 {
		interval = DefaultSessionCheckInterval
	}
	return &sessionWatch{checker: checker, interval: interval, logger: logger, conns: map[*wsConnection]string{}}
}

func (w *sessionWatch) add(c *wsConnection, token string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.conns[c] = token
	if !w.running {
		w.running = true
		go w.run()
	}
}

func (w *sessionWatch) remove(c *wsConnection) {
	w.mu.Lock()
	delete(w.conns, c)
	w.mu.Unlock()
}

// run checks until no connection is left, and is started again by the next add.
func (w *sessionWatch) run() {
	t := time.NewTicker(w.interval)
	defer t.Stop()
	for range t.C {
		w.mu.Lock()
		if len(w.conns) == 0 {
			w.running = false
			w.mu.Unlock()
			return
		}
		conns := make([]*wsConnection, 0, len(w.conns))
		tokens := make([]string, 0, len(w.conns))
		for c, tok := range w.conns {
			conns = append(conns, c)
			tokens = append(tokens, tok)
		}
		w.mu.Unlock()
		for start := 0; start < len(tokens); start += sessionCheckBatch {
			end := min(len(tokens), start+sessionCheckBatch)
			w.check(conns[start:end], tokens[start:end])
		}
	}
}

func (w *sessionWatch) check(conns []*wsConnection, tokens []string) {
	ctx, cancel := context.WithTimeout(context.Background(), w.interval)
	defer cancel()
	active, err := w.checker.Active(ctx, tokens)
	if err != nil {
		w.logger.Warn("checking the tokens of live connections failed; they stay open", "err", err)
		return
	}
	for i, ok := range active {
		if !ok {
			w.remove(conns[i])
			conns[i].close(CloseUnauthorized, "unauthenticated: the token was withdrawn (kicked, logged out or replaced); sign in again")
		}
	}
}
