package sync

import (
	"context"
	"errors"
	"maps"
	"math/rand/v2"
	gosync "sync"
	"sync/atomic"
	"time"

	"github.com/msggate/msggate/internal/cache"
	"github.com/msggate/msggate/internal/freshstack"
	"github.com/msggate/msggate/internal/im"
)

// HubOptions configures a Hub. The zero value is usable.
type HubOptions struct {
	// Buffer is how many live events may wait for one subscriber. When it is full (a burst,
	// or a subscriber reading slowly) later events are not queued: the subscriber reads them
	// from the log at its own pace, so publishers never wait. Default DefaultHubBuffer.
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
	// MembershipCheck is how often the hub checks that each subscription follows the group
	// streams of exactly the groups its user is in. A membership change tells the user's live
	// subscriptions at once (cache.Resync), but that hint is lost when its publish fails or
	// its writer dies first; the check bounds how long a removed member then keeps receiving
	// the group's events (and how long an added one waits for them). It costs one Redis GET
	// per subscribed user, many users a round trip, and a read of the user's conversation list
	// only when its version moved (or on the user's first check here): no MongoDB command while
	// lists are cached, and nothing that grows with a group's size. Over a follower's log
	// (NewFollowerLog, OpenIM mode) lists have no version and no check runs: that follower
	// does not commit a change until its hint is published. Default DefaultMembershipCheck.
	MembershipCheck time.Duration
	// Catchups bounds the subscriptions of this instance that read their logs at once (a
	// start, or a re-read after a gap); the others wait their turn in line. A reconnect storm
	// is so paced rather than refused: its devices' reads no longer crowd Redis's admission
	// queue all at once, and a subscription waiting its turn holds no goroutine besides its
	// own. Default DefaultCatchups.
	Catchups int
}

// DefaultCatchups is HubOptions.Catchups's default: a reconnect storm's reads that miss Redis
// are gathered into store queries of up to 500 users (store_loaders.go), and on FerretDB each
// query costs a scan whatever its size, so as many reads at once as make up such a query.
const DefaultCatchups = 512

// DefaultMembershipCheck is HubOptions.MembershipCheck's default.
const DefaultMembershipCheck = 15 * time.Second

// subscribeTimeout bounds the wait for Redis to confirm a subscription.
const subscribeTimeout = 10 * time.Second

// ErrSlowConsumer ends a subscription whose subscriber stopped taking events.
var ErrSlowConsumer = errors.New("slow consumer: the subscriber stopped taking its events")

// Hub delivers users' events and group streams' events, published on any gateway instance, to
// this instance's subscribers. It holds one Redis connection, with one channel per user and
// one per group stream that has subscribers here: a group message is received once per
// instance, and handed to each of its subscribers here in process. It is safe for concurrent
// use.
type Hub struct {
	events *EventLog
	cache  *cache.Cache
	feed   *cache.EventFeed
	opts   HubOptions

	// channels orders each channel's Redis subscribe and unsubscribe calls as the decisions to
	// make them were taken, so a late unsubscribe never cancels a newer subscribe.
	channels channelLocks
	mu       gosync.Mutex
	users    map[string]map[*Subscription]struct{}
	groups   map[string]map[*Subscription]struct{}
	// pending holds the user channels whose subscription Redis has not confirmed yet, for the
	// subscriptions of the same user that open meanwhile; guarded by mu.
	pending map[string]*cache.PendingSubscription
	// open counts the subscriptions whose stream start is fixed (Subscribers).
	open atomic.Int64
	// live counts the subscriptions past their first catch-up.
	live atomic.Int64
	// catchups holds a token for each subscription reading its logs (HubOptions.Catchups).
	catchups chan struct{}
	// stopCheck ends the membership check's goroutine, which closes checkDone (nil when no
	// check runs).
	stopCheck context.CancelFunc
	checkDone chan struct{}
}

