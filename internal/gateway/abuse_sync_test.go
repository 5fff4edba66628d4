package gateway_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/msggate/msggate/internal/gateway"
	"github.com/msggate/msggate/internal/gateway/gatewaytest"
	"github.com/msggate/msggate/internal/im"
	imsync "github.com/msggate/msggate/internal/sync"
)

// abuseCheck is how often the gateways of these tests check live subscriptions' groups.
const abuseCheck = 200 * time.Millisecond

// nextGroupEvent reads c's events until one of conversation conv of type kind, and fails the
// test when none comes before ctx ends.
func nextGroupEvent(t *testing.T, ctx context.Context, c *gatewaytest.WS, kind, conv string) {
	t.Helper()
	for {
		m, err := c.Read(ctx)
		if err != nil {
			t.Fatalf("no %s of %s: %v", kind, conv, err)
		}
		p, _ := m["payload"].(map[string]any)
		data, _ := p["data"].(map[string]any)
		ev, _ := data["syncEvents"].(map[string]any)
		if ev["type"] == kind && ev["conversationID"] == conv {
			return
		}
	}
}

// A member removed from a group keeps their WebSocket subscription open, and the hint that
// should have made it re-read its groups is lost (the writer of the removal died before
// giving it): the subscription still gets LEAVE within a few membership checks, and none of
// the group's later messages, which its remaining member does get.
func TestAbuseRemovedMemberKeepsGroupStream(t *testing.T) {
	g := gatewaytest.StartWith(t, func(c *gateway.Config) {
		c.MembershipCheck = abuseCheck
		c.Handler.RateLimit = -1
	})
	ctx := context.Background()
	crew := []im.GroupMember{{UserID: "ann", Role: im.RoleOwner}, {UserID: "ben", Role: im.RoleMember}}
	if err := g.Ledger.SetGroup(ctx, "crew", crew); err != nil {
		t.Fatal(err)
	}
	ann, ben := dialFromNow(t, g, "ann"), dialFromNow(t, g, "ben")
	gatewaytest.WaitFor(t, 20*time.Second, "both members follow the group", func() bool { return g.Hub.GroupSubscribers("sg_crew") == 2 })
	g.Send("ann", "", "crew", 1)
	for _, c := range []*gatewaytest.WS{ann, ben} {
		readCtx, cancel := context.WithTimeout(ctx, 10*time.Second)
		nextGroupEvent(t, readCtx, c, "NEW_MESSAGE", "sg_crew")
		cancel()
	}

	dying := imsync.NewLedger(g.Store, g.Cache, imsync.Options{Fault: func(step string) error {
		if step == "resync" {
			return imsync.ErrWriterStopped
		}
		return nil
	}})
	if err := dying.SetGroup(ctx, "crew", crew[:1]); !errors.Is(err, imsync.ErrWriterStopped) {
		t.Fatalf("removing ben: %v, want the writer stopped before the hint", err)
	}
	leaveCtx, cancel := context.WithTimeout(ctx, 10*abuseCheck)
	nextGroupEvent(t, leaveCtx, ben, "LEAVE", "sg_crew")
	cancel()

	g.Send("ann", "", "crew", 1)
	annCtx, cancel := context.WithTimeout(ctx, 10*time.Second)
	nextGroupEvent(t, annCtx, ann, "NEW_MESSAGE", "sg_crew")
	cancel()
	quiet, cancel := context.WithTimeout(ctx, time.Second)
	defer cancel()
	for {
		m, err := ben.Read(quiet)
		if err != nil {
			break // nothing more within the second
		}
		if strings.Contains(fmt.Sprint(m), "sg_crew") {
			t.Fatalf("ben, removed, still got %v", m)
		}
	}
	if n := g.Hub.GroupSubscribers("sg_crew"); n != 1 {
		t.Errorf("%d subscriptions follow sg_crew, want ann's alone", n)
	}
}

// A client forges a sync token that names 10,000 group streams (the most a token may), one of
// them a group with messages it is not in: each page answers at most limit events, all LEAVEs
// and none of the group's messages, and paging ends at the client's own head.
func TestAbuseForgedSyncTokenLeaves(t *testing.T) {
	g := gatewaytest.StartWith(t, func(c *gateway.Config) { c.Handler.RateLimit = -1 })
	ctx := context.Background()
	if err := g.Ledger.SetGroup(ctx, "secret", []im.GroupMember{{UserID: "x", Role: im.RoleOwner}}); err != nil {
		t.Fatal(err)
	}
	g.Send("x", "", "secret", 3)
	g.Send("x", "mallory", "", 1)
	head := syncToken(g, "mallory")
	var b strings.Builder
	b.WriteString(head)
	b.WriteString(",sg_secret=0.0")
	forged := 1
	for ; forged+strings.Count(head, ",") < im.MaxSyncTokenGroups; forged++ {
		fmt.Fprintf(&b, ",sg_f%05d=1.0", forged)
	}
	mallory := g.Token("mallory")

	first := difference(g, mallory, b.String(), 100)
	if n := len(first.SyncDifference.Events); n > 100 || !first.SyncDifference.HasMore {
		t.Fatalf("a page of limit 100 from a forged token: %d events, hasMore %v; want at most 100, and more",
			n, first.SyncDifference.HasMore)
	}
	left := map[string]int{}
	since := b.String()
	for pages := 0; ; pages++ {
		if pages > forged/1000+2 {
			t.Fatalf("paging a forged token of %d streams did not end in %d pages", forged, pages)
		}
		d := difference(g, mallory, since, 1000).SyncDifference
		if len(d.Events) > 1000 {
			t.Fatalf("a page of limit 1000 holds %d events", len(d.Events))
		}
		for _, ev := range d.Events {
			if ev.ConversationID != nil && strings.HasPrefix(*ev.ConversationID, "sg_") {
				if ev.Type != "LEAVE" {
					t.Fatalf("from the forged token: %s of %s, want LEAVE only", ev.Type, *ev.ConversationID)
				}
				left[*ev.ConversationID]++
			}
		}
		since = d.Token
		if !d.HasMore {
			break
		}
	}
	if len(left) != forged {
		t.Errorf("LEAVEs of %d streams, want %d", len(left), forged)
	}
	for id, n := range left {
		if n != 1 {
			t.Errorf("%s: %d LEAVEs, want 1", id, n)
		}
	}
	if strings.Contains(since, "sg_") {
		t.Errorf("the last token still follows group streams: %.200s", since)
	}
}
