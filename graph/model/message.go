package model

import (
	"context"
	"errors"
	"io"
	"strconv"
	"sync"
	"unicode/utf8"

	"github.com/99designs/gqlgen/graphql"
	"github.com/vektah/gqlparser/v2/ast"
)

// Message and History write their own JSON (MarshalGQLContext); the types and their writers,
// field by field, are generated from the schema (objects_gen.go, by graph/gqlgen). A page of
// history is a hundred messages of a dozen plain fields each: gqlgen's generic path would start a goroutine per
// message and run its whole field machinery (a field context, the middleware chain, a boxed
// value) for each of the 1,200 fields, which cost more than everything else the page does.
// Here the selection is collected once per list and every field is appended to one buffer.
// They honour the query exactly as gqlgen does: aliases, fragments, @skip and @include (through
// graphql.CollectFields), __typename, and the order of the selection.

// errOutputOnly answers an attempt to read these types from a client: the schema has them as
// output types only, so gqlgen never asks.
var errOutputOnly = errors.New("output type: cannot be read from input")

// MarshalGQLContext writes the fields of m the query selected.
func (m *Message) MarshalGQLContext(ctx context.Context, w io.Writer) error {
	oc, sel, err := selectionOf(ctx)
	if err != nil {
		return err
	}
	return writeBuffered(w, func(b []byte) ([]byte, error) {
		return appendMessage(b, oc, graphql.CollectFields(oc, sel, messageTypes), m)
	})
}

// UnmarshalGQLContext refuses: Message is an output type.
func (m *Message) UnmarshalGQLContext(context.Context, any) error { return errOutputOnly }

// MarshalGQLContext writes the fields of h the query selected, its messages included.
func (h *History) MarshalGQLContext(ctx context.Context, w io.Writer) error {
	oc, sel, err := selectionOf(ctx)
	if err != nil {
		return err
	}
	return writeBuffered(w, func(b []byte) ([]byte, error) {
		return appendHistory(b, oc, graphql.CollectFields(oc, sel, historyTypes), h)
	})
}

// Messages is a list of messages as a root field answers it ([Message!]!). graph/gqlgen binds
// those fields to it, so that the list is written in one piece, as History's is.
type Messages []*Message

// MarshalGQLContext writes the list, each message with the fields the query selected.
func (ms Messages) MarshalGQLContext(ctx context.Context, w io.Writer) error {
	oc, sel, err := selectionOf(ctx)
	if err != nil {
		return err
	}
	return writeBuffered(w, func(b []byte) ([]byte, error) {
		return appendMessages(b, oc, graphql.CollectFields(oc, sel, messageTypes), ms)
	})
}

// UnmarshalGQLContext refuses: Message is an output type.
func (ms *Messages) UnmarshalGQLContext(context.Context, any) error { return errOutputOnly }

// appendMessages appends a JSON array of ms, each with the given fields.
func appendMessages(b []byte, oc *graphql.OperationContext, fields []graphql.CollectedField, ms []*Message) ([]byte, error) {
	b = append(b, '[')
	for j, m := range ms {
		if m == nil {
			return nil, errors.New("model: a list of messages holds a nil message")
		}
		if j > 0 {
			b = append(b, ',')
		}
		var err error
		if b, err = appendMessage(b, oc, fields, m); err != nil {
			return nil, err
		}
	}
	return append(b, ']'), nil
}

// UnmarshalGQLContext refuses: History is an output type.
func (h *History) UnmarshalGQLContext(context.Context, any) error { return errOutputOnly }

// appendObject appends a JSON object with a member for each field, named by its alias, whose
// value appendValue appends: the shell every hand-written writer shares.
func appendObject(b []byte, fields []graphql.CollectedField, appendValue func(b []byte, f graphql.CollectedField) ([]byte, error)) ([]byte, error) {
	b = append(b, '{')
	for i, f := range fields {
		if i > 0 {
			b = append(b, ',')
		}
		b = appendKey(b, f.Alias)
		var err error
		if b, err = appendValue(b, f); err != nil {
			return nil, err
		}
	}
	return append(b, '}'), nil
}