// NewHub starts a Hub. Close it to release its Redis connection.
func NewHub(events *EventLog, c *cache.Cache, opts HubOptions) *Hub {
	if opts.Buffer <= 0 {
		opts.Buffer = DefaultHubBuffer
	}
	if opts.ReplayPage <= 0 {
		opts.ReplayPage = 500
	}
	if opts.StallTimeout <= 0 {
		opts.StallTimeout = 10 * time.Second
	}
	if opts.MembershipCheck <= 0 {
		opts.MembershipCheck = DefaultMembershipCheck
	}
	if opts.Catchups <= 0 {
		opts.Catchups = DefaultCatchups
	}
	h := &Hub{events: events, cache: c, opts: opts, users: map[string]map[*Subscription]struct{}{},
		groups: map[string]map[*Subscription]struct{}{}, pending: map[string]*cache.PendingSubscription{}, catchups: make(chan struct{}, opts.Catchups)}
	h.feed = c.OpenEventFeed(h.deliver)
	if v, ok := events.state.(listVersioner); ok {
		ctx, cancel := context.WithCancel(context.Background())
		h.stopCheck, h.checkDone = cancel, make(chan struct{})
		go h.checkMemberships(ctx, v)
	}
	return h
}

// DefaultHubBuffer is HubOptions.Buffer's default. A subscriber whose buffer fills reads from
// the log instead, so the buffer only has to cover a burst; it is held only while events wait.
const DefaultHubBuffer = 64

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
	if h.stopCheck != nil {
		h.stopCheck()
		<-h.checkDone
	}
	h.EndAll(ErrShuttingDown)
	return h.feed.Close()
}

// Subscribers returns how many subscriptions are open on this instance with their start
// fixed: from then on, no event published is missed (a subscription that began without a
// token has read its streams' heads; one with a token has its user's channel confirmed).
func (h *Hub) Subscribers() int { return int(h.open.Load()) }

// LiveSubscribers returns how many subscriptions here caught up once and stream live events:
// the others are still reading their streams' heads and the member's counters.
func (h *Hub) LiveSubscribers() int { return int(h.live.Load()) }

// deliver runs on the feed's goroutine: it must never block. A subscriber whose buffer is
// full is told it overflowed, and reads what it missed from the log. A nil event means events
// may have been missed (or the user's groups changed); subscribers then re-read.
func (h *Hub) deliver(userID, group string, ev *im.Event) {
	h.mu.Lock()
	defer h.mu.Unlock()
	subs := h.users[userID]
	if group != "" {
		subs = h.groups[group]
	}
	for s := range subs {
		s.offerLocked(ev)
	}
}

// offerLocked queues ev (nil: re-read the logs) for s without waiting; when s's buffer is full,
// s is told it overflowed instead. h.mu must be held.
func (s *Subscription) offerLocked(ev *im.Event) {
	s.queueMu.Lock()
	if len(s.queue) < s.hub.opts.Buffer {
		s.queue = append(s.queue, ev)
	} else {
		s.overflowed = true
	}
	s.queueMu.Unlock()
	select {
	case s.arrived <- struct{}{}:
	default: // already told
	}
}

// takeQueued returns the live events queued for s (nil when none), and whether events were
// left out since the last call.
func (s *Subscription) takeQueued() ([]*im.Event, bool) {
	s.queueMu.Lock()
	defer s.queueMu.Unlock()
	q, over := s.queue, s.overflowed
	// Not kept for the next burst: an idle subscriber holds no buffer.
	s.queue, s.overflowed = nil, false
	return q, over
}

