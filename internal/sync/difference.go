package sync

import (
	"context"
	"maps"
	"slices"
	"time"

	"github.com/msggate/msggate/internal/cache"
	"github.com/msggate/msggate/internal/im"
)

// Difference is a page of a user's events after a token: from their own log, and from the
// streams of the groups they are in.
type Difference struct {
	// Token to pass next time: each stream's cursor after its last event returned.
	Token im.SyncToken
	// Events after the token given: the user's own first, then, per group stream, LEAVE, JOIN
	// and its events. Positions are dense within each stream.
	Events []im.Event
	// HasMore: more events follow; ask again with Token.
	HasMore bool
	// TooLong: the token cannot be served (a log it follows was lost or has moved past it).
	// The client must start again from the state summary.
	TooLong bool
	// Views holds the user's own counters in the group conversations whose events or JOIN
	// this page holds, as they were read for it.
	Views map[string]MemberView
}

// Difference returns up to limit of userID's events after since (JOIN events come on top).
// The user's own log is read first, then LEAVEs; the group streams share what is left of limit.
// Which groups the user is in comes from their conversation list: a group the token does not
// follow gets a JOIN event with its counters and the stream's head, and a group it follows
// that the user has left gets a LEAVE event.
func (e *EventLog) Difference(ctx context.Context, userID string, since im.SyncToken, limit int) (Difference, error) {
	page, err := e.cache.ReadEvents(ctx, userID, since.User, limit)
	if err != nil {
		return Difference{}, err
	}
	if page.TooLong {
		return Difference{Token: im.SyncToken{User: page.Head}, TooLong: true}, nil
	}
	d := Difference{Token: im.SyncToken{User: page.Head, Groups: map[string]im.Cursor{}}, Events: page.Events}
	if n := len(page.Events); n > 0 {
		d.Token.User = page.Events[n-1].Cursor()
		d.HasMore = d.Token.User.Position < page.Head.Position
	}
	groups, err := e.groupStreams(ctx, userID)
	if err != nil {
		return Difference{}, err
	}
	now := time.Now().UnixMilli()
	budget := limit - len(page.Events)
	// The token is the client's: it may name thousands of groups the user was never in, each
	// a LEAVE. LEAVEs count against limit like any event; those past it stay in the token, for
	// the next page.
	for _, id := range slices.Sorted(maps.Keys(since.Groups)) {
		if _, member := slices.BinarySearch(groups, id); member {
			continue
		}
		if budget <= 0 {
			d.Token.Groups[id] = since.Groups[id]
			d.HasMore = true
			continue
		}
		d.Events = append(d.Events, im.Event{Type: im.EventLeave, Stream: id, ConversationID: id, Time: now})
		budget--
	}
	var reads []cache.GroupRead
	for _, id := range groups {
		cur, followed := since.Groups[id]
		switch {
		case !followed:
			reads = append(reads, cache.GroupRead{ConversationID: id})
		case budget > 0:
			reads = append(reads, cache.GroupRead{ConversationID: id, Since: &cur, Limit: budget})
		default:
			d.Token.Groups[id] = cur
			d.HasMore = true // the page is full: this stream is read next time
		}
	}
	pages, err := e.cache.ReadGroupEvents(ctx, reads)
	if err != nil {
		return Difference{}, err
	}
	// The user's counters are read after the streams' heads, so a JOIN's counters cover
	// every event before the cursor it gives.
	var viewed []string
	for i, r := range reads {
		if pages[i].TooLong {
			return Difference{Token: im.SyncToken{User: page.Head}, TooLong: true}, nil
		}
		if r.Since == nil || len(pages[i].Events) > 0 {
			viewed = append(viewed, r.ConversationID)
		}
	}
	d.Views, err = e.memberViews(ctx, userID, viewed)
	if err != nil {
		return Difference{}, err
	}
	for i, r := range reads {
		p := pages[i]
		id := r.ConversationID
		if r.Since == nil {
			v := d.Views[id]
			d.Events = append(d.Events, v.joinEvent(id, p.Head, now))
			d.Token.Groups[id] = p.Head
			continue
		}
		d.Token.Groups[id] = *r.Since
		evs := p.Events[:min(len(p.Events), max(budget, 0))]
		if len(evs) < len(p.Events) || (len(evs) > 0 && evs[len(evs)-1].Position < p.Head.Position) {
			d.HasMore = true
		}
		v := d.Views[id]
		for _, ev := range evs {
			v.personalize(&ev, userID)
			d.Events = append(d.Events, ev)
			d.Token.Groups[id] = ev.Cursor()
		}
		d.Views[id] = v
		budget -= len(evs)
	}
	return d, nil
}

// groupStreams returns the group conversations on userID's conversation list: the streams
// their devices follow.
func (e *EventLog) groupStreams(ctx context.Context, userID string) ([]string, error) {
	ids, err := e.state.conversationList(ctx, userID)
	if err != nil {
		return nil, err
	}
	return e.groupsAmong(ids), nil
}

