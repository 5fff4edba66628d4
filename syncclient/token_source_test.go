package syncclient_test

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/msggate/msggate/internal/auth"
	"github.com/msggate/msggate/internal/gateway/gatewaytest"
	"github.com/msggate/msggate/syncclient"
)

// Ensure a client whose tokens expire every 2 s, with a TokenSource, follows a real gateway
// across the expiries: the gateway closes each connection with 4401 at its token's exp, the
// client reconnects at once with a fresh token and resumes from its last sync token, every
// message arrives in order with no gap, and no attempt counts as failed.
func TestTokenSourceRenewsExpiredTokens(t *testing.T) {
	g := gatewaytest.Start(t)
	var issued atomic.Int32
	source := func(context.Context) (string, error) {
		issued.Add(1)
		return auth.Issue(g.Secret, "kim", false, 2*time.Second, time.Now())
	}
	var logMu sync.Mutex
	var expiries []string
	c, err := syncclient.New(g.URL, "", syncclient.Options{
		TokenSource: source,
		Logf: func(format string, args ...any) {
			if l := fmt.Sprintf(format, args...); strings.HasPrefix(l, "token expired") {
				logMu.Lock()
				expiries = append(expiries, l)
				logMu.Unlock()
			}
		},
		OnApply: func(a syncclient.Applied) {
			if err := syncclient.CheckInvariants(a); err != nil {
				t.Error(err)
			}
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- c.Run(ctx) }()
	defer func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Run: %v", err)
		}
	}()
	gatewaytest.WaitFor(t, 20*time.Second, "the client subscribes", func() bool { return g.Hub.Subscribers() == 1 })

	// A message every 200 ms for 7 s: three or four expiries.
	const n = 35
	const conv = "si_jack_kim"
	var slowest time.Duration
	for i := 1; i <= n; i++ {
		sent := time.Now()
		g.Send("jack", "kim", "", 1)
		gatewaytest.WaitFor(t, 5*time.Second, fmt.Sprintf("message %d reaches the client", i), func() bool {
			_, ok := c.Replica().Conversations[conv].Messages[int64(i)]
			return ok
		})
		slowest = max(slowest, time.Since(sent))
		time.Sleep(200*time.Millisecond - time.Since(sent))
	}
	r := c.Replica().Conversations[conv]
	if seqs := r.Seqs(); len(seqs) != n || seqs[0] != 1 || seqs[n-1] != n || r.MaxSeq != n {
		t.Errorf("the replica holds seqs %v (maxSeq %d), want 1..%d", seqs, r.MaxSeq, n)
	}
	logMu.Lock()
	t.Logf("%d tokens issued, %d expiries, slowest message %v; %v", issued.Load(), len(expiries), slowest, expiries)
	if len(expiries) < 2 {
		t.Errorf("the client saw %d token expiries in 7 s of 2 s tokens, want at least 2", len(expiries))
	}
	logMu.Unlock()
	if refused, failed := c.Outcomes(); refused != 0 || len(failed) != 0 {
		t.Errorf("outcomes: %d refused, failed %v; want none: an expiry is not a failure", refused, failed)
	}
}