// Subscription is one subscriber's stream of a user's events: their own log's and those of
// the group streams they follow.
type Subscription struct {
	hub    *Hub
	userID string
	// queue holds the live events waiting for the stream (at most HubOptions.Buffer);
	// overflowed is set when later ones were left out. Both guarded by queueMu. arrived holds
	// a signal when either changed.
	queueMu    gosync.Mutex
	queue      []*im.Event
	overflowed bool
	arrived    chan struct{}
	ctx        context.Context
	cancel     context.CancelCauseFunc
	once       gosync.Once
	// following is the set of group streams whose channels deliver to this subscription;
	// guarded by hub.mu, changed by Run's goroutine (each group under its channel's lock) and
	// Close. synced (guarded by hub.mu) is set once following was first made what a read of
	// the user's groups said; closed (guarded by hub.mu) once Close took s out of the hub, so
	// that a follow still under way adds nothing back.
	following map[string]struct{}
	synced    bool
	closed    bool
	// listVersion (guarded by hub.mu) is the version of the user's list that following was
	// last made from, when the start read it ("" otherwise): the membership check need not
	// read a list whose version has not moved since.
	listVersion string
	// head is the user's log head when the subscription began: where Run starts without a
	// token, so that no event of the user's log appended after Subscribe returned is missed.
	// nil when Redis could not tell it then, or when the subscription was opened (Open):
	// Run then reads it once the user's channel is confirmed.
	head *im.Cursor
	// channel is the user channel's subscription while Redis has not confirmed it (nil once
	// it has, or when another subscription here had it confirmed before); counted is set
	// (guarded by hub.mu) once the subscription is in Subscribers.
	channel *cache.PendingSubscription
	counted bool
}

// channelLocks are the locks that order each channel's subscribe and unsubscribe calls: one
// per stripe of channel names, so that the channels of different users and groups are
// confirmed by Redis in parallel. With one lock for all, devices reconnecting at once (a
// gateway restart) waited for each other's round trips one by one, and each subscription went
// live only once every device before it had.
type channelLocks [channelStripes]gosync.Mutex

const channelStripes = 256

// user and group return the lock of a user's channel and of a group stream's.
func (l *channelLocks) user(userID string) *gosync.Mutex { return l.of('u', userID) }
func (l *channelLocks) group(g string) *gosync.Mutex     { return l.of('g', g) }

func (l *channelLocks) of(kind byte, name string) *gosync.Mutex {
	// FNV-1a: a cheap spread of the names over the stripes; two names sharing one only wait.
	h := uint32(2166136261) ^ uint32(kind)
	for i := 0; i < len(name); i++ {
		h ^= uint32(name[i])
		h *= 16777619
	}
	return &l[h%channelStripes]
}

// Subscribe opens a subscription to userID's events. It returns once live events of the
// user's own log are being received, so none published after it returns is missed (Run
// subscribes to the group streams before it reads them). Close it when done.
func (h *Hub) Subscribe(ctx context.Context, userID string) (*Subscription, error) {
	s, err := h.Open(ctx, userID)
	if err != nil {
		return nil, err
	}
	if err := s.awaitChannel(); err != nil {
		s.Close()
		return nil, err
	}
	// A failure leaves the head to Run, which retries it while Redis is unavailable.
	if head, err := h.cache.EventHead(ctx, userID); err == nil {
		s.head = &head
	}
	s.count()
	return s, nil
}

// Open opens a subscription to userID's events without waiting for Redis to confirm the
// user's channel: Run waits for that, on the goroutine that streams, before it reads where
// to start. A device's connection then holds no goroutine of its own while Redis confirms
// thousands of channels at once (a gateway's devices reconnecting). Close it when done.
func (h *Hub) Open(ctx context.Context, userID string) (*Subscription, error) {
	sctx, cancel := context.WithCancelCause(ctx)
	s := &Subscription{hub: h, userID: userID, arrived: make(chan struct{}, 1), ctx: sctx, cancel: cancel}
	// The channel's lock orders its subscribe against an unsubscribe of the user's last
	// subscription here (Close), which waits for a pending confirmation first.
	lock := h.channels.user(userID)
	lock.Lock()
	defer lock.Unlock()
	h.mu.Lock()
	subs := h.users[userID]
	first := subs == nil
	if first {
		subs = map[*Subscription]struct{}{}
		h.users[userID] = subs
	}
	subs[s] = struct{}{}
	s.channel = h.pending[userID]
	h.mu.Unlock()
	if !first {
		return s, nil
	}
	p, err := h.feed.StartSubscribe(ctx, userID)
	if err != nil {
		h.mu.Lock()
		h.removeUserLocked(s)
		h.mu.Unlock()
		cancel(err)
		return nil, err
	}
	h.mu.Lock()
	h.pending[userID] = p
	h.mu.Unlock()
	s.channel = p
	return s, nil
}

