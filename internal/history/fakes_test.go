package history_test

import (
	"context"
	"errors"
	"strconv"

	"github.com/msggate/msggate/internal/history"
	"github.com/msggate/msggate/internal/im"
)

// The read path's logic is tested over in-memory sources: what is stored and how it is
// fetched are the stores' tests; these are about what the read path makes of it.

// memChunks is a chunk source over a map that records every call.
type memChunks struct {
	chunks map[string]*im.Chunk
	err    error
	calls  [][]string // the doc IDs of each call
}

func (m *memChunks) LoadChunks(_ context.Context, refs []history.ChunkRef) ([]*im.Chunk, error) {
	docIDs := make([]string, len(refs))
	for i, r := range refs {
		docIDs[i] = r.DocID
	}
	m.calls = append(m.calls, docIDs)
	if m.err != nil {
		return nil, m.err
	}
	out := make([]*im.Chunk, len(docIDs))
	for i, id := range docIDs {
		out[i] = m.chunks[id]
	}
	return out, nil
}

func (m *memChunks) Remembered([]history.ChunkRef) ([]*im.Chunk, bool) { return nil, false }

// put stores slot at seq of conv, creating its chunk as a store would.
func (m *memChunks) put(conv string, seq int64, slot im.Slot) {
	if m.chunks == nil {
		m.chunks = map[string]*im.Chunk{}
	}
	id := im.DocID(conv, seq)
	c := m.chunks[id]
	if c == nil {
		c = im.NewChunk(id)
		m.chunks[id] = c
	}
	if slot.DelList == nil {
		slot.DelList = []string{}
	}
	c.Slots[im.SlotIndex(seq)] = slot
}

// putMessages stores a plain message at each seq from..to.
func (m *memChunks) putMessages(conv string, from, to int64) {
	for s := from; s <= to; s++ {
		m.put(conv, s, im.Slot{Msg: msgAt(s)})
	}
}

func msgAt(seq int64) *im.Message {
	return &im.Message{SendID: "alice", RecvID: "bob", ClientMsgID: "c" + itoa(seq), ContentType: 101,
		Content: "text " + itoa(seq), Seq: seq, SendTime: 1_700_000_000_000 + seq}
}

func itoa(n int64) string { return strconv.FormatInt(n, 10) }

// memStates is a state source over a map.
type memStates struct {
	states map[string]im.SeqState
	err    error
}

func (m memStates) LoadState(_ context.Context, conversationID string) (im.SeqState, error) {
	if m.err != nil {
		return im.SeqState{}, m.err
	}
	st, ok := m.states[conversationID]
	if !ok {
		return im.SeqState{}, errors.New("no state for " + conversationID)
	}
	return st, nil
}
