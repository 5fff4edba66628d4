package history

import (
	"testing"

	"github.com/msggate/msggate/internal/im"
)

// Ensure the memory serves a copy only under the version it was read with, evicts the least
// recently used past its bound, and Remembered answers all or nothing.
func TestChunkMemory(t *testing.T) {
	one := im.NewChunk("si_a_b:0")
	size := chunkBytes(one)
	m := NewChunkMemory(2*size + size/2) // room for two
	m.Put("7", one)
	if m.Get("si_a_b:0", "7") != one || m.Get("si_a_b:0", "8") != nil || peek(m, "si_a_b:0", "8") != nil {
		t.Fatal("a copy must be served under its own version only")
	}
	two, three := im.NewChunk("si_a_b:1"), im.NewChunk("si_a_b:2")
	m.Put("7", two)
	m.Get("si_a_b:0", "7") // :0 is now more recent than :1
	m.Put("7", three)
	if peek(m, "si_a_b:1", "7") != nil || peek(m, "si_a_b:0", "7") == nil || peek(m, "si_a_b:2", "7") == nil {
		t.Fatal("the least recently used copy should have gone")
	}
	s := m.Stats()
	if s.Chunks != 2 || s.Evictions != 1 || s.Bytes > 2*size+size/2 || s.Hits != 2 || s.Misses != 1 {
		t.Fatalf("stats %+v", s)
	}
	m.Put("9", one) // a newer read replaces the older copy of the same document
	if peek(m, "si_a_b:0", "7") != nil || peek(m, "si_a_b:0", "9") != one || m.Stats().Chunks != 2 {
		t.Fatalf("replacing a copy: %+v", m.Stats())
	}

	c := &Chunks{Memory: m}
	if got, all := c.Remembered([]ChunkRef{{"si_a_b:0", "9"}, {"si_a_b:2", "7"}}); !all || got[0] != one || got[1] != three {
		t.Fatalf("Remembered of two held copies: %v %v", got, all)
	}
	for _, refs := range [][]ChunkRef{{{"si_a_b:0", "9"}, {"si_a_b:1", "7"}}, {{"si_a_b:0", ""}}, {{"si_a_b:2", "8"}}} {
		if _, all := c.Remembered(refs); all {
			t.Errorf("Remembered(%v) claims every copy", refs)
		}
	}
	if _, all := (&Chunks{}).Remembered([]ChunkRef{{"si_a_b:0", "9"}}); all {
		t.Error("a source without memory remembers nothing")
	}
}

// peek returns the copy of docID held under version, or nil, without counting the lookup or
// changing the recency.
func peek(m *ChunkMemory, docID, version string) *im.Chunk {
	m.mu.Lock()
	defer m.mu.Unlock()
	if el, ok := m.entries[docID]; ok && el.Value.(*memoryEntry).version == version {
		return el.Value.(*memoryEntry).chunk
	}
	return nil
}