// awaitChannel waits until Redis confirmed the user's channel, for at most subscribeTimeout:
// one that never comes must not hold the subscriber forever.
func (s *Subscription) awaitChannel() error {
	p := s.channel
	if p == nil {
		return nil
	}
	ctx, cancel := context.WithTimeout(s.ctx, subscribeTimeout)
	defer cancel()
	err := p.Wait(ctx)
	h := s.hub
	h.mu.Lock()
	// Confirmed, or given up on: either way no later subscription waits for it (one that
	// shares it already still does, until its own timeout).
	if h.pending[s.userID] == p {
		delete(h.pending, s.userID)
	}
	s.channel = nil
	h.mu.Unlock()
	return err
}

// count puts s in Subscribers, once.
func (s *Subscription) count() {
	h := s.hub
	h.mu.Lock()
	defer h.mu.Unlock()
	if !s.counted && !s.closed {
		s.counted = true
		h.open.Add(1)
	}
}

// removeUserLocked forgets s as a subscriber of its user and reports whether it was the user's
// last here. h.mu must be held.
func (h *Hub) removeUserLocked(s *Subscription) bool {
	subs := h.users[s.userID]
	delete(subs, s)
	if s.counted {
		s.counted = false
		h.open.Add(-1)
	}
	if len(subs) == 0 && subs != nil {
		delete(h.users, s.userID)
		return true
	}
	return false
}

// unfollowLocked stops delivering group g to s and reports whether s was its last subscriber
// here. h.mu must be held.
func (h *Hub) unfollowLocked(s *Subscription, g string) bool {
	delete(s.following, g)
	subs := h.groups[g]
	delete(subs, s)
	if len(subs) == 0 && subs != nil {
		delete(h.groups, g)
		return true
	}
	return false
}

// follow makes the group streams s receives live exactly groups: it subscribes the channels
// of streams no one here followed (and waits for Redis to confirm them) and unsubscribes
// those no one here follows any more. It reports whether s follows streams it did not.
func (s *Subscription) follow(groups map[string]im.Cursor) (bool, error) {
	h := s.hub
	var stale, fresh []string
	h.mu.Lock()
	for g := range s.following {
		if _, keep := groups[g]; !keep {
			stale = append(stale, g)
		}
	}
	for g := range groups {
		if _, ok := s.following[g]; !ok {
			fresh = append(fresh, g)
		}
	}
	h.mu.Unlock()
	for _, g := range stale {
		s.unfollow(g)
	}
	added := false
	for _, g := range fresh {
		// Each channel under its own lock: a second follower of a group waits here until the
		// first one's channel is confirmed, and then follows a stream already heard.
		lock := h.channels.group(g)
		lock.Lock()
		h.mu.Lock()
		if s.closed {
			h.mu.Unlock()
			lock.Unlock()
			return added, context.Cause(s.ctx)
		}
		if s.following == nil {
			s.following = map[string]struct{}{}
		}
		s.following[g] = struct{}{}
		subs := h.groups[g]
		first := subs == nil
		if first {
			subs = map[*Subscription]struct{}{}
			h.groups[g] = subs
		}
		subs[s] = struct{}{}
		h.mu.Unlock()
		if first {
			subCtx, cancel := context.WithTimeout(s.ctx, subscribeTimeout)
			err := h.feed.SubscribeGroup(subCtx, g)
			cancel()
			if err != nil {
				// Forget g, so that the next attempt subscribes its channel again.
				h.mu.Lock()
				h.unfollowLocked(s, g)
				h.mu.Unlock()
				lock.Unlock()
				return false, err
			}
		}
		lock.Unlock()
		added = true
	}
	h.mu.Lock()
	s.synced = true
	s.listVersion = ""
	h.mu.Unlock()
	return added, nil
}

