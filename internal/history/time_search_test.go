package history_test

import (
	"context"
	"math"
	"math/rand/v2"
	"sort"
	"testing"

	"github.com/msggate/msggate/internal/history"
	"github.com/msggate/msggate/internal/im"
)

// timeline is a conversation whose message at seq s was sent at times[s] (0: no message).
type timeline struct {
	chunks *memChunks
	times  map[int64]int64
	st     im.SeqState
	seqs   []int64 // readableSeqs, once asked; nil after a change
}

func newTimeline(maxSeq int64, sendTime func(seq int64) int64) *timeline {
	tl := &timeline{chunks: &memChunks{}, times: map[int64]int64{}, st: im.SeqState{MaxSeq: maxSeq}}
	for s := int64(1); s <= maxSeq; s++ {
		m := msgAt(s)
		m.SendTime = sendTime(s)
		tl.chunks.put(conv, s, im.Slot{Msg: m})
		tl.times[s] = m.SendTime
	}
	return tl
}

// unreadable makes seq read as something bob cannot jump to, in turn: missing, deleted for
// everyone, deleted for bob.
func (tl *timeline) unreadable(seq int64) {
	switch seq % 3 {
	case 0:
		tl.chunks.put(conv, seq, im.Slot{})
	case 1:
		tl.chunks.put(conv, seq, im.Slot{Msg: &im.Message{Seq: seq, SendTime: tl.times[seq], Status: im.DeletedMessageStatus}})
	default:
		m := msgAt(seq)
		m.SendTime = tl.times[seq]
		tl.chunks.put(conv, seq, im.Slot{Msg: m, DelList: []string{"bob"}})
	}
	delete(tl.times, seq)
	tl.seqs = nil
}

// readableSeqs are the seqs bob can jump to, ascending.
func (tl *timeline) readableSeqs() []int64 {
	if tl.seqs != nil {
		return tl.seqs
	}
	var out []int64
	for s := tl.st.VisibleMin(); s <= tl.st.MaxSeq; s++ {
		if _, ok := tl.times[s]; ok {
			out = append(out, s)
		}
	}
	tl.seqs = out
	return out
}

// want is the answer by send times that do not decrease with seq: a search over every
// readable message.
func (tl *timeline) want(at int64, dir history.TimeDirection) (int64, bool) {
	seqs := tl.readableSeqs()
	if dir == history.AtOrAfter {
		i := sort.Search(len(seqs), func(i int) bool { return tl.times[seqs[i]] >= at })
		if i == len(seqs) {
			return 0, false
		}
		return seqs[i], true
	}
	i := sort.Search(len(seqs), func(i int) bool { return tl.times[seqs[i]] > at })
	if i == 0 {
		return 0, false
	}
	return seqs[i-1], true
}

// search asks for at and checks the chunk reads stay within log2(chunks)+1 when every chunk
// holds a readable message.
func (tl *timeline) search(t *testing.T, at int64, dir history.TimeDirection) (int64, bool) {
	t.Helper()
	tl.chunks.calls = nil
	seq, ok, err := reader(tl.chunks, tl.st).SeqAtTime(context.Background(), conv, at, dir)
	if err != nil {
		t.Fatal(err)
	}
	span := im.ChunkIndex(tl.st.MaxSeq) - im.ChunkIndex(tl.st.VisibleMin()) + 1
	if bound := int(math.Floor(math.Log2(float64(span)))) + 1; readCount(tl.chunks) > bound {
		t.Fatalf("time %d: %d chunk reads over %d chunks, want at most %d: %v", at, readCount(tl.chunks), span, bound, tl.chunks.calls)
	}
	seen := map[string]bool{}
	for _, c := range tl.chunks.calls {
		for _, id := range c {
			if seen[id] {
				t.Fatalf("chunk %s read twice: %v", id, tl.chunks.calls)
			}
			seen[id] = true
		}
	}
	return seq, ok
}

// Ensure seqAtTime finds, with send times that grow with seq (with ties), the first readable
// message at or after a time and the last at or before it, for every time around every
// message, within log2(chunks)+1 chunk reads; missing, deleted (for everyone and for the
// viewer) and revoked slots are stepped over or taken as a reader would see them, and the
// viewer's min seq is never crossed.
func TestSeqAtTime(t *testing.T) {
	for _, tc := range []struct {
		name       string
		maxSeq     int64
		minSeq     int64
		unreadable func(seq int64) bool
	}{
		{name: "one chunk", maxSeq: 37},
		{name: "ten chunks", maxSeq: 1000},
		{name: "1000 chunks", maxSeq: 100_000},
		{name: "a partial last chunk", maxSeq: 1234},
		{name: "every third slot unreadable", maxSeq: 1234, unreadable: func(s int64) bool { return s%3 == 0 || s%7 == 1 }},
		{name: "chunks ending and starting unreadable", maxSeq: 1000, unreadable: func(s int64) bool { return s%100 < 10 || s%100 > 90 }},
		{name: "retention", maxSeq: 1234, minSeq: 551},
		{name: "retention mid-chunk with deletions", maxSeq: 1234, minSeq: 555, unreadable: func(s int64) bool { return s%5 == 0 }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			// Two messages per millisecond, from 1000 on: ties, and times between messages.
			tl := newTimeline(tc.maxSeq, func(s int64) int64 { return 1000 + 3*(s/2) })
			tl.st.MinSeq, tl.seqs = tc.minSeq, nil
			for s := int64(1); tc.unreadable != nil && s <= tc.maxSeq; s++ {
				if tc.unreadable(s) {
					tl.unreadable(s)
				}
			}
			tl.chunks.put(conv, 3, im.Slot{Msg: tl.chunks.chunks[im.DocID(conv, 3)].Slot(3).Msg, Revoke: &im.Revoke{UserID: "alice"}})
			step := max(tc.maxSeq/300, 1)
			for s := int64(1); s <= tc.maxSeq+2; s += step {
				for _, at := range []int64{1000 + 3*(s/2) - 1, 1000 + 3*(s/2), 1000 + 3*(s/2) + 1} {
					for _, dir := range []history.TimeDirection{history.AtOrAfter, history.AtOrBefore} {
						got, ok := tl.search(t, at, dir)
						want, wantOK := tl.want(at, dir)
						if got != want || ok != wantOK {
							t.Fatalf("time %d, direction %d: seq %d (%v), want %d (%v)", at, dir, got, ok, want, wantOK)
						}
						if ok && got < tl.st.VisibleMin() {
							t.Fatalf("seq %d below the min seq %d", got, tl.st.VisibleMin())
						}
					}
				}
			}
		})
	}
}

