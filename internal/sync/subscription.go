package sync

import (
	"context"
	"errors"
	gosync "sync"
	"time"

	"github.com/msggate/msggate/internal/cache"
	"github.com/msggate/msggate/internal/im"
)

// HubOptions configures a Hub. The zero value is usable.
type HubOptions struct {
	// Buffer is how many live events may wait for one subscriber. When it is full (a burst,
	// or a subscriber reading slowly) later events are not queued: the subscriber reads them
	// from the log at its own pace, so publishers never wait. Default 1024.
	Buffer int
	// StallTimeout is how long one event may wait for the subscriber's connection to take
	// it. A subscriber that stalls longer is dropped (ErrSlowConsumer): it is not reading at
	// all, and holding its stream open would only hold memory. Default 10s.
	StallTimeout time.Duration
	// ReplayPage is how many events one log read fetches while a subscriber catches up.
	// Default 500.
	ReplayPage int
	// OnDrop, when set, is told why the hub ended a subscription ("slow_consumer",
	// "shutdown"); the server feeds it to metrics.
	OnDrop func(reason string)
}

// subscribeTimeout bounds the wait for Redis to confirm a subscription.
const subscribeTimeout = 10 * time.Second

// ErrSlowConsumer ends a subscription whose subscriber stopped taking events.
var ErrSlowConsumer = errors.New("slow consumer: the subscriber stopped taking its events")

// Hub delivers users' events, published on any gateway instance, to this instance's
// subscribers. It holds one Redis subscription per user with subscribers here. It is safe for
// concurrent use.
type Hub struct {
	ledger *Ledger
	cache  *cache.Cache
	feed   *cache.EventFeed
	opts   HubOptions

	// opMu orders the Redis subscribe and unsubscribe calls as the decisions to make them were
	// taken, so a late unsubscribe never cancels a newer subscribe.
	opMu  gosync.Mutex
	mu    gosync.Mutex
	users map[string]map[*Subscription]struct{}
}

// NewHub starts a Hub. Close it to release its Redis connection.
func NewHub(l *Ledger, c *cache.Cache, opts HubOptions) *Hub {
	if opts.Buffer <= 0 {
		opts.Buffer = 1024
	}
	if opts.ReplayPage <= 0 {
		opts.ReplayPage = 500
	}
	if opts.StallTimeout <= 0 {
		opts.StallTimeout = 10 * time.Second
	}
	h := &Hub{ledger: l, cache: c, opts: opts, users: map[string]map[*Subscription]struct{}{}}
	h.feed = c.OpenEventFeed(h.deliver)
	return h
}

// ErrShuttingDown ends the subscriptions of a gateway instance that is shutting down.
var ErrShuttingDown = errors.New("the gateway is shutting down; reconnect with your last token")

// EndAll ends every open subscription with cause (subscribers then reconnect elsewhere).
func (h *Hub) EndAll(cause error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	for _, subs := range h.users {
		for s := range subs {
			h.drop(s, cause, "shutdown")
		}
	}
}

// drop ends s with cause, once.
func (h *Hub) drop(s *Subscription, cause error, reason string) {
	if s.ctx.Err() != nil {
		return
	}
	s.cancel(cause)
	h.dropped(reason)
}

func (h *Hub) dropped(reason string) {
	if h.opts.OnDrop != nil {
		h.opts.OnDrop(reason)
	}
}

// Close ends every subscription and stops the hub's Redis subscription.
func (h *Hub) Close() error {
	h.EndAll(ErrShuttingDown)
	return h.feed.Close()
}

// Subscribers returns how many subscriptions are open on this instance.
func (h *Hub) Subscribers() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	n := 0
	for _, subs := range h.users {
		n += len(subs)
	}
	return n
}

// deliver runs on the feed's goroutine: it must never block. A subscriber whose buffer is
// full is told it overflowed, and reads what it missed from the log. A nil event means events
// may have been missed; subscribers then re-read the log.
func (h *Hub) deliver(userID string, ev *im.Event) {
	h.mu.Lock()
	defer h.mu.Unlock()
	for s := range h.users[userID] {
		select {
		case s.live <- ev:
		default:
			select {
			case s.overflow <- struct{}{}:
			default: // already told
			}
		}
	}
}

// Subscription is one subscriber's stream of a user's events.
type Subscription struct {
	hub    *Hub
	userID string
	live   chan *im.Event
	// overflow holds a signal when live events were left out because live was full.
	overflow chan struct{}
	ctx      context.Context
	cancel   context.CancelCauseFunc
	once     gosync.Once
}

// Subscribe opens a subscription to userID's events. It returns once live events are being
// received, so none published after it returns is missed. Close it when done.
func (h *Hub) Subscribe(ctx context.Context, userID string) (*Subscription, error) {
	sctx, cancel := context.WithCancelCause(ctx)
	s := &Subscription{hub: h, userID: userID, live: make(chan *im.Event, h.opts.Buffer),
		overflow: make(chan struct{}, 1), ctx: sctx, cancel: cancel}
	h.opMu.Lock()
	defer h.opMu.Unlock()
	h.mu.Lock()
	subs := h.users[userID]
	first := subs == nil
	if first {
		subs = map[*Subscription]struct{}{}
		h.users[userID] = subs
	}
	subs[s] = struct{}{}
	h.mu.Unlock()
	if first {
		// Redis confirms a subscription in a round trip; one that never comes must not hold
		// the subscriber (and every other first subscriber) forever.
		subCtx, cancelSub := context.WithTimeout(ctx, subscribeTimeout)
		err := h.feed.Subscribe(subCtx, userID)
		cancelSub()
		if err != nil {
			h.remove(s)
			cancel(err)
			return nil, err
		}
	}
	return s, nil
}

