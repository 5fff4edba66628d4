package cache

import (
	"context"
	"encoding/json"
	"errors"
	"net"
	"strings"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/msggate/msggate/internal/im"
)

// EventFeed receives the events published for the users this gateway instance has
// subscribers for, over one Redis connection. It is safe for concurrent use.
type EventFeed struct {
	c       *Cache
	ps      *redis.PubSub
	deliver func(userID string, ev *im.Event)

	mu      sync.Mutex
	waiters map[string][]chan struct{}

	cancel context.CancelFunc
	done   chan struct{}
}

// OpenEventFeed starts a feed. deliver is called from the feed's one goroutine, in publish
// order per user, and must not block. It gets a nil event when events of that user may have
// been missed (the connection to Redis was re-established); the receiver then re-reads the log.
func (c *Cache) OpenEventFeed(deliver func(userID string, ev *im.Event)) *EventFeed {
	ctx, cancel := context.WithCancel(context.Background())
	f := &EventFeed{c: c, ps: c.rdb.Subscribe(ctx), deliver: deliver, waiters: map[string][]chan struct{}{},
		cancel: cancel, done: make(chan struct{})}
	go f.receive(ctx)
	return f
}

// Subscribe starts receiving userID's events and returns once Redis confirmed the
// subscription, so an event appended after Subscribe returns is never missed.
func (f *EventFeed) Subscribe(ctx context.Context, userID string) error {
	ch := f.c.EventChannel(userID)
	confirmed := make(chan struct{})
	f.mu.Lock()
	f.waiters[ch] = append(f.waiters[ch], confirmed)
	f.mu.Unlock()
	if err := f.ps.Subscribe(ctx, ch); err != nil {
		f.dropWaiter(ch, confirmed)
		return cacheError("subscribe", err)
	}
	select {
	case <-confirmed:
		return nil
	case <-ctx.Done():
		f.dropWaiter(ch, confirmed)
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
			userID, ok := f.userOf(m.Channel)
			if !ok {
				continue
			}
			var ev im.Event
			if err := json.Unmarshal([]byte(m.Payload), &ev); err != nil {
				f.deliver(userID, nil)
				continue
			}
			f.deliver(userID, &ev)
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
		if userID, ok := f.userOf(ch); ok {
			f.deliver(userID, nil)
		}
	}
}

func (f *EventFeed) userOf(ch string) (string, bool) {
	lead := f.c.opts.Prefix + "{u:"
	if !strings.HasPrefix(ch, lead) || !strings.HasSuffix(ch, "}:events") {
		return "", false
	}
	return ch[len(lead) : len(ch)-len("}:events")], true
}