// Ensure a run of chunks with nothing readable (a range deleted for everyone) costs one read
// per chunk at most, and the answer is still exact.
func TestSeqAtTimeOverUnreadableChunks(t *testing.T) {
	tl := newTimeline(1600, func(s int64) int64 { return 1000 + s })
	for s := int64(501); s <= 1100; s++ {
		tl.unreadable(s)
	}
	for _, at := range []int64{1000, 1400, 1600, 1800, 2100, 2101, 2300, 2600, 2601} {
		for _, dir := range []history.TimeDirection{history.AtOrAfter, history.AtOrBefore} {
			tl.chunks.calls = nil
			got, ok, err := reader(tl.chunks, tl.st).SeqAtTime(context.Background(), conv, at, dir)
			if err != nil {
				t.Fatal(err)
			}
			if want, wantOK := tl.want(at, dir); got != want || ok != wantOK {
				t.Fatalf("time %d, direction %d: seq %d (%v), want %d (%v)", at, dir, got, ok, want, wantOK)
			}
			if n := readCount(tl.chunks); n > 16 {
				t.Fatalf("time %d: %d chunk reads for 16 chunks", at, n)
			}
		}
	}
}

// Ensure that with send times that do not grow with seq (senders' clocks disagree), the answer
// is a readable message whose time satisfies the direction and whose readable neighbour on the
// other side does not, and that no answer means there is none on that side of the newest
// (oldest) readable message.
func TestSeqAtTimeWithClockSkew(t *testing.T) {
	rng := rand.New(rand.NewPCG(31, 32))
	tl := newTimeline(2345, func(s int64) int64 { return 100_000 + 10*s + rng.Int64N(4001) - 2000 })
	for s := int64(1); s <= 2345; s++ {
		if rng.IntN(4) == 0 {
			tl.unreadable(s)
		}
	}
	tl.st.UserMinSeq, tl.seqs = 77, nil
	seqs := tl.readableSeqs()
	index := map[int64]int{}
	for i, s := range seqs {
		index[s] = i
	}
	for at := int64(97_000); at <= 127_000; at += 37 {
		for _, dir := range []history.TimeDirection{history.AtOrAfter, history.AtOrBefore} {
			got, ok := tl.search(t, at, dir)
			if !ok {
				edge := seqs[len(seqs)-1]
				if dir == history.AtOrBefore {
					edge = seqs[0]
				}
				if dir == history.AtOrAfter && tl.times[edge] >= at || dir == history.AtOrBefore && tl.times[edge] <= at {
					t.Fatalf("time %d, direction %d: none, but seq %d was sent at %d", at, dir, edge, tl.times[edge])
				}
				continue
			}
			i, readable := index[got]
			if !readable {
				t.Fatalf("time %d: seq %d is not readable", at, got)
			}
			if dir == history.AtOrAfter {
				if tl.times[got] < at || i > 0 && tl.times[seqs[i-1]] >= at {
					t.Fatalf("time %d, at or after: seq %d sent at %d, the one before at %d", at, got, tl.times[got], tl.times[seqs[max(i-1, 0)]])
				}
			} else if tl.times[got] > at || i+1 < len(seqs) && tl.times[seqs[i+1]] <= at {
				t.Fatalf("time %d, at or before: seq %d sent at %d, the one after at %d", at, got, tl.times[got], tl.times[seqs[min(i+1, len(seqs)-1)]])
			}
		}
	}
}

// Ensure a conversation the viewer can read nothing of answers none without reading a chunk.
func TestSeqAtTimeEmptyWindow(t *testing.T) {
	for _, st := range []im.SeqState{{}, {MaxSeq: 120, UserMinSeq: 121}} {
		chunks := &memChunks{}
		chunks.putMessages(conv, 1, 120)
		_, ok, err := reader(chunks, st).SeqAtTime(context.Background(), conv, 0, history.AtOrAfter)
		if ok || err != nil || len(chunks.calls) != 0 {
			t.Fatalf("state %+v: found %v, %v, reads %v", st, ok, err, chunks.calls)
		}
	}
}
