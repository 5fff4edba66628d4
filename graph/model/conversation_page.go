package model

import (
	"context"
	"io"
	"strconv"

	"github.com/99designs/gqlgen/graphql"
	"github.com/vektah/gqlparser/v2/ast"
	"github.com/vektah/gqlparser/v2/gqlerror"
)

// ConversationConnection writes its own JSON, as History does, for the same reason: gqlgen's
// generic path resolved each conversation of a page on a goroutine of its own, and each of its
// fields that has a resolver on another (a page of 20 with unreadCount and lastMessage: 60
// goroutines, each growing its stack through the read path), which cost several times what
// the page's data does. The resolver fills every node with what the query selected
// (graph's conversationPage); this writes it.

// ConversationConnection is one page of the viewer's conversation list. Nodes and PageInfo
// are the schema's fields, which gqlgen binds; Resolved holds, aligned with Nodes, what the
// query selected of each node, and is what the writer writes.
type ConversationConnection struct {
	Nodes    []*Conversation
	PageInfo *PageInfo
	Resolved []ConversationNode
	// RenderedFor is the nodes field whose rendering Resolved's Rendered nodes are, and
	// Remember, when set, is given each node of that field rendered here, by its index, with
	// no error (the resolver keeps them: graph's RenderedNodes). Nil: none.
	RenderedFor *ast.Field
	Remember    func(i int, json []byte)
}

// ConversationNode is one conversation of a page, with the fields the query selected resolved.
type ConversationNode struct {
	ID                                   string
	Kind                                 ConversationKind
	MaxSeq, MinSeq, ReadSeq, UnreadCount int64
	UnreadMentionCount                   int64
	// LastMessage is nil when the viewer may read no seq; LastMessageErr, when set, is what
	// reading it failed with: that field alone answers null and the error, as lastMessage is
	// nullable.
	LastMessage    *Message
	LastMessageErr error
	// Histories are the node's history pages, one for each history field the query selected
	// (aliases may ask several), by that field.
	Histories map[*ast.Field]*History
	// SeqsAtTime are the node's answers to each seqAtTime field the query selected, by that
	// field: nil for null.
	SeqsAtTime map[*ast.Field]*int64
	// MentionLists are the node's unreadMentions answers, by field.
	MentionLists map[*ast.Field][]*Message
	// Rendered, when set, is the node's JSON for the connection's RenderedFor field, from an
	// earlier request; the other fields are then unset.
	Rendered []byte
}

var (
	connectionTypes   = []string{"ConversationConnection"}
	conversationTypes = []string{"Conversation"}
)

// MarshalGQLContext writes the fields of c the query selected.
func (c *ConversationConnection) MarshalGQLContext(ctx context.Context, w io.Writer) error {
	oc, sel, err := selectionOf(ctx)
	if err != nil {
		return err
	}
	path := graphql.GetFieldContext(ctx).Path()
	return writeBuffered(w, func(b []byte) ([]byte, error) {
		return appendObject(b, graphql.CollectFields(oc, sel, connectionTypes), func(b []byte, f graphql.CollectedField) ([]byte, error) {
			switch f.Name {
			case "__typename":
				return appendString(b, "ConversationConnection"), nil
			case "pageInfo":
				return appendPageInfo(b, oc, graphql.CollectFields(oc, f.Selections, pageInfoTypes), c.PageInfo)
			case "nodes":
				return c.appendNodes(ctx, b, oc, f, append(path, ast.PathName(f.Alias)))
			}
			return nil, unknownField("ConversationConnection", f.Name)
		})
	})
}

// UnmarshalGQLContext refuses: ConversationConnection is an output type.
func (c *ConversationConnection) UnmarshalGQLContext(context.Context, any) error {
	return errOutputOnly
}

// appendNodes appends the nodes field f (at path) of c.
func (c *ConversationConnection) appendNodes(ctx context.Context, b []byte, oc *graphql.OperationContext, f graphql.CollectedField, path ast.Path) ([]byte, error) {
	remembered := c.RenderedFor != nil && f.Field == c.RenderedFor
	// What the nodes select, and inside their object fields (by alias, unique in a selection
	// set once collected), is the same for every node: collected once, at the first node to
	// render (a page written wholly from memory collects nothing).
	var fields []graphql.CollectedField
	var innerOf map[string][]graphql.CollectedField
	b = append(b, '[')
	for j := range c.Resolved {
		if j > 0 {
			b = append(b, ',')
		}
		n := &c.Resolved[j]
		if remembered && n.Rendered != nil {
			b = append(b, n.Rendered...)
			continue
		}
		if n.Rendered != nil {
			return nil, unknownField("Conversation", "nodes (rendered for another selection)")
		}
		if fields == nil {
			fields, innerOf = nodeSelections(oc, f)
		}
		start := len(b)
		var err error
		b, err = appendObject(b, fields, func(b []byte, nf graphql.CollectedField) ([]byte, error) {
			switch nf.Name {
			case "lastMessage":
				if n.LastMessageErr != nil {
					at := append(append(ast.Path{}, path...), ast.PathIndex(j), ast.PathName(nf.Alias))
					graphql.AddError(ctx, &gqlerror.Error{Err: n.LastMessageErr, Message: n.LastMessageErr.Error(), Path: at})
					return append(b, "null"...), nil
				}
				if n.LastMessage == nil {
					return append(b, "null"...), nil
				}
				return appendMessage(b, oc, innerOf[nf.Alias], n.LastMessage)
			case "history":
				h := n.Histories[nf.Field]
				if h == nil {
					return nil, unknownField("Conversation", "history (not resolved)")
				}
				return appendHistory(b, oc, innerOf[nf.Alias], h)
			case "unreadMentions":
				msgs, ok := n.MentionLists[nf.Field]
				if !ok {
					return nil, unknownField("Conversation", "unreadMentions (not resolved)")
				}
				return appendMessages(b, oc, innerOf[nf.Alias], msgs)
			case "seqAtTime":
				seq, ok := n.SeqsAtTime[nf.Field]
				if !ok {
					return nil, unknownField("Conversation", "seqAtTime (not resolved)")
				}
				if seq == nil {
					return append(b, "null"...), nil
				}
				b = strconv.AppendInt(b, *seq, 10)
			default:
				var ok bool
				if b, ok = appendConversationField(b, nf.Name, n); !ok {
					return nil, unknownField("Conversation", nf.Name)
				}
			}
			return b, nil
		})
		if err != nil {
			return nil, err
		}
		if remembered && c.Remember != nil && n.LastMessageErr == nil {
			c.Remember(j, b[start:])
		}
	}
	return append(b, ']'), nil
}

// nodeSelections collects what the nodes field f selects of each node, and inside each node's
// object fields (their type as the schema gives it), by alias.
func nodeSelections(oc *graphql.OperationContext, f graphql.CollectedField) ([]graphql.CollectedField, map[string][]graphql.CollectedField) {
	fields := graphql.CollectFields(oc, f.Selections, conversationTypes)
	innerOf := map[string][]graphql.CollectedField{}
	for _, nf := range fields {
		if nf.Definition != nil && len(nf.Selections) > 0 {
			innerOf[nf.Alias] = graphql.CollectFields(oc, nf.Selections, []string{nf.Definition.Type.Name()})
		}
	}
	return fields, innerOf
}
