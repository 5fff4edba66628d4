package graph

import (
	"bytes"
	"fmt"
	"strings"
	"testing"

	"github.com/vektah/gqlparser/v2/ast"

	"github.com/msggate/msggate/internal/im"
)

// Ensure a remembered node is found only under the viewer, selection and exact state it was
// rendered from, and that what cannot be proven current or is too large is never kept.
func TestRenderedNodes(t *testing.T) {
	m := NewRenderedNodes(64)
	shape, other := &ast.Field{Name: "nodes"}, &ast.Field{Name: "nodes"}
	st := im.SeqState{ConversationID: "si_a_b", MaxSeq: 3, ReadSeq: 1, LastTime: 10, ChunksVersion: "7"}
	json := []byte(`{"id":"si_a_b"}`)
	m.Put("a", shape, st, json)
	json[2] = 'X' // the caller's buffer is reused: the memory keeps its own copy
	if got := m.Get("a", shape, st); !bytes.Equal(got, []byte(`{"id":"si_a_b"}`)) {
		t.Fatalf("got %s", got)
	}
	changed := func(f func(*im.SeqState)) im.SeqState { s := st; f(&s); return s }
	for name, miss := range map[string]func() []byte{
		"another viewer":          func() []byte { return m.Get("b", shape, st) },
		"another selection":       func() []byte { return m.Get("a", other, st) },
		"a new message":           func() []byte { return m.Get("a", shape, changed(func(s *im.SeqState) { s.MaxSeq++ })) },
		"a read":                  func() []byte { return m.Get("a", shape, changed(func(s *im.SeqState) { s.ReadSeq++ })) },
		"a clear for the viewer":  func() []byte { return m.Get("a", shape, changed(func(s *im.SeqState) { s.UserMinSeq = 2 })) },
		"a chunk write":           func() []byte { return m.Get("a", shape, changed(func(s *im.SeqState) { s.ChunksVersion = "8" })) },
		"an unknown chunks state": func() []byte { return m.Get("a", shape, changed(func(s *im.SeqState) { s.ChunksVersion = "" })) },
		"no selection":            func() []byte { return m.Get("a", nil, st) },
	} {
		if got := miss(); got != nil {
			t.Errorf("%s: got %s, want nothing", name, got)
		}
	}

	unproven := changed(func(s *im.SeqState) { s.ConversationID, s.ChunksVersion = "si_a_c", "" })
	m.Put("a", shape, unproven, json)
	large := changed(func(s *im.SeqState) { s.ConversationID = "si_a_d" })
	m.Put("a", shape, large, []byte(`"`+strings.Repeat("x", maxRenderedNode)+`"`))
	if m.Get("a", shape, unproven) != nil || m.Get("a", shape, large) != nil {
		t.Error("kept a node it cannot prove current or one larger than maxRenderedNode")
	}
	var none *RenderedNodes // switched off
	none.Put("a", shape, st, json)
	if none.Get("a", shape, st) != nil {
		t.Error("a nil memory answered")
	}
}

// Ensure the nodes of a large page all stay remembered together, a node's newer state takes
// the place of its older one, and a memory never holds more nodes than its slots.
func TestRenderedNodesSlots(t *testing.T) {
	shape := &ast.Field{Name: "nodes"}
	state := func(i int) im.SeqState {
		return im.SeqState{ConversationID: fmt.Sprintf("si_a_%d", i), MaxSeq: 1, ChunksVersion: "1"}
	}
	m := NewRenderedNodes(0)
	for i := range 100 {
		m.Put("a", shape, state(i), []byte(`{}`))
	}
	for i := range 100 {
		if m.Get("a", shape, state(i)) == nil {
			t.Fatalf("node %d of a page of 100 was pushed out by the others", i)
		}
	}

	one := NewRenderedNodes(setSize) // a single set
	older, newer := state(0), state(0)
	newer.MaxSeq = 2
	one.Put("a", shape, older, []byte(`{"old":1}`))
	one.Put("a", shape, newer, []byte(`{"new":1}`))
	for i := 1; i < setSize; i++ {
		one.Put("a", shape, state(i), []byte(`{}`))
	}
	if one.Get("a", shape, older) != nil || one.Get("a", shape, newer) == nil {
		t.Error("the newer state did not take the older one's place")
	}
	for i := 1; i < setSize; i++ {
		if one.Get("a", shape, state(i)) == nil {
			t.Errorf("node %d was pushed out while the set had room", i)
		}
	}
	one.Put("a", shape, state(setSize), []byte(`{}`))
	held := 0
	for i := range setSize + 1 {
		st := state(i)
		if i == 0 {
			st = newer
		}
		if one.Get("a", shape, st) != nil {
			held++
		}
	}
	if held != setSize {
		t.Errorf("a memory of %d slots holds %d nodes", setSize, held)
	}
}
