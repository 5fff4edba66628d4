package retention

import (
	"fmt"
	"slices"
	"testing"

	"github.com/msggate/msggate/internal/chunkstore"
	"github.com/msggate/msggate/internal/im"
)

const (
	conv   = "sg_plan"
	cutoff = 1_000_000
	old    = cutoff - 1 // a message sent just before the cutoff
	recent = cutoff     // a message sent at the cutoff is not old
)

// stored says, per seq range, what send time its messages have.
type stored struct {
	from, to, time int64
}

// chunksOf builds the chunks from..to holding the given messages; chunks without any stay nil
// (absent documents).
func chunksOf(from, to int64, msgs ...stored) window {
	w := window{from: from, chunks: make([]*im.Chunk, to-from+1)}
	for _, m := range msgs {
		for seq := m.from; seq <= m.to; seq++ {
			i := im.ChunkIndex(seq) - from
			if i < 0 || i >= int64(len(w.chunks)) {
				continue
			}
			if w.chunks[i] == nil {
				w.chunks[i] = im.NewChunk(im.DocID(conv, seq))
			}
			w.chunks[i].Slot(seq).Msg = &im.Message{SendID: "a", Seq: seq, SendTime: m.time}
		}
	}
	return w
}

func ids(idx ...int64) []string {
	var out []string
	for _, i := range idx {
		out = append(out, im.ChunkDocID(conv, i))
	}
	return out
}

// Ensure the plan follows the rule in the package comment: the min seq moves past the old
// messages only, the chunk holding a recent message is kept, the chunk at the frontier goes
// only when nothing is stored above the old messages, and unreadable leftovers go first.
func TestPlanConversation(t *testing.T) {
	for _, tc := range []struct {
		name string
		d    chunkstore.ConversationSeqs
		w    window
		want plan
	}{{
		name: "whole conversation old: the max seq's chunk goes, the min seq stops after the max seq",
		d:    chunkstore.ConversationSeqs{MaxSeq: 250},
		w:    chunksOf(0, 2, stored{1, 250, old}),
		want: plan{minSeq: 251, drop: ids(0, 1), boundarySeq: 250, finished: true},
	}, {
		name: "one recent message keeps its chunk and everything after it",
		d:    chunkstore.ConversationSeqs{MaxSeq: 250},
		w:    chunksOf(0, 2, stored{1, 149, old}, stored{150, 150, recent}, stored{151, 250, old}),
		want: plan{minSeq: 150, drop: ids(0), finished: true},
	}, {
		name: "recent message at the first seq of a chunk",
		d:    chunkstore.ConversationSeqs{MaxSeq: 250},
		w:    chunksOf(0, 2, stored{1, 100, old}, stored{101, 250, recent}),
		want: plan{minSeq: 101, drop: ids(0), finished: true},
	}, {
		name: "empty slots before a recent message are not hidden: a send may be writing them",
		d:    chunkstore.ConversationSeqs{MaxSeq: 150},
		w:    chunksOf(0, 1, stored{1, 94, old}, stored{101, 150, recent}),
		want: plan{minSeq: 95, boundarySeq: 94, finished: true},
	}, {
		name: "a message stored above the max seq (a send not yet acknowledged) keeps its chunk",
		d:    chunkstore.ConversationSeqs{MaxSeq: 250},
		w:    chunksOf(0, 2, stored{1, 251, old}),
		want: plan{minSeq: 251, drop: ids(0, 1), finished: true},
	}, {
		name: "nothing old: nothing changes",
		d:    chunkstore.ConversationSeqs{MaxSeq: 50},
		w:    chunksOf(0, 0, stored{1, 50, recent}),
		want: plan{finished: true},
	}, {
		name: "chunks left below the min seq by a stopped run go without moving it",
		d:    chunkstore.ConversationSeqs{MaxSeq: 250, MinSeq: 201},
		w:    chunksOf(0, 2, stored{1, 200, old}, stored{201, 250, recent}),
		want: plan{below: ids(0, 1), finished: true},
	}, {
		name: "a recent message below the min seq (cleared for everyone) keeps its chunk",
		d:    chunkstore.ConversationSeqs{MaxSeq: 150, MinSeq: 101},
		w:    chunksOf(0, 1, stored{1, 49, old}, stored{50, 50, recent}, stored{51, 100, old}, stored{101, 150, recent}),
		want: plan{finished: true},
	}, {
		name: "a conversation cleared for everyone and old: its last chunk goes too",
		d:    chunkstore.ConversationSeqs{MaxSeq: 250, MinSeq: 251},
		w:    chunksOf(0, 2, stored{1, 250, old}),
		want: plan{below: ids(0, 1), boundarySeq: 250, finished: true},
	}, {
		name: "the window ends before the history does: the next run continues",
		d:    chunkstore.ConversationSeqs{MaxSeq: 2000},
		w:    chunksOf(0, 3, stored{1, 2000, old}),
		want: plan{minSeq: 401, drop: ids(0, 1, 2, 3)},
	}, {
		name: "absent chunks between old ones hold nothing to keep",
		d:    chunkstore.ConversationSeqs{MaxSeq: 350, MinSeq: 1},
		w:    chunksOf(0, 3, stored{1, 100, old}, stored{201, 300, old}, stored{301, 350, recent}),
		want: plan{minSeq: 301, drop: ids(0, 2), finished: true},
	}} {
		t.Run(tc.name, func(t *testing.T) {
			got := planConversation(tc.d, tc.w, cutoff)
			if !samePlan(got, tc.want) {
				t.Fatalf("got  %s\nwant %s", show(got), show(tc.want))
			}
		})
	}
}

func samePlan(a, b plan) bool {
	return a.minSeq == b.minSeq && slices.Equal(a.below, b.below) && slices.Equal(a.drop, b.drop) &&
		a.boundarySeq == b.boundarySeq && a.finished == b.finished
}

func show(p plan) string {
	return fmt.Sprintf("minSeq=%d below=%v drop=%v boundarySeq=%d finished=%v", p.minSeq, p.below, p.drop, p.boundarySeq, p.finished)
}

// Ensure the options' zero value means the defaults and the bounds hold.
func TestOptionsDefaults(t *testing.T) {
	o := Options{}.withDefaults()
	if o.Interval != DefaultInterval || o.PageSize != DefaultPageSize || o.ChunksPerConversation != DefaultChunksPerConversation ||
		o.ProgressEvery != DefaultProgressEvery || o.Now == nil || o.Logger == nil {
		t.Fatalf("defaults: %+v", o)
	}
	o = Options{PageSize: 1 << 20, ChunksPerConversation: 1 << 20}.withDefaults()
	if o.PageSize != chunkstore.MaxConversationPage || o.ChunksPerConversation != chunkstore.MaxChunkRange/2 {
		t.Fatalf("bounds: page %d, chunks %d", o.PageSize, o.ChunksPerConversation)
	}
}
