// Package finder answers a user's message search: it works out what the user may read now,
// by the same rules every read uses (the conversation source's list, access and seq states),
// hands that to a search.Engine as scopes, and pages the hits with an opaque cursor. The
// GraphQL boundary loads the hits' messages through its loaders.
package finder

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"strings"
	"unicode/utf8"

	"github.com/msggate/msggate/internal/im"
	"github.com/msggate/msggate/internal/search"
)

// Conversations is what a search needs to know of the viewer's conversations; the gateway's
// conversation source (msggate's ledger, or an OpenIM deployment's store) is one.
type Conversations interface {
	ParseConversationID(id string) (im.Conversation, error)
	CanRead(ctx context.Context, userID string, conversationIDs []string) ([]bool, error)
	States(ctx context.Context, userID string, conversationIDs []string) ([]im.SeqState, error)
	UserConversations(ctx context.Context, userID string) ([]im.SeqState, error)
}

// Members is what a conversation source implements when it lets a user who left a group go on
// reading it (OpenIM does, up to where they left): search then keeps to the conversations the
// viewer is in now, as it does over msggate's own store, where one who left reads nothing of
// the group.
type Members interface {
	InNow(ctx context.Context, userID string, conversationIDs []string) ([]bool, error)
}

// Limits of a search request.
const (
	DefaultFirst = 20
	MaxFirst     = 100
	// MaxQueryBytes bounds the query text.
	MaxQueryBytes = 512
)

// Query is one search as the client asked it.
type Query struct {
	Text           string
	ConversationID string // "" = every conversation the viewer may read
	SenderID       string
	ContentTypes   []int32
	SentAfter      int64
	SentBefore     int64
	First          *int
	After          string // a Page.EndCursor
}

// Page is one page of results.
type Page struct {
	Hits         []search.Hit
	Count        int
	CountIsExact bool
	EndCursor    string
	HasMore      bool
}

// Finder answers searches. It is safe for concurrent use.
type Finder struct {
	engine search.Engine
	convs  Conversations
}

// New returns a Finder over an engine and a conversation source.
func New(engine search.Engine, convs Conversations) *Finder {
	return &Finder{engine: engine, convs: convs}
}

// Find runs one search for viewer.
func (f *Finder) Find(ctx context.Context, viewer string, q Query) (Page, error) {
	req, err := request(viewer, q)
	if err != nil {
		return Page{}, err
	}
	if req.Scopes, err = f.scopes(ctx, viewer, q.ConversationID); err != nil {
		return Page{}, err
	}
	res, err := f.engine.Search(ctx, req)
	if errors.Is(err, search.ErrUnavailable) {
		return Page{}, im.Unavailable("the search index", err)
	}
	if err != nil {
		return Page{}, err
	}
	p := Page{Hits: res.Hits, Count: res.Count, CountIsExact: res.CountIsExact, HasMore: res.HasMore}
	if n := len(res.Hits); n > 0 {
		p.EndCursor = encodeCursor(search.CursorOf(res.Hits[n-1]))
	}
	return p, nil
}

// request checks the client's query and turns it into an engine request without scopes.
func request(viewer string, q Query) (search.Request, error) {
	text := strings.TrimSpace(q.Text)
	switch {
	case text == "":
		return search.Request{}, im.Errorf(im.EINVALID, "the search query is empty")
	case len(text) > MaxQueryBytes || !utf8.ValidString(text):
		return search.Request{}, im.Errorf(im.ELIMIT, "the search query must be valid UTF-8 of at most %d bytes", MaxQueryBytes)
	}
	first := DefaultFirst
	if q.First != nil {
		first = *q.First
	}
	switch {
	case first < 1:
		return search.Request{}, im.Errorf(im.EINVALID, "first must be at least 1")
	case first > MaxFirst:
		return search.Request{}, im.Errorf(im.ELIMIT, "first is at most %d, got %d", MaxFirst, first)
	case q.SentAfter < 0 || q.SentBefore < 0:
		return search.Request{}, im.Errorf(im.EINVALID, "sentAfter and sentBefore are Unix milliseconds")
	}
	for _, t := range q.ContentTypes {
		if t < 0 {
			return search.Request{}, im.Errorf(im.EINVALID, "content types are not negative")
		}
	}
	req := search.Request{Viewer: viewer, Text: text, SenderID: q.SenderID, ContentTypes: q.ContentTypes,
		SentAfter: q.SentAfter, SentBefore: q.SentBefore, First: first}
	if q.After != "" {
		c, err := decodeCursor(q.After)
		if err != nil {
			return search.Request{}, err
		}
		req.After = &c
	}
	return req, nil
}

// scopes are the conversations viewer may read now, each from the first seq they may read:
// one conversation when conversationID is given (refused as reads refuse it), else their
// list. A member removed from a group, seqs below a clear or retention, are thereby out of
// every search.
func (f *Finder) scopes(ctx context.Context, viewer, conversationID string) ([]search.Scope, error) {
	var ids []string
	var states []im.SeqState
	if conversationID != "" {
		if _, err := f.convs.ParseConversationID(conversationID); err != nil {
			return nil, err
		}
		ids = []string{conversationID}
	} else {
		list, err := f.convs.UserConversations(ctx, viewer)
		if err != nil {
			return nil, err
		}
		for _, st := range list {
			ids = append(ids, st.ConversationID)
		}
		states = list
	}
	if len(ids) == 0 {
		return nil, nil
	}
	ok, err := f.convs.CanRead(ctx, viewer, ids)
	if err != nil {
		return nil, err
	}
	if conversationID != "" {
		if !ok[0] {
			return nil, im.Errorf(im.EFORBIDDEN, "conversation %s does not exist or you are not a member of it", conversationID)
		}
		if states, err = f.convs.States(ctx, viewer, ids); err != nil {
			return nil, err
		}
	}
	if m, ok2 := f.convs.(Members); ok2 {
		now, err := m.InNow(ctx, viewer, ids)
		if err != nil {
			return nil, err
		}
		for i := range ok {
			ok[i] = ok[i] && now[i]
		}
	}
	out := make([]search.Scope, 0, len(ids))
	for i, st := range states {
		if ok[i] && st.MaxSeq >= st.VisibleMin() {
			out = append(out, search.Scope{ConversationID: ids[i], MinSeq: st.VisibleMin()})
		}
	}
	return out, nil
}

// wireCursor is a cursor as clients carry it, opaque to them.
type wireCursor struct {
	T int64  `json:"t"`
	C string `json:"c"`
	S int64  `json:"s"`
}

func encodeCursor(c search.Cursor) string {
	b, _ := json.Marshal(wireCursor{T: c.SendTime, C: c.ConversationID, S: c.Seq})
	return base64.RawURLEncoding.EncodeToString(b)
}

func decodeCursor(s string) (search.Cursor, error) {
	var w wireCursor
	b, err := base64.RawURLEncoding.DecodeString(s)
	if err == nil {
		err = json.Unmarshal(b, &w)
	}
	if err != nil || w.C == "" {
		return search.Cursor{}, im.Errorf(im.EINVALID, "after is not a cursor this search returned")
	}
	return search.Cursor{SendTime: w.T, Key: search.Key{ConversationID: w.C, Seq: w.S}}, nil
}