// remove forgets s and reports whether it was the user's last subscriber here.
func (h *Hub) remove(s *Subscription) bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	subs := h.users[s.userID]
	delete(subs, s)
	if len(subs) == 0 && subs != nil {
		delete(h.users, s.userID)
		return true
	}
	return false
}

// Close ends the subscription and, for the user's last subscriber here, the Redis
// subscription.
func (s *Subscription) Close() {
	s.once.Do(func() {
		s.cancel(context.Canceled)
		h := s.hub
		h.opMu.Lock()
		defer h.opMu.Unlock()
		if h.remove(s) {
			// A failure leaves an idle channel subscribed; its messages find no subscriber.
			_ = h.feed.Unsubscribe(context.WithoutCancel(s.ctx), s.userID)
		}
	})
}

// Run streams the user's events to send: first those after since (all new ones when since is
// nil), then live ones, in position order with no gap and no duplicate. When since cannot be
// served (or the log is lost while streaming) it sends one TOO_LONG event and returns nil.
// It returns ErrSlowConsumer when one event waited for the subscriber longer than the stall
// timeout, and the context's cause when the caller's context ends. While Redis is unavailable
// after the stream started, it keeps retrying the log instead of ending. send must give up
// when its context ends.
func (s *Subscription) Run(since *im.SyncToken, send func(context.Context, im.Event) error) error {
	ctx := s.ctx
	stall := s.hub.opts.StallTimeout
	// deliver gives send one event, and gives up on a subscriber that does not take it.
	deliver := func(ev im.Event) error {
		sendCtx, cancel := context.WithTimeoutCause(ctx, stall, ErrSlowConsumer)
		defer cancel()
		err := send(sendCtx, ev)
		if err != nil && errors.Is(context.Cause(sendCtx), ErrSlowConsumer) && ctx.Err() == nil {
			s.hub.dropped("slow_consumer")
			return ErrSlowConsumer
		}
		return err
	}
	var last im.SyncToken
	if since != nil {
		last = *since
	} else {
		head, err := s.hub.cache.EventHead(ctx, s.userID)
		if err != nil {
			return err
		}
		last = head
	}
	// catchUp sends what the log holds after last; false when the subscription must end.
	catchUp := func() (bool, error) {
		for {
			d, err := s.hub.ledger.Difference(ctx, s.userID, last, s.hub.opts.ReplayPage)
			if err != nil {
				return false, err
			}
			if d.TooLong {
				return false, deliver(im.Event{Type: im.EventTooLong, Epoch: d.Token.Epoch, Position: d.Token.Position})
			}
			for _, ev := range d.Events {
				if err := deliver(ev); err != nil {
					return false, err
				}
			}
			last = d.Token
			if !d.HasMore {
				return true, nil
			}
		}
	}
	stop := func(err error) error {
		if errors.Is(err, ErrSlowConsumer) {
			return err
		}
		if cause := context.Cause(ctx); cause != nil {
			return cause
		}
		return err
	}
	// retry is armed while the log cannot be read: Redis restarting or failing over is not a
	// reason to end the stream, and the client's token stays valid (or turns into TOO_LONG
	// once Redis is back without the log).
	retry := time.NewTimer(0)
	retry.Stop()
	backoff := time.Duration(0)
	// resume runs catchUp and reports whether the subscription ends, and with what.
	resume := func() (bool, error) {
		ok, err := catchUp()
		switch {
		case ok:
			backoff = 0
			return false, nil
		case err != nil && im.ErrorCode(err) == im.EUNAVAILABLE && ctx.Err() == nil:
			backoff = min(max(2*backoff, catchUpRetryMin), catchUpRetryMax)
			retry.Reset(backoff)
			return false, nil
		default:
			return true, stop(err)
		}
	}
	defer retry.Stop()
	if end, err := resume(); end {
		return err
	}
	for {
		select {
		case <-ctx.Done():
			return context.Cause(ctx)
		case <-retry.C:
			if end, err := resume(); end {
				return err
			}
		case <-s.overflow:
			// Events were left out of live: what is queued is older than them, and the log
			// has everything.
			for len(s.live) > 0 {
				<-s.live
			}
			if end, err := resume(); end {
				return err
			}
		case ev := <-s.live:
			switch {
			case ev != nil && ev.Epoch == last.Epoch && ev.Position <= last.Position:
				// Already sent, from the log.
			case ev != nil && ev.Epoch == last.Epoch && ev.Position == last.Position+1 && backoff == 0:
				if err := deliver(*ev); err != nil {
					return stop(err)
				}
				last = ev.Token()
			default:
				// A gap, a new log, or a hint that events were missed: the log knows.
				if end, err := resume(); end {
					return err
				}
			}
		}
	}
}

// The wait between attempts to read the log while Redis is unavailable, doubling from min to
// max.
const (
	catchUpRetryMin = 100 * time.Millisecond
	catchUpRetryMax = 2 * time.Second
)
