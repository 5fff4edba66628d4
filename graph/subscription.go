package graph

import (
	"context"
	"errors"
	"time"

	"github.com/msggate/msggate/graph/model"
	"github.com/msggate/msggate/internal/im"
	imsync "github.com/msggate/msggate/internal/sync"
)

// SubscriptionConn is what a subscription needs of the connection it is served on. The
// transport that runs an operation able to hold a subscription puts one on the operation's
// context (WithSubscriptionConn); graph knows nothing else of the transport.
type SubscriptionConn interface {
	// OpenSubscription counts one more subscription on the connection, unless it holds the
	// most it may (then a LIMIT_EXCEEDED error); release undoes it.
	OpenSubscription() (release func(), err error)
	// Close starts closing the connection with a WebSocket close code and reason; it does not
	// wait for the peer.
	Close(code int, reason string)
	// PumpStream hands run to the transport, which runs it on the operation's goroutine
	// instead of a goroutine of its own feeding a channel: run is given emit, which takes one
	// item from the channel the resolver returned and writes it, and reports false once the
	// stream is over. false when the transport offers no such goroutine.
	PumpStream(run func(emit func() bool)) bool
}

// The close codes a subscription ends its connection with; the server's own are beside it.
const (
	// CloseGoingAway (RFC 6455): the gateway instance is shutting down.
	CloseGoingAway = 1001
	// CloseSlowConsumer: the subscriber did not read its events fast enough.
	CloseSlowConsumer = 4008
)

type subscriptionConnKey struct{}

// WithSubscriptionConn gives the operation of ctx the connection it is served on.
func WithSubscriptionConn(ctx context.Context, c SubscriptionConn) context.Context {
	return context.WithValue(ctx, subscriptionConnKey{}, c)
}

func subscriptionConnFrom(ctx context.Context) SubscriptionConn {
	c, _ := ctx.Value(subscriptionConnKey{}).(SubscriptionConn)
	return c
}

// closeAndWait closes the connection and waits until the transport has noticed (the
// operation's context ends), so that the subscription's end is the close and its reason: were
// the event channel closed first, gqlgen would send "complete", which a client takes as a
// normal end and does not resubscribe after.
func closeAndWait(ctx context.Context, conn SubscriptionConn, code int, reason string) {
	conn.Close(code, reason)
	select {
	case <-ctx.Done():
	case <-time.After(closeWait):
	}
}

// closeWait bounds closeAndWait: a peer that never answers the close handshake is cut off by
// the WebSocket library within this time.
const closeWait = 10 * time.Second

// syncEvents answers Subscription.syncEvents.
func (r *Resolver) syncEvents(ctx context.Context, since *string) (<-chan *model.SyncEvent, error) {
	log, viewer, err := r.viewerLog(ctx)
	if err != nil {
		return nil, err
	}
	var tok *im.SyncToken
	if since != nil {
		t, err := log.ParseToken(*since)
		if err != nil {
			return nil, err
		}
		tok = &t
	}
	if r.Hub == nil {
		return nil, im.Errorf(im.EUNAVAILABLE, "subscriptions are not enabled on this gateway")
	}
	conn := subscriptionConnFrom(ctx)
	release := func() {}
	if conn != nil {
		if release, err = conn.OpenSubscription(); err != nil {
			return nil, err
		}
	}
	// Opened without waiting for Redis to confirm the user's channel: the stream waits for
	// that on its own goroutine (Run), so the operation's preparation does not hold one more
	// goroutine per device while thousands of devices subscribe at once.
	sub, err := r.Hub.Open(ctx, viewer.UserID)
	if err != nil {
		release()
		return nil, err
	}
	// The stream runs on the transport's goroutine for this operation (PumpStream): each
	// event is put in out, then emit has gqlgen take it, select its fields and write them.
	out := make(chan *model.SyncEvent, 1)
	run := func(emit func() bool) {
		defer close(out)
		defer release()
		defer sub.Close()
		err := sub.Run(tok, func(sendCtx context.Context, ev im.Event) error {
			out <- syncEventOf(ev)
			// A write the peer does not take within the hub's stall timeout: the hub has
			// dropped the subscription by then; the close frame follows what the peer's
			// socket already holds (the write waits for it, or for the close to give up).
			stop := context.AfterFunc(sendCtx, func() {
				if errors.Is(context.Cause(sendCtx), imsync.ErrSlowConsumer) {
					conn.Close(CloseSlowConsumer, slowConsumerReason)
				}
			})
			defer stop()
			if !emit() {
				return context.Cause(ctx)
			}
			return nil
		})
		// The subscription leaves the hub before the connection is closed: the close may wait
		// for a peer that does not read.
		sub.Close()
		r.streamEnded(ctx, conn, viewer.UserID, err)
	}
	if conn == nil || !conn.PumpStream(run) {
		release()
		sub.Close()
		return nil, im.Errorf(im.EINVALID, "syncEvents is served over WebSocket only")
	}
	return out, nil
}

// streamEnded closes the connection of a subscription whose stream ended with err, or logs
// why it ended. Apart from the stream's goroutine (syncEvents' run), which idles below it:
// what is here would widen its frame.
func (r *Resolver) streamEnded(ctx context.Context, conn SubscriptionConn, userID string, err error) {
	switch {
	case errors.Is(err, imsync.ErrSlowConsumer):
		r.Logger.WarnContext(ctx, "subscriber dropped", "user", userID, "reason", err)
		closeAndWait(ctx, conn, CloseSlowConsumer, slowConsumerReason)
	case errors.Is(err, imsync.ErrShuttingDown):
		closeAndWait(ctx, conn, CloseGoingAway, "going away: the gateway is shutting down; reconnect with your last token")
	case err != nil && ctx.Err() == nil:
		r.Logger.ErrorContext(ctx, "subscription ended", "user", userID, "err", err)
	}
}

const slowConsumerReason = "slow consumer: stopped taking events; reconnect with your last token"
