package loadfault

import (
	"context"
	"fmt"
	"net/http"
	"time"

	"github.com/msggate/msggate/internal/chunkstore"
	"github.com/msggate/msggate/internal/im"
	"github.com/msggate/msggate/syncclient"
)

// verifyStore reads every conversation's chunks straight from the store and holds them to
// the sends: each acknowledged one at the seq it was answered with, with its sender and
// content (a tombstone keeps its identity only), no clientMsgID at two seqs, and each
// unanswered one at most once.
func verifyStore(ctx context.Context, store *chunkstore.Store, convs []*conversation, sends *sendLedger, rec *recorder) (SendFigures, error) {
	ids := make([]string, len(convs))
	for i, c := range convs {
		ids[i] = c.id
	}
	seqDocs, err := store.FindConversationSeqs(ctx, ids)
	if err != nil {
		return SendFigures{}, err
	}
	sends.mu.Lock()
	all := append([]*sendRecord(nil), sends.all...)
	sends.mu.Unlock()
	byConv := map[string][]*sendRecord{}
	for _, s := range all {
		byConv[s.conv.id] = append(byConv[s.conv.id], s)
	}

	var f SendFigures
	for _, c := range convs {
		list := byConv[c.id]
		top := seqDocs[c.id].ReservedSeq
		for _, s := range list {
			top = max(top, s.seq)
		}
		// Where each clientMsgID is stored, and what.
		stored := map[string][]*im.Message{}
		if top > 0 {
			last := im.ChunkIndex(top)
			for from := int64(0); from <= last; from += chunkstore.MaxChunkRange {
				chunks, err := store.FindChunkRange(ctx, c.id, from, min(last, from+chunkstore.MaxChunkRange-1))
				if err != nil {
					return f, err
				}
				for _, ch := range chunks {
					if ch == nil {
						continue
					}
					for _, slot := range ch.Slots {
						if slot.Msg != nil {
							stored[slot.Msg.ClientMsgID] = append(stored[slot.Msg.ClientMsgID], slot.Msg)
						}
					}
				}
			}
		}
		for _, s := range list {
			f.Attempted++
			at := stored[s.clientMsgID]
			if len(at) > 1 {
				f.Duplicated++
				rec.violate("%s: %s is stored %d times (seqs %s)", c.id, s.clientMsgID, len(at), seqsOf(at))
			}
			if s.seq == 0 {
				f.Unacknowledged++
				if len(at) > 0 {
					f.StoredUnanswered++
				}
				continue
			}
			f.Acknowledged++
			if s.failures > 0 {
				f.Retried++
			}
			if s.seq > seqDocs[c.id].MaxSeq {
				rec.violate("%s: %s was acknowledged at seq %d above the stored max seq %d", c.id, s.clientMsgID, s.seq, seqDocs[c.id].MaxSeq)
			}
			if len(at) == 0 {
				f.Lost++
				rec.violate("%s: %s, acknowledged at seq %d, is not stored", c.id, s.clientMsgID, s.seq)
				continue
			}
			m := at[0]
			deleted := m.Status == chunkstore.StatusDeleted
			if m.Seq != s.seq || m.SendID != s.sender || (!deleted && m.Content != s.content) {
				f.Lost++
				rec.violate("%s: %s, acknowledged at seq %d, is stored at seq %d by %s with %q", c.id, s.clientMsgID, s.seq, m.Seq, m.SendID, m.Content)
				continue
			}
			f.Stored++
		}
	}
	return f, nil
}

func seqsOf(ms []*im.Message) string {
	out := ""
	for i, m := range ms {
		if i > 0 {
			out += ", "
		}
		out += fmt.Sprint(m.Seq)
	}
	return out
}

// device is one sync client of a user, live against one instance.
type device struct {
	name   string
	user   *user
	url    string
	client *syncclient.Client
	cancel context.CancelFunc
	done   chan error
}

// verifyReplicas waits up to within for every device's replica to equal its user's state read
// fresh from the gateway by a new client (counters, and each message the device holds, which
// must include each conversation's newest), and returns how many did and how the others
// differ.
func verifyReplicas(ctx context.Context, devices []*device, httpClient *http.Client, within time.Duration) (int, []string, error) {
	deadline := time.Now().Add(within)
	fresh := map[string]syncclient.Replica{}
	pending := devices
	var diffs []string
	for attempt := 0; ; attempt++ {
		var still []*device
		diffs = diffs[:0]
		for _, d := range pending {
			want, ok := fresh[d.user.id]
			if !ok {
				c, err := syncclient.New(d.url, d.user.token, syncclient.Options{FullHistory: true, HTTPClient: httpClient})
				if err != nil {
					return 0, nil, err
				}
				if err := syncRefused(ctx, c, deadline); err != nil {
					return 0, nil, fmt.Errorf("reading %s's state: %w", d.user.id, err)
				}
				want = c.Replica()
				fresh[d.user.id] = want
			}
			if diff := syncclient.DiffHeld(d.client.Replica(), want); diff != "" {
				still = append(still, d)
				diffs = append(diffs, d.name+": "+firstLines(diff, 3))
			}
		}
		pending = still
		if len(pending) == 0 || time.Now().After(deadline) {
			return len(devices) - len(pending), diffs, nil
		}
		// Read the server's state again at the next attempt: nothing changes it any more, but
		// a read taken while the last events were still being announced could be behind.
		if attempt%5 == 4 {
			fresh = map[string]syncclient.Replica{}
		}
		if !sleepCtx(ctx, time.Second) {
			return len(devices) - len(pending), diffs, ctx.Err()
		}
	}
}

// syncRefused runs c.Sync, again after the hint while the gateway refuses (an instance still
// shedding the load's backlog), until deadline.
func syncRefused(ctx context.Context, c *syncclient.Client, deadline time.Time) error {
	backoff := syncclient.Backoff{Min: retryMin, Max: retryMax}
	for {
		err := c.Sync(ctx)
		if err == nil || !syncclient.IsRefusal(err) || time.Now().After(deadline) {
			return err
		}
		hint, _ := syncclient.RetryAfter(err)
		if !sleepCtx(ctx, backoff.Next(hint)) {
			return ctx.Err()
		}
	}
}

func firstLines(s string, n int) string {
	lines := 0
	for i, r := range s {
		if r == '\n' {
			lines++
			if lines == n {
				return s[:i] + " ..."
			}
		}
	}
	return s
}
