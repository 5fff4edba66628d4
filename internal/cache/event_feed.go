package cache

import (
	"context"
	"encoding/json"
	"errors"
	"net"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/msggate/msggate/internal/im"
)

// EventFeed receives the events published for the users and the group streams this gateway
// instance has subscribers for, over one Redis connection: one channel per user and one per
// group stream, however many of its devices follow them. It is safe for concurrent use.
type EventFeed struct {
	c       *Cache
	ps      *redis.PubSub
	deliver func(userID, group string, ev *im.Event)

	mu      sync.Mutex
	waiters map[string][]chan struct{}

	cancel context.CancelFunc
	done   chan struct{}
}

// OpenEventFeed starts a feed. deliver is called from the feed's one goroutine, in publish
// order per channel, and must not block; it names either a user (group "") or a group stream
// (userID ""). It gets a nil event when events there may have been missed (the connection to
// Redis was re-established), or when a user's group memberships changed (Resync); the
// receiver then re-reads.
func (c *Cache) OpenEventFeed(deliver func(userID, group string, ev *im.Event)) *EventFeed {
	ctx, cancel := context.WithCancel(context.Background())
	f := &EventFeed{c: c, ps: c.rdb.Subscribe(ctx), deliver: deliver, waiters: map[string][]chan struct{}{},
		cancel: cancel, done: make(chan struct{})}
	go f.receive(ctx)
	return f
}

// Subscribe starts receiving userID's events and returns once Redis confirmed the
// subscription, so an event appended after Subscribe returns is never missed.
func (f *EventFeed) Subscribe(ctx context.Context, userID string) error {
	return f.subscribe(ctx, f.c.EventChannel(userID))
}

// SubscribeGroup starts receiving a group stream's events, as Subscribe does a user's.
func (f *EventFeed) SubscribeGroup(ctx context.Context, conversationID string) error {
	return f.subscribe(ctx, f.c.GroupChannel(conversationID))
}

func (f *EventFeed) subscribe(ctx context.Context, ch string) error {
	p, err := f.start(ctx, ch)
	if err != nil {
		return err
	}
	return p.Wait(ctx)
}

// PendingSubscription is a channel subscription sent to Redis and not yet confirmed.
type PendingSubscription struct {
	f  *EventFeed
	ch string
	// Confirmed is closed once Redis confirmed the subscription.
	Confirmed <-chan struct{}
	confirmed chan struct{}
}

// StartSubscribe sends the subscription to userID's events and returns without waiting for
// Redis to confirm it: whoever needs it confirmed waits on the result (Wait), so that the
// caller's goroutine is not held for the round trip. Confirmations are awaited in the order
// the subscriptions were sent.
func (f *EventFeed) StartSubscribe(ctx context.Context, userID string) (*PendingSubscription, error) {
	return f.start(ctx, f.c.EventChannel(userID))
}

func (f *EventFeed) start(ctx context.Context, ch string) (*PendingSubscription, error) {
	confirmed := make(chan struct{})
	f.mu.Lock()
	f.waiters[ch] = append(f.waiters[ch], confirmed)
	f.mu.Unlock()
	if err := f.ps.Subscribe(ctx, ch); err != nil {
		f.dropWaiter(ch, confirmed)
		return nil, cacheError("subscribe", err)
	}
	return &PendingSubscription{f: f, ch: ch, Confirmed: confirmed, confirmed: confirmed}, nil
}

// Wait returns once Redis confirmed the subscription, or an error once ctx ends first (the
// subscription is then no longer waited for).
func (p *PendingSubscription) Wait(ctx context.Context) error {
	select {
	case <-p.confirmed:
		return nil
	case <-ctx.Done():
		p.f.dropWaiter(p.ch, p.confirmed)
		return im.Unavailable("cache", errors.Join(errors.New("waiting for subscription"), ctx.Err()))
	}
}

func (f *EventFeed) dropWaiter(ch string, w chan struct{}) {
	f.mu.Lock()
	defer f.mu.Unlock()
	ws := f.waiters[ch]
	for i, x := range ws {
		if x == w {
			f.waiters[ch] = append(ws[:i:i], ws[i+1:]...)
			break
		}
	}
	if len(f.waiters[ch]) == 0 {
		delete(f.waiters, ch)
	}
}

