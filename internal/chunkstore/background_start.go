package chunkstore

import (
	"context"
	"errors"
	"time"

	"go.mongodb.org/mongo-driver/v2/mongo"

	"github.com/msggate/msggate/internal/im"
)

// Starting in the background (Options.StartInBackground): a gateway that starts while the
// store is down, restarting or saturated must still answer at once (what Redis can serve, and
// UNAVAILABLE for the rest), not hang in its start-up or exit. So Connect returns a Store at
// once and prepares it (indexes, detecting FerretDB) in the background, again and again until
// it succeeds. Until then every operation waits for it up to startWait, then answers
// EUNAVAILABLE ("message store is starting") with a retry hint; work without a deadline waits
// for as long as it takes. Updates must not start before the store knows whether to take leases.

// startWait bounds how long an operation waits for the store to be prepared: long enough for
// a healthy store (a handful of commands), short enough to answer a client within a second or
// two of the gateway's start. Once an attempt has failed, the store is known to be down and
// operations are refused at once.
const startWait = time.Second

// errStarting is why an operation was refused while the store is being prepared.
var errStarting = errors.New("the store is being prepared (indexes, backend detection)")

// startingError carries errStarting with its retry hint.
type startingError struct{}

func (startingError) Error() string            { return errStarting.Error() }
func (startingError) Unwrap() error            { return errStarting }
func (startingError) RetryHint() time.Duration { return time.Second }

// prepareInBackground runs open's preparation until it succeeds or the Store is closed, then
// takes over what it found (leases) and opens the Store to operations.
func (s *Store) prepareInBackground(ctx context.Context, db *mongo.Database, opts Options) {
	opts.StartInBackground = false
	backoff := 100 * time.Millisecond
	for {
		prepared, err := open(ctx, db, opts)
		if err == nil {
			// What the preparation learnt of the server and the collections' layout; the
			// Store's operations read it only after ready is closed.
			s.leases, s.ferret, s.natural = prepared.leases, prepared.ferret, prepared.natural
			s.senderlessClientMsgIDs = prepared.senderlessClientMsgIDs
			close(s.ready)
			return
		}
		s.startFailed.Store(true)
		if opts.OnStartFailed != nil {
			opts.OnStartFailed(err)
		}
		select {
		case <-ctx.Done():
			return
		case <-time.After(backoff):
		}
		backoff = min(2*backoff, 2*time.Second)
	}
}

// StartFailed reports whether an attempt to prepare the store has failed (the store is down):
// what waits for it is then refused at once rather than after startWait.
func (s *Store) StartFailed() bool { return s.startFailed.Load() }

// Ready is closed once the store is prepared (at once unless Options.StartInBackground).
func (s *Store) Ready() <-chan struct{} {
	if s.ready == nil {
		return closedChan
	}
	return s.ready
}

var closedChan = func() chan struct{} { c := make(chan struct{}); close(c); return c }()

// waitReady waits until the store is prepared, up to startWait for a context with a deadline.
func (s *Store) waitReady(ctx context.Context) error {
	if s.ready == nil {
		return nil
	}
	select {
	case <-s.ready:
		return nil
	default:
	}
	var timeout <-chan time.Time
	if _, ok := ctx.Deadline(); ok {
		if s.startFailed.Load() {
			return &im.Error{Code: im.EUNAVAILABLE, Message: "message store is starting", Cause: startingError{}}
		}
		t := time.NewTimer(startWait)
		defer t.Stop()
		timeout = t.C
	}
	select {
	case <-s.ready:
		return nil
	case <-ctx.Done():
		return storeError("wait for the store to be prepared", context.Cause(ctx))
	case <-timeout:
		return &im.Error{Code: im.EUNAVAILABLE, Message: "message store is starting", Cause: startingError{}}
	}
}
