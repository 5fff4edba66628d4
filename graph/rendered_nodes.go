package graph

import (
	"bytes"
	"hash/maphash"
	"math/rand/v2"
	"sync/atomic"
	"unsafe"

	"github.com/99designs/gqlgen/graphql"
	"github.com/vektah/gqlparser/v2/ast"

	"github.com/msggate/msggate/internal/im"
)

// RenderedNodes remembers the JSON of conversation list nodes, so that a list read again
// writes the conversations that did not change since from memory instead of reading their last
// messages and rendering them again. After one new message, a page of 20 renders one node.
//
// A node's JSON is a function of the viewer, the query's selection of it and the viewer's seq
// state in the conversation: the seqs and read state are in the state, and the last message is
// the chunk the state's ChunksVersion names, which every write to the conversation's chunks
// changes (the same promise the chunk memory relies on). So a node is remembered under the
// viewer and the selection, and written from memory only while the state read in this request
// equals the one it was rendered from. A state without a ChunksVersion (read from MongoDB,
// or OpenIM's) proves nothing and is never remembered.
//
// The memory is a fixed table of slots in sets of four, each node's set chosen by a hash of
// its viewer, conversation and selection; a new node takes its own earlier entry, an empty
// slot or, in a full set, a slot at random. So it never holds more than its slots and their
// nodes of at most maxRenderedNode bytes, and a page's nodes do not push each other out.
type RenderedNodes struct {
	slots []atomic.Pointer[renderedNode]
	seed  maphash.Seed
}

// DefaultRenderedNodes is the slots of the gateway's RenderedNodes: at most about 16,384 x
// (maxRenderedNode + about 150 bytes) = 36 MB, and about 8 MB with typical nodes of 350 bytes.
const DefaultRenderedNodes = 1 << 14

// maxRenderedNode bounds the JSON of a remembered node: a larger one (a long last message) is
// rendered every time.
const maxRenderedNode = 2 << 10

type renderedNode struct {
	viewer string
	// shape is the query's nodes field: the same query document (gqlgen keeps one per query
	// text) renders it the same way while no argument or directive below it depends on
	// variables (shapeOf). Holding it keeps the document alive as long as the node.
	shape *ast.Field
	state im.SeqState
	json  []byte
}

// NewRenderedNodes returns a memory of about n slots (DefaultRenderedNodes when n is 0).
func NewRenderedNodes(n int) *RenderedNodes {
	if n <= 0 {
		n = DefaultRenderedNodes
	}
	sets := max(1, (n+setSize-1)/setSize)
	return &RenderedNodes{slots: make([]atomic.Pointer[renderedNode], sets*setSize), seed: maphash.MakeSeed()}
}

// setSize is the slots a node may take.
const setSize = 4

// set returns the slots the node of viewer, shape and conversationID may take.
func (m *RenderedNodes) set(viewer string, shape *ast.Field, conversationID string) []atomic.Pointer[renderedNode] {
	var h maphash.Hash
	h.SetSeed(m.seed)
	h.WriteString(viewer)
	h.WriteByte(0)
	h.WriteString(conversationID)
	p := uintptr(unsafe.Pointer(shape))
	for range unsafe.Sizeof(p) {
		h.WriteByte(byte(p))
		p >>= 8
	}
	at := int(h.Sum64()%uint64(len(m.slots)/setSize)) * setSize
	return m.slots[at : at+setSize]
}

// Get returns the JSON of the node viewer saw rendered with shape in state st, or nil.
func (m *RenderedNodes) Get(viewer string, shape *ast.Field, st im.SeqState) []byte {
	if m == nil || shape == nil || st.ChunksVersion == "" {
		return nil
	}
	for i, set := 0, m.set(viewer, shape, st.ConversationID); i < len(set); i++ {
		if n := set[i].Load(); n != nil && n.shape == shape && n.state == st && n.viewer == viewer {
			return n.json
		}
	}
	return nil
}

// Put remembers json, the node rendered for viewer with shape in state st. It keeps a copy.
func (m *RenderedNodes) Put(viewer string, shape *ast.Field, st im.SeqState, json []byte) {
	if m == nil || shape == nil || st.ChunksVersion == "" || len(json) > maxRenderedNode {
		return
	}
	node := &renderedNode{viewer: viewer, shape: shape, state: st, json: bytes.Clone(json)}
	set := m.set(viewer, shape, st.ConversationID)
	free := -1
	for i := range set {
		n := set[i].Load()
		if n != nil && n.shape == shape && n.state.ConversationID == st.ConversationID && n.viewer == viewer {
			set[i].Store(node) // the same node in an older state
			return
		}
		if n == nil && free < 0 {
			free = i
		}
	}
	if free < 0 {
		free = rand.IntN(setSize)
	}
	set[free].Store(node)
}

// shapeOf returns the nodes field as the key of its nodes' rendering, or nil when the
// rendering may change with something the key does not hold: an argument or directive below it
// (their values may be variables) or a field outside rememberedFields (generated from graph/gqlgen's table remembered). nodes is the field as
// gqlgen collected it, with the selections of every place it is asked merged.
func shapeOf(nodes graphql.CollectedField) *ast.Field {
	if nodes.Field == nil || !rememberable(nodes.Selections, 0) {
		return nil
	}
	return nodes.Field
}

// rememberable walks a selection set, fragments included (depth bounds a walk through
// fragments that validation has not seen, which cannot happen for an executed operation).
func rememberable(sel ast.SelectionSet, depth int) bool {
	if depth > 32 {
		return false
	}
	for _, s := range sel {
		switch s := s.(type) {
		case *ast.Field:
			if s.ObjectDefinition == nil || !rememberedFields[s.ObjectDefinition.Name][s.Name] ||
				len(s.Arguments) > 0 || len(s.Directives) > 0 || !rememberable(s.SelectionSet, depth+1) {
				return false
			}
		case *ast.InlineFragment:
			if len(s.Directives) > 0 || !rememberable(s.SelectionSet, depth+1) {
				return false
			}
		case *ast.FragmentSpread:
			if len(s.Directives) > 0 || s.Definition == nil || len(s.Definition.Directives) > 0 ||
				!rememberable(s.Definition.SelectionSet, depth+1) {
				return false
			}
		default:
			return false
		}
	}
	return true
}