// unfollow stops delivering group g to s, and unsubscribes its channel when s was its last
// subscriber here.
func (s *Subscription) unfollow(g string) {
	h := s.hub
	lock := h.channels.group(g)
	lock.Lock()
	defer lock.Unlock()
	h.mu.Lock()
	last := false
	if _, ok := s.following[g]; ok {
		last = h.unfollowLocked(s, g)
	}
	h.mu.Unlock()
	if last {
		// A failure leaves an idle channel subscribed; its messages find no subscriber.
		_ = h.feed.UnsubscribeGroup(context.WithoutCancel(s.ctx), g)
	}
}

// Close ends the subscription and, for the last subscriber here of the user or of a group
// stream, the Redis subscription.
func (s *Subscription) Close() {
	s.once.Do(func() {
		s.cancel(context.Canceled)
		h := s.hub
		lock := h.channels.user(s.userID)
		lock.Lock()
		h.mu.Lock()
		s.closed = true
		lastOfUser := h.removeUserLocked(s)
		pending := h.pending[s.userID]
		if lastOfUser {
			delete(h.pending, s.userID)
		}
		groups := make([]string, 0, len(s.following))
		for g := range s.following {
			groups = append(groups, g)
		}
		h.mu.Unlock()
		if lastOfUser {
			if pending != nil {
				// The unsubscribe must reach Redis after the confirmation it waits for, or
				// that confirmation could be taken for a later subscription's.
				wctx, cancel := context.WithTimeout(context.WithoutCancel(s.ctx), subscribeTimeout)
				_ = pending.Wait(wctx)
				cancel()
			}
			// A failure leaves an idle channel subscribed; its messages find no subscriber.
			_ = h.feed.Unsubscribe(context.WithoutCancel(s.ctx), s.userID)
		}
		lock.Unlock()
		for _, g := range groups {
			s.unfollow(g)
		}
	})
}

// Run streams the user's events to send: first those after since (all new ones when since is
// nil), then live ones, in position order within each stream with no gap and no duplicate.
// When since cannot be served (or a log is lost while streaming) it sends one TOO_LONG event
// and returns nil. It returns ErrSlowConsumer when one event waited for the subscriber longer
// than the stall timeout, and the context's cause when the caller's context ends. While Redis
// is unavailable after the stream started, it keeps retrying the log instead of ending. send
// must give up when its context ends.
func (s *Subscription) Run(since *im.SyncToken, send func(context.Context, im.Event) error) error {
	// The stream's state lives on the heap and each wake-up is handled by a call that returns
	// before the next wait: the goroutine idles in this loop's small frame, on a stack that
	// garbage collections shrink back to its smallest size (it is most of what an idle
	// device costs).
	st := &stream{s: s, ctx: s.ctx, send: send, views: map[string]MemberView{}, retry: time.NewTimer(0)}
	st.retry.Stop()
	st.started = since != nil
	if st.started {
		st.tok = *since
	}
	defer st.end()
	// An opened subscription (Open) waits here, on the goroutine that streams, until Redis
	// confirmed the user's channel: only then is a head read, or a catch-up from a token,
	// sure to be followed by every later event.
	if err := s.awaitChannel(); err != nil {
		return st.stop(err)
	}
	if st.started {
		s.count()
	}
	if end, err := st.resume(); end {
		return err
	}
	ctx := s.ctx
	for {
		var end bool
		var err error
		select {
		case <-ctx.Done():
			return context.Cause(ctx)
		case <-st.retry.C:
			end, err = st.resume()
		case <-s.arrived:
			end, err = st.arrived()
		}
		if end {
			return err
		}
	}
}

