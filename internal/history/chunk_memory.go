package history

import (
	"container/list"
	"sync"

	"github.com/msggate/msggate/internal/im"
)

// DefaultChunkMemoryBytes is the default bound of a ChunkMemory: about 2,000 full chunks of
// typical chat messages.
const DefaultChunkMemoryBytes = 64 << 20

// ChunkMemory keeps decoded chunks in the process, each under the chunks version of its
// conversation it was read under (im.SeqState.ChunksVersion), and evicts the least recently
// used past a bound in bytes. A copy is served only to a reader that names the same version,
// which the reader read from Redis before asking: so a copy is used only while no write to the
// conversation's chunks has been acknowledged since it was read, on any instance.
//
// The chunks it hands out are shared by every request: nothing may change them. It is safe
// for concurrent use.
type ChunkMemory struct {
	limit int64

	mu      sync.Mutex
	used    int64
	entries map[string]*list.Element // by doc ID
	recency list.List                // of *memoryEntry, most recent first
	stats   ChunkMemoryStats
}

type memoryEntry struct {
	docID, version string
	chunk          *im.Chunk
	size           int64
}

// ChunkMemoryStats is what a ChunkMemory did and holds.
type ChunkMemoryStats struct {
	// Hits and Misses count lookups that named a version: served from memory, or not (absent,
	// or held under another version).
	Hits, Misses int64
	// Evictions counts copies dropped to stay within the bound.
	Evictions int64
	// Bytes is the estimated size of the copies held; Chunks their number.
	Bytes  int64
	Chunks int
}

// NewChunkMemory returns a ChunkMemory bounded to about limitBytes (DefaultChunkMemoryBytes
// when 0 or less).
func NewChunkMemory(limitBytes int64) *ChunkMemory {
	if limitBytes <= 0 {
		limitBytes = DefaultChunkMemoryBytes
	}
	return &ChunkMemory{limit: limitBytes, entries: map[string]*list.Element{}}
}

// Get returns the copy of docID read under version, or nil.
func (m *ChunkMemory) Get(docID, version string) *im.Chunk {
	m.mu.Lock()
	defer m.mu.Unlock()
	el, ok := m.entries[docID]
	if !ok || el.Value.(*memoryEntry).version != version {
		m.stats.Misses++
		return nil
	}
	m.stats.Hits++
	m.recency.MoveToFront(el)
	return el.Value.(*memoryEntry).chunk
}

// GetAll returns the copies of every ref's document read under the ref's version, when it
// holds them all (counting the hits and refreshing their recency); else nil, false, counting
// nothing: the caller reads them all elsewhere. One lock for the whole set: a page's twenty
// lookups were forty lock round trips.
func (m *ChunkMemory) GetAll(refs []ChunkRef) ([]*im.Chunk, bool) {
	out := make([]*im.Chunk, len(refs))
	m.mu.Lock()
	defer m.mu.Unlock()
	for i, ref := range refs {
		el, ok := m.entries[ref.DocID]
		if !ok || ref.Version == "" || el.Value.(*memoryEntry).version != ref.Version {
			return nil, false
		}
		out[i] = el.Value.(*memoryEntry).chunk
	}
	for _, ref := range refs {
		m.recency.MoveToFront(m.entries[ref.DocID])
	}
	m.stats.Hits += int64(len(refs))
	return out, true
}

// Put keeps c, read after the reader saw version, in place of any older copy of its document.
func (m *ChunkMemory) Put(version string, c *im.Chunk) {
	size := chunkBytes(c)
	if size > m.limit {
		return
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if el, ok := m.entries[c.DocID]; ok {
		m.remove(el)
	}
	m.entries[c.DocID] = m.recency.PushFront(&memoryEntry{docID: c.DocID, version: version, chunk: c, size: size})
	m.used += size
	for m.used > m.limit {
		m.remove(m.recency.Back())
		m.stats.Evictions++
	}
}

func (m *ChunkMemory) remove(el *list.Element) {
	e := el.Value.(*memoryEntry)
	m.recency.Remove(el)
	delete(m.entries, e.docID)
	m.used -= e.size
}

// Stats returns the counts so far and what is held now.
func (m *ChunkMemory) Stats() ChunkMemoryStats {
	m.mu.Lock()
	defer m.mu.Unlock()
	s := m.stats
	s.Bytes, s.Chunks = m.used, len(m.entries)
	return s
}

// chunkBytes estimates the heap a decoded chunk holds: its structs and the bytes of its
// strings. An estimate, so that the bound costs no reflection; it errs on the large side.
func chunkBytes(c *im.Chunk) int64 {
	const (
		chunkOverhead   = 128 // the Chunk, the entry, the map slot and the list element
		slotSize        = 64
		messageSize     = 320
		stringHeader    = 16
		revokeSize      = 64
		perStringOfList = stringHeader
	)
	n := int64(chunkOverhead + len(c.DocID) + len(c.Slots)*slotSize)
	for i := range c.Slots {
		s := &c.Slots[i]
		for _, u := range s.DelList {
			n += perStringOfList + int64(len(u))
		}
		if s.Revoke != nil {
			n += revokeSize + int64(len(s.Revoke.UserID)+len(s.Revoke.Nickname))
		}
		m := s.Msg
		if m == nil {
			continue
		}
		n += messageSize + int64(len(m.SendID)+len(m.RecvID)+len(m.GroupID)+len(m.ClientMsgID)+len(m.ServerMsgID)+
			len(m.SenderNickname)+len(m.SenderFaceURL)+len(m.Content)+len(m.AttachedInfo)+len(m.Ex))
		for _, u := range m.AtUserIDList {
			n += perStringOfList + int64(len(u))
		}
		n += int64(len(m.Options)) * 48
		if p := m.OfflinePush; p != nil {
			n += 5*stringHeader + int64(len(p.Title)+len(p.Desc)+len(p.Ex)+len(p.IOSPushSound))
		}
	}
	return n
}
