package history

import (
	"context"
	"slices"
	"testing"

	"github.com/msggate/msggate/internal/im"
)

// findFunc lets a function be a ChunkFinder.
type findFunc func(ctx context.Context, docIDs []string) ([]*im.Chunk, error)

func (f findFunc) FindChunks(ctx context.Context, docIDs []string) ([]*im.Chunk, error) {
	return f(ctx, docIDs)
}

// Ensure Chunks serves from memory what it holds under the version a ref names, reads the rest
// from its store in one call and keeps what it read under its ref's version, and without a
// memory, or for a ref without a version, reads through.
func TestChunksMemoryInFront(t *testing.T) {
	ctx := context.Background()
	var calls [][]string
	store := findFunc(func(_ context.Context, docIDs []string) ([]*im.Chunk, error) {
		calls = append(calls, slices.Clone(docIDs))
		out := make([]*im.Chunk, len(docIDs))
		for i, id := range docIDs {
			if id != "si_a_b:9" { // no such chunk
				out[i] = im.NewChunk(id)
			}
		}
		return out, nil
	})
	held := im.NewChunk("si_a_b:0")
	m := NewChunkMemory(0)
	m.Put("7", held)
	c := &Chunks{Store: store, Memory: m}

	got, err := c.LoadChunks(ctx, []ChunkRef{{"si_a_b:0", "7"}, {"si_a_b:1", "7"}, {"si_a_b:9", "7"}, {"si_a_b:2", ""}})
	if err != nil {
		t.Fatal(err)
	}
	if got[0] != held || got[1] == nil || got[1].DocID != "si_a_b:1" || got[2] != nil || got[3] == nil || got[3].DocID != "si_a_b:2" {
		t.Fatalf("answer %v", got)
	}
	if len(calls) != 1 || !slices.Equal(calls[0], []string{"si_a_b:1", "si_a_b:9", "si_a_b:2"}) {
		t.Fatalf("store calls %v, want the three misses in one", calls)
	}
	if peek(m, "si_a_b:1", "7") != got[1] || peek(m, "si_a_b:2", "") != nil || m.Stats().Chunks != 2 {
		t.Fatalf("kept %+v: want what was read under a version, and only that", m.Stats())
	}
	if _, all := c.Remembered([]ChunkRef{{"si_a_b:0", "7"}, {"si_a_b:1", "7"}}); !all {
		t.Error("what was read under a version is not remembered")
	}

	calls = nil
	plain := &Chunks{Store: store}
	if got, err := plain.LoadChunks(ctx, []ChunkRef{{"si_a_b:0", "7"}}); err != nil || got[0] == held || got[0] == nil {
		t.Fatalf("without memory: %v %v", got, err)
	}
	if len(calls) != 1 {
		t.Fatalf("without memory, store calls %v", calls)
	}
	if _, all := plain.Remembered([]ChunkRef{{"si_a_b:0", "7"}}); all {
		t.Error("a source without memory remembers nothing")
	}
}