// versionedGroupStreams is groupStreams with the version of the list they were read from
// (listVersioner; "" when the state has no versions).
func (e *EventLog) versionedGroupStreams(ctx context.Context, userID string) ([]string, string, error) {
	v, ok := e.state.(interface {
		versionedList(ctx context.Context, userID string) ([]string, string, error)
	})
	if !ok {
		groups, err := e.groupStreams(ctx, userID)
		return groups, "", err
	}
	ids, version, err := v.versionedList(ctx, userID)
	if err != nil {
		return nil, "", err
	}
	return e.groupsAmong(ids), version, nil
}

// groupsAmong returns the group conversations among ids, sorted.
func (e *EventLog) groupsAmong(ids []string) []string {
	var out []string
	for _, id := range ids {
		if c, err := e.state.ParseConversationID(id); err == nil && c.Kind.IsGroup() {
			out = append(out, id)
		}
	}
	slices.Sort(out)
	return out
}

// Summary is a user's state summary: every conversation with messages, newest activity first,
// and the token the summary is valid from.
type Summary struct {
	Token         im.SyncToken
	Conversations []im.SeqState
}

// Summary reads userID's state summary. The heads of the group streams are read first, and
// the head of the user's log in the same Redis round trip as the seq and read state, before
// it, so replaying the events after the token from the summary loses nothing.
func (e *EventLog) Summary(ctx context.Context, userID string) (Summary, error) {
	ids, err := e.state.conversationList(ctx, userID)
	if err != nil {
		return Summary{}, err
	}
	groups, err := e.groupHeads(ctx, ids)
	if err != nil {
		return Summary{}, err
	}
	states, heads, err := e.state.statesMany(ctx, []cache.StateQuery{{UserID: userID, ConversationIDs: ids}}, true)
	if err != nil {
		return Summary{}, err
	}
	return Summary{Token: im.SyncToken{User: heads[0], Groups: groups}, Conversations: im.ByActivity(states[0])}, nil
}

// Head returns the token of what is new for userID from now on: the heads of their log and of
// the streams of their groups.
func (e *EventLog) Head(ctx context.Context, userID string) (im.SyncToken, error) {
	groups, err := e.GroupHeads(ctx, userID)
	if err != nil {
		return im.SyncToken{}, err
	}
	head, err := e.cache.EventHead(ctx, userID)
	return im.SyncToken{User: head, Groups: groups}, err
}

// GroupHeads returns the heads of the streams of userID's groups.
func (e *EventLog) GroupHeads(ctx context.Context, userID string) (map[string]im.Cursor, error) {
	ids, err := e.groupStreams(ctx, userID)
	if err != nil {
		return nil, err
	}
	return e.groupHeads(ctx, ids)
}

// groupHeads reads the head of the stream of each group conversation among ids, creating the
// streams that do not exist yet.
func (e *EventLog) groupHeads(ctx context.Context, ids []string) (map[string]im.Cursor, error) {
	var reads []cache.GroupRead
	for _, id := range ids {
		if c, err := e.state.ParseConversationID(id); err == nil && c.Kind.IsGroup() {
			reads = append(reads, cache.GroupRead{ConversationID: id})
		}
	}
	pages, err := e.cache.ReadGroupEvents(ctx, reads)
	if err != nil {
		return nil, err
	}
	out := make(map[string]im.Cursor, len(reads))
	for i, r := range reads {
		out[r.ConversationID] = pages[i].Head
	}
	return out, nil
}

// ParseToken parses a sync token this log gave (im.ParseSyncToken), its group entries by the
// ID rules of the store the log serves: msggate's own, or an OpenIM deployment's.
func (e *EventLog) ParseToken(s string) (im.SyncToken, error) {
	return im.ParseSyncToken(s, e.state.ParseConversationID)
}

// startPoint returns where a stream without a token starts: the heads of the streams of
// groups (and of userID's own log when withUserHead), and the member's counters in each of
// those groups, read after the heads so that they cover every event before them. Two Redis
// round trips while Redis knows the user's state, whatever the number of groups.
func (e *EventLog) startPoint(ctx context.Context, userID string, groups []string, withUserHead bool) (im.SyncToken, map[string]MemberView, error) {
	heads, err := e.groupHeads(ctx, groups)
	if err != nil {
		return im.SyncToken{}, nil, err
	}
	states, userHeads, err := e.state.statesMany(ctx, []cache.StateQuery{{UserID: userID, ConversationIDs: groups}}, withUserHead)
	if err != nil {
		return im.SyncToken{}, nil, err
	}
	tok := im.SyncToken{Groups: heads}
	if withUserHead {
		if len(userHeads) == 0 {
			return im.SyncToken{}, nil, im.Errorf(im.EINTERNAL, "no head of %s's log in the state read", userID)
		}
		tok.User = userHeads[0]
	}
	return tok, viewsOf(states[0]), nil
}