// Unsubscribe stops receiving userID's events.
func (f *EventFeed) Unsubscribe(ctx context.Context, userID string) error {
	return cacheError("unsubscribe", f.ps.Unsubscribe(ctx, f.c.EventChannel(userID)))
}

// UnsubscribeGroup stops receiving a group stream's events.
func (f *EventFeed) UnsubscribeGroup(ctx context.Context, conversationID string) error {
	return cacheError("unsubscribe", f.ps.Unsubscribe(ctx, f.c.GroupChannel(conversationID)))
}

// resyncHint is published on a user's channel to make their live subscribers re-read their
// streams (Resync); it is not an event.
const resyncHint = "resync"

// Resync tells the live subscribers of each user, on every instance, to re-read what they
// follow: a user's group memberships changed, so the group streams they follow change. It
// costs one publish per user, in one round trip.
func (c *Cache) Resync(ctx context.Context, userIDs []string) error {
	if len(userIDs) == 0 {
		return nil
	}
	pipe := c.rdb.Pipeline()
	for _, u := range userIDs {
		pipe.Do(ctx, c.publishCommand(), c.EventChannel(u), resyncHint)
	}
	_, err := pipe.Exec(ctx)
	return cacheError("resync", err)
}

// ResyncGroups tells the live subscribers of each group conversation's stream, on every
// instance, to re-read what they follow: the group's members changed, so some of them must
// stop following it.
func (c *Cache) ResyncGroups(ctx context.Context, conversationIDs []string) error {
	if len(conversationIDs) == 0 {
		return nil
	}
	pipe := c.rdb.Pipeline()
	for _, id := range conversationIDs {
		pipe.Do(ctx, c.publishCommand(), c.GroupChannel(id), resyncHint)
	}
	_, err := pipe.Exec(ctx)
	return cacheError("resync groups", err)
}

// Close stops the feed and waits for its goroutine to end.
func (f *EventFeed) Close() error {
	f.cancel()
	err := f.ps.Close()
	<-f.done
	return err
}

// feedPing is how long the feed waits for a message before it checks the connection.
const feedPing = 5 * time.Second

func (f *EventFeed) receive(ctx context.Context) {
	defer close(f.done)
	backoff := 50 * time.Millisecond
	for ctx.Err() == nil {
		msg, err := f.ps.ReceiveTimeout(ctx, feedPing)
		if err != nil {
			var ne net.Error
			if errors.As(err, &ne) && ne.Timeout() {
				_ = f.ps.Ping(ctx)
				continue
			}
			if ctx.Err() != nil || errors.Is(err, redis.ErrClosed) {
				return
			}
			// The connection broke; the next receive reconnects and resubscribes, and the
			// confirmations that come back tell the subscribers to re-read their logs.
			select {
			case <-ctx.Done():
				return
			case <-time.After(backoff):
			}
			if backoff < time.Second {
				backoff *= 2
			}
			continue
		}
		backoff = 50 * time.Millisecond
		switch m := msg.(type) {
		case *redis.Subscription:
			if m.Kind == "subscribe" {
				f.confirmed(m.Channel)
			}
		case *redis.Message:
			userID, group, ok := f.c.channelOf(m.Channel)
			if !ok {
				continue
			}
			var ev im.Event
			if m.Payload == resyncHint || json.Unmarshal([]byte(m.Payload), &ev) != nil {
				f.deliver(userID, group, nil)
				continue
			}
			ev.Stream = group
			f.deliver(userID, group, &ev)
		}
	}
}

// confirmed wakes whoever waits for the channel's subscription. A confirmation nobody waits
// for is a resubscription after a reconnect: events may have been published meanwhile.
func (f *EventFeed) confirmed(ch string) {
	f.mu.Lock()
	ws := f.waiters[ch]
	delete(f.waiters, ch)
	f.mu.Unlock()
	for _, w := range ws {
		close(w)
	}
	if len(ws) == 0 {
		if userID, group, ok := f.c.channelOf(ch); ok {
			f.deliver(userID, group, nil)
		}
	}
}