// unknownField answers a field the schema has and the writer does not: a schema change that
// was not carried over here, which the tests of every field catch.
func unknownField(typ, field string) error {
	return errors.New("model: " + typ + "." + field + " has no writer")
}

// selectionOf returns the operation and the selection set of the field being marshalled. An
// element of a list has an index context without a field of its own: its selection is the
// list field's.
func selectionOf(ctx context.Context) (*graphql.OperationContext, ast.SelectionSet, error) {
	fc := graphql.GetFieldContext(ctx)
	for fc != nil && fc.Field.Field == nil {
		fc = fc.Parent
	}
	if fc == nil || !graphql.HasOperationContext(ctx) {
		return nil, nil, errors.New("model: marshalled outside a GraphQL field")
	}
	return graphql.GetOperationContext(ctx), fc.Field.Selections, nil
}

var buffers = sync.Pool{New: func() any { b := make([]byte, 0, 32<<10); return &b }}

// writeBuffered appends through fill into a pooled buffer and writes it to w at once.
func writeBuffered(w io.Writer, fill func([]byte) ([]byte, error)) error {
	p := buffers.Get().(*[]byte)
	b, err := fill((*p)[:0])
	if err == nil {
		_, err = w.Write(b)
	}
	if cap(b) <= 1<<20 { // a huge page's buffer is not kept
		*p = b
		buffers.Put(p)
	}
	return err
}

func appendKey(b []byte, key string) []byte {
	b = appendString(b, key)
	return append(b, ':')
}

func appendOptString(b []byte, s *string) []byte {
	if s == nil {
		return append(b, "null"...)
	}
	return appendString(b, *s)
}

func appendOptInt(b []byte, n *int) []byte {
	if n == nil {
		return append(b, "null"...)
	}
	return strconv.AppendInt(b, int64(*n), 10)
}

func appendOptInt64(b []byte, n *int64) []byte {
	if n == nil {
		return append(b, "null"...)
	}
	return strconv.AppendInt(b, *n, 10)
}

const hexDigits = "0123456789abcdef"

// appendString appends s as a JSON string. Bytes that are not UTF-8 become U+FFFD, so the
// answer is valid JSON whatever a store holds.
func appendString(b []byte, s string) []byte {
	b = append(b, '"')
	start := 0
	for i := plainPrefix(s); i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			if c >= 0x20 && c != '"' && c != '\\' {
				i++
				continue
			}
			b = append(b, s[start:i]...)
			switch c {
			case '"', '\\':
				b = append(b, '\\', c)
			case '\n':
				b = append(b, '\\', 'n')
			case '\r':
				b = append(b, '\\', 'r')
			case '\t':
				b = append(b, '\\', 't')
			default:
				b = append(b, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&0xf])
			}
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			b = append(b, s[start:i]...)
			b = append(b, `\ufffd`...)
			i++
			start = i
			continue
		}
		i += size
	}
	b = append(b, s[start:]...)
	return append(b, '"')
}

// plainPrefix returns the length of s's leading run of bytes that JSON writes as they are
// (printable ASCII other than '"' and '\\'), looked at eight bytes a step: a message's text is
// mostly such a run.
func plainPrefix(s string) int {
	const ones, highs = 0x0101010101010101, 0x8080808080808080
	i := 0
	for ; i+8 <= len(s); i += 8 {
		x := uint64(s[i]) | uint64(s[i+1])<<8 | uint64(s[i+2])<<16 | uint64(s[i+3])<<24 |
			uint64(s[i+4])<<32 | uint64(s[i+5])<<40 | uint64(s[i+6])<<48 | uint64(s[i+7])<<56
		quote, backslash := x^(ones*'"'), x^(ones*'\\')
		// A byte is flagged when it is at least 0x80, below 0x20 (a borrow can only flag bytes
		// above one already flagged), or zero after the XOR with '"' or '\\' (the classic
		// "has a zero byte" test).
		special := x | (x - ones*0x20) | ((quote - ones) &^ quote) | ((backslash - ones) &^ backslash)
		if special&highs != 0 {
			break
		}
	}
	return i
}