// stream is a running subscription's state (Run's).
type stream struct {
	s    *Subscription
	ctx  context.Context
	send func(context.Context, im.Event) error
	// views holds the user's own counters in each group followed, to personalize its events.
	views   map[string]MemberView
	tok     im.SyncToken // where the stream stands, once started
	started bool
	// retry is armed while the logs cannot be read: Redis restarting or failing over is not a
	// reason to end the stream, and the client's token stays valid (or turns into TOO_LONG
	// once Redis is back without the log).
	retry   *time.Timer
	backoff time.Duration
	live    bool // counted in hub.live
}

func (st *stream) end() {
	st.retry.Stop()
	if st.live {
		st.s.hub.live.Add(-1)
	}
}

// deliver gives send one event, and gives up on a subscriber that does not take it.
// A subscriber that stalls leaves the hub at once, even while send still waits (a write
// to a peer that does not read only ends when the peer reads or the connection closes).
func (st *stream) deliver(ev im.Event) error {
	s, ctx := st.s, st.ctx
	sendCtx, cancel := context.WithTimeoutCause(ctx, s.hub.opts.StallTimeout, ErrSlowConsumer)
	defer cancel()
	stalled := context.AfterFunc(sendCtx, func() {
		if errors.Is(context.Cause(sendCtx), ErrSlowConsumer) && ctx.Err() == nil {
			s.hub.dropped("slow_consumer")
			s.cancel(ErrSlowConsumer)
			s.Close()
		}
	})
	err := st.send(sendCtx, ev)
	if !stalled() && errors.Is(context.Cause(ctx), ErrSlowConsumer) {
		return ErrSlowConsumer
	}
	return err
}

// catchUp sends what the logs hold after tok; false when the subscription must end.
func (st *stream) catchUp() (bool, error) {
	s, ctx := st.s, st.ctx
	for {
		d, err := s.hub.events.Difference(ctx, s.userID, st.tok, s.hub.opts.ReplayPage)
		if err != nil {
			return false, err
		}
		if d.TooLong {
			return false, st.deliver(im.Event{Type: im.EventTooLong, Epoch: d.Token.User.Epoch, Position: d.Token.User.Position})
		}
		maps.Copy(st.views, d.Views)
		for _, ev := range d.Events {
			if ev.Type == im.EventLeave {
				delete(st.views, ev.Stream)
			} else if v, ok := st.views[ev.ConversationID]; ok && ev.Stream == "" {
				v.observe(ev, s.userID)
				st.views[ev.ConversationID] = v
			}
			if err := st.deliver(ev); err != nil {
				return false, err
			}
		}
		st.tok = d.Token
		if !d.HasMore {
			return true, nil
		}
	}
}

// sync catches up, then follows the group streams the token names; when that adds
// streams, it catches up again, for what they logged before their channels were heard.
func (st *stream) sync() (bool, error) {
	s, ctx := st.s, st.ctx
	if !st.started {
		// Without a token the stream starts at the heads: the user log's as Subscribe
		// read it (or now, once its channel is confirmed), the group streams' once
		// their channels are. Nothing is logged before them that the stream owes, so
		// there is nothing to catch up: the start is a read of the user's list and
		// one round trip for the heads and the member's counters, all from Redis
		// while it knows the user. Read here, they are retried as a catch-up is while
		// the stores are unavailable.
		groups, version, err := s.hub.events.versionedGroupStreams(ctx, s.userID)
		if err != nil {
			return false, err
		}
		follow := make(map[string]im.Cursor, len(groups))
		for _, g := range groups {
			follow[g] = im.Cursor{}
		}
		if _, err := s.follow(follow); err != nil {
			return false, err
		}
		s.hub.mu.Lock()
		s.listVersion = version
		s.hub.mu.Unlock()
		start, vs, err := s.hub.events.startPoint(ctx, s.userID, groups, s.head == nil)
		if err != nil {
			return false, err
		}
		if s.head != nil {
			start.User = *s.head
		}
		st.tok, st.started = start, true
		maps.Copy(st.views, vs)
		s.count()
		return true, nil
	}
	for {
		ok, err := st.catchUp()
		if !ok {
			return false, err
		}
		added, err := s.follow(st.tok.Groups)
		if err != nil {
			return false, err
		}
		var unseen []string
		for g := range st.tok.Groups {
			if _, ok := st.views[g]; !ok {
				unseen = append(unseen, g)
			}
		}
		if len(unseen) > 0 {
			vs, err := s.hub.events.MemberViews(ctx, s.userID, unseen)
			if err != nil {
				return false, err
			}
			maps.Copy(st.views, vs)
		}
		if !added {
			return true, nil
		}
	}
}

