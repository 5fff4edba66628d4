package syncclient

import (
	"fmt"
	"maps"
	"slices"
	"strings"
)

// Diff describes, one line per difference, how the replica got differs from want (the
// server's state read fresh, say): total unread, conversations on one side only, counters,
// and each seq whose message differs. It is "" when they hold the same state; tokens and
// positions are not compared, since two clients may be equally current at different tokens.
func Diff(got, want Replica) string { return diff(got, want, false) }

// DiffHeld is Diff for a replica kept without Options.FullHistory, which holds only some of a
// conversation's messages: each message got holds must equal want's, and it must hold the
// conversation's newest; want is read with FullHistory. Counters must be equal as in Diff.
func DiffHeld(got, want Replica) string { return diff(got, want, true) }

func diff(got, want Replica, heldOnly bool) string {
	var d []string
	if got.TotalUnread != want.TotalUnread {
		d = append(d, fmt.Sprintf("totalUnread %d, server %d", got.TotalUnread, want.TotalUnread))
	}
	ids := slices.Sorted(maps.Keys(got.Conversations))
	for id := range want.Conversations {
		if _, ok := got.Conversations[id]; !ok {
			ids = append(ids, id)
		}
	}
	slices.Sort(ids)
	for _, id := range ids {
		g, okG := got.Conversations[id]
		w, okW := want.Conversations[id]
		switch {
		case !okG:
			d = append(d, fmt.Sprintf("%s: missing from the replica (server %+v)", id, w.Counters))
			continue
		case !okW:
			d = append(d, fmt.Sprintf("%s: not on the server (replica %+v)", id, g.Counters))
			continue
		}
		if g.Counters != w.Counters {
			d = append(d, fmt.Sprintf("%s: counters %+v, server %+v", id, g.Counters, w.Counters))
		}
		seqs := slices.Collect(maps.Keys(g.Messages))
		for s := range w.Messages {
			if _, ok := g.Messages[s]; !ok && (!heldOnly || s == w.MaxSeq) {
				seqs = append(seqs, s)
			}
		}
		slices.Sort(seqs)
		for _, s := range seqs {
			if gm, wm := g.Messages[s], w.Messages[s]; gm != wm {
				d = append(d, fmt.Sprintf("%s seq %d: replica %+v, server %+v", id, s, gm, wm))
			}
		}
	}
	return strings.Join(d, "\n")
}