func (st *stream) stop(err error) error {
	if errors.Is(err, ErrSlowConsumer) {
		return err
	}
	if cause := context.Cause(st.ctx); cause != nil {
		return cause
	}
	return err
}

// resume runs sync and reports whether the subscription ends, and with what.
func (st *stream) resume() (bool, error) {
	s, ctx := st.s, st.ctx
	// Wait for a turn here, on this goroutine's shallow stack, before the read starts the
	// goroutine that makes it.
	select {
	case s.hub.catchups <- struct{}{}:
	case <-ctx.Done():
		return true, context.Cause(ctx)
	}
	var ok bool
	var err error
	freshstack.Run(func() { ok, err = st.sync() })
	<-s.hub.catchups
	switch {
	case ok:
		st.backoff = 0
		if !st.live {
			st.live = true
			s.hub.live.Add(1)
		}
		return false, nil
	case err != nil && im.ErrorCode(err) == im.EUNAVAILABLE && ctx.Err() == nil:
		// A store that refused says when to come back; many subscriptions refused at
		// once (a gateway's devices reconnecting) spread their returns over half again.
		st.backoff = min(max(2*st.backoff, catchUpRetryMin), catchUpRetryMax)
		wait := max(st.backoff, im.RetryHint(err))
		st.retry.Reset(wait + rand.N(wait/2+1))
		return false, nil
	default:
		return true, st.stop(err)
	}
}

// arrived handles the live events queued; true when the subscription ends.
func (st *stream) arrived() (bool, error) {
	queued, overflowed := st.s.takeQueued()
	if overflowed {
		// Events were left out of the queue: what it holds is older than them, and the logs
		// have everything.
		return st.resume()
	}
	for _, ev := range queued {
		if end, err := st.receive(ev); end {
			return true, err
		}
	}
	return false, nil
}

// receive handles one live event (nil when events may have been missed, or the user's
// groups changed: the logs know); true when the subscription ends.
func (st *stream) receive(ev *im.Event) (bool, error) {
	if ev == nil {
		return st.resume()
	}
	cur, followed := st.tok.User, true
	if ev.Stream != "" {
		cur, followed = st.tok.Groups[ev.Stream]
	}
	switch {
	case !followed:
		// A stream this subscription stopped following (its user left the group).
	case ev.Epoch == cur.Epoch && ev.Position <= cur.Position:
		// Already sent, from the log.
	case ev.Epoch == cur.Epoch && ev.Position == cur.Position+1 && st.backoff == 0:
		out := *ev // shared with the stream's other subscribers here
		if ev.Stream != "" {
			v := st.views[ev.Stream]
			v.personalize(&out, st.s.userID)
			st.views[ev.Stream] = v
			st.tok.Groups[ev.Stream] = out.Cursor()
		} else {
			if v, ok := st.views[out.ConversationID]; ok {
				v.observe(out, st.s.userID)
				st.views[out.ConversationID] = v
			}
			st.tok.User = out.Cursor()
		}
		if err := st.deliver(out); err != nil {
			return true, st.stop(err)
		}
	default:
		// A gap, or a new log: the log knows.
		return st.resume()
	}
	return false, nil
}

// The wait between attempts to read the log while Redis is unavailable, doubling from min to
// max.
const (
	catchUpRetryMin = 100 * time.Millisecond
	catchUpRetryMax = 2 * time.Second
)
