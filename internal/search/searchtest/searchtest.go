// Package searchtest is the conformance suite every search.Engine must pass,
// so that the embedded index and a shared one answer the same question the
// same way: what one user may find, in which order, and how many.
package searchtest

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/msggate/msggate/internal/search"
)

// CountLimiter is implemented by an engine configured with a count limit
// lower than search.CountLimit, so the suite can check the exact/inexact
// boundary without indexing ten thousand documents under -race.
type CountLimiter interface {
	CountLimit() int
}

// Run runs the suite. open returns a fresh, empty engine for each subtest;
// Run closes it.
func Run(t *testing.T, open func(t *testing.T) search.Engine) {
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			e := open(t)
			t.Cleanup(func() {
				if err := e.Close(); err != nil {
					t.Errorf("Close: %v", err)
				}
			})
			c.run(t, e)
		})
	}
}

var cases = []struct {
	name string
	run  func(t *testing.T, e search.Engine)
}{
	{"EnglishWords", testEnglishWords},
	{"CJKSubstring", testCJKSubstring},
	{"CJKSubstringPagedAndCounted", testCJKSubstringPaged},
	{"ScopeExcludesOtherConversations", testScopeConversations},
	{"ScopeExcludesBelowMinSeq", testScopeMinSeq},
	{"HideIsForOneUserOnly", testHide},
	{"RemoveRemoves", testRemove},
	{"ApplyingTwiceIsOnce", testIdempotent},
	{"FilterBySender", testSender},
	{"FilterByContentType", testContentTypes},
	{"FilterBySendTime", testSendTime},
	{"NewestFirst", testOrder},
	{"CursorPagingHasNoCap", testPaging},
	{"CountExactUpToLimit", testCount},
}

// base is the send time of the first test message: fixed, so runs repeat.
var base = time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC).UnixMilli()

func doc(conv string, seq int64, text string) search.Doc {
	return search.Doc{
		Key:         search.Key{ConversationID: conv, Seq: seq},
		SenderID:    "alice",
		ContentType: 101,
		SendTime:    base + seq*1000,
		Text:        text,
	}
}

func put(t *testing.T, e search.Engine, docs ...search.Doc) {
	t.Helper()
	var cs []search.Change
	for i := range docs {
		cs = append(cs, search.Change{Put: &docs[i]})
		if len(cs) == 500 {
			apply(t, e, cs...)
			cs = nil
		}
	}
	apply(t, e, cs...)
}

func apply(t *testing.T, e search.Engine, cs ...search.Change) {
	t.Helper()
	if len(cs) == 0 {
		return
	}
	if err := e.Apply(context.Background(), cs); err != nil {
		t.Fatalf("Apply: %v", err)
	}
}

func find(t *testing.T, e search.Engine, req search.Request) search.Result {
	t.Helper()
	if req.First == 0 {
		req.First = 100
	}
	if req.Viewer == "" {
		req.Viewer = "bob"
	}
	r, err := e.Search(context.Background(), req)
	if err != nil {
		t.Fatalf("Search(%q): %v", req.Text, err)
	}
	if len(r.Hits) > req.First {
		t.Fatalf("Search(%q) returned %d hits, more than First=%d", req.Text, len(r.Hits), req.First)
	}
	return r
}

func scopes(convs ...string) []search.Scope {
	var s []search.Scope
	for _, c := range convs {
		s = append(s, search.Scope{ConversationID: c})
	}
	return s
}

// keys renders hits as "conv/seq" in result order, for readable failures.
func keys(r search.Result) []string {
	var ks []string
	for _, h := range r.Hits {
		ks = append(ks, fmt.Sprintf("%s/%d", h.ConversationID, h.Seq))
	}
	return ks
}

// expect checks that a search finds exactly want (in order), and counts them
// exactly.
func expect(t *testing.T, e search.Engine, req search.Request, want ...string) {
	t.Helper()
	r := find(t, e, req)
	if got := keys(r); !slices.Equal(got, want) {
		t.Errorf("Search(%q) as %q = %v, want %v", req.Text, req.Viewer, got, want)
	}
	if r.Count != len(want) || !r.CountIsExact {
		t.Errorf("Search(%q) as %q count = %d (exact %v), want %d exact", req.Text, req.Viewer, r.Count, r.CountIsExact, len(want))
	}
	if r.HasMore {
		t.Errorf("Search(%q) HasMore = true with every hit on one page", req.Text)
	}
}

func testEnglishWords(t *testing.T, e search.Engine) {
	put(t, e,
		doc("c1", 1, "Shall we move the Meeting to Friday?"),
		doc("c1", 2, "lunch tomorrow at noon"),
		doc("c1", 3, "the meeting room is booked for lunch"),
		doc("c1", 4, "nothing to see here"),
	)
	sc := scopes("c1")
	expect(t, e, search.Request{Text: "meeting", Scopes: sc}, "c1/3", "c1/1")
	expect(t, e, search.Request{Text: "MEETING", Scopes: sc}, "c1/3", "c1/1")
	// Every word must match, in any order.
	expect(t, e, search.Request{Text: "lunch meeting", Scopes: sc}, "c1/3")
	expect(t, e, search.Request{Text: "friday", Scopes: sc}, "c1/1")
	expect(t, e, search.Request{Text: "elephant", Scopes: sc})

	r := find(t, e, search.Request{Text: "friday", Scopes: sc})
	if len(r.Hits) == 1 && r.Hits[0].Highlight != "" &&
		!strings.Contains(strings.ToLower(r.Hits[0].Highlight), "friday") {
		t.Errorf("highlight %q does not show the matched word", r.Hits[0].Highlight)
	}
	if len(r.Hits) == 1 && r.Hits[0].SendTime != base+1000 {
		t.Errorf("hit SendTime = %d, want %d", r.Hits[0].SendTime, base+1000)
	}
}

func testCJKSubstring(t *testing.T, e search.Engine) {
	put(t, e,
		doc("c1", 1, "我们明天去北京开会"),
		doc("c1", 2, "上海的天气很好"),
		doc("c1", 3, "meeting 在北京站 at 9"),
		doc("c1", 4, "東京で会いましょう"),
		doc("c1", 5, "내일 서울에서 만나요"),
	)
	sc := scopes("c1")
	expect(t, e, search.Request{Text: "北京", Scopes: sc}, "c1/3", "c1/1")
	expect(t, e, search.Request{Text: "明天去", Scopes: sc}, "c1/1")
	expect(t, e, search.Request{Text: "我们明天去北京开会", Scopes: sc}, "c1/1")
	expect(t, e, search.Request{Text: "天气", Scopes: sc}, "c1/2")
	expect(t, e, search.Request{Text: "北京站", Scopes: sc}, "c1/3")
	expect(t, e, search.Request{Text: "東京", Scopes: sc}, "c1/4")
	expect(t, e, search.Request{Text: "서울", Scopes: sc}, "c1/5")
	// Characters that are in the text but not next to each other do not match.
	expect(t, e, search.Request{Text: "北开", Scopes: sc})
	expect(t, e, search.Request{Text: "广州", Scopes: sc})
}

// testCJKSubstringPaged pages through a substring of three characters (two bigrams) among
// near misses that hold both bigrams apart, reversed, out of scope or hidden: none is found
// or counted, on any page.
func testCJKSubstringPaged(t *testing.T, e search.Engine) {
	const n = 240
	var docs []search.Doc
	var want, apart []search.Cursor
	convs := []string{"k1", "k2"}
	for i := 0; i < n; i++ {
		d := doc(convs[i%2], int64(i/2+1), "")
		d.SendTime = base + int64(i/6)*1000
		switch i % 5 {
		case 0:
			d.Text = fmt.Sprintf("在北京和京站之间 %d", i)
			apart = append(apart, search.Cursor{SendTime: d.SendTime, Key: d.Key})
		case 1:
			d.Text = fmt.Sprintf("京站北京 %d", i)
		case 2:
			d.Text = fmt.Sprintf("今天%d点到北京站接人", i)
			d.HiddenFor = []string{"bob"}
		default:
			d.Text = fmt.Sprintf("今天%d点到北京站接人", i)
			want = append(want, search.Cursor{SendTime: d.SendTime, Key: d.Key})
		}
		docs = append(docs, d)
	}
	docs = append(docs, doc("k3", 1, "北京站"))
	put(t, e, docs...)
	order := func(a, b search.Cursor) int {
		if search.Before(a, b) {
			return -1
		}
		return 1
	}
	slices.SortFunc(want, order)
	slices.SortFunc(apart, order)
	sc := scopes(convs...)
	var apartKeys []string
	for _, c := range apart {
		apartKeys = append(apartKeys, fmt.Sprintf("%s/%d", c.ConversationID, c.Seq))
	}
	expect(t, e, search.Request{Text: "和京站", Scopes: sc}, apartKeys...)
	var got []search.Cursor
	req := search.Request{Viewer: "bob", Text: "北京站", Scopes: sc, First: 7}
	for pages := 0; ; pages++ {
		if pages > n {
			t.Fatal("paging does not end")
		}
		r := find(t, e, req)
		if r.Count != len(want) || !r.CountIsExact {
			t.Fatalf("page %d: count = %d (exact %v), want %d exact", pages, r.Count, r.CountIsExact, len(want))
		}
		for _, h := range r.Hits {
			got = append(got, search.CursorOf(h))
		}
		if !r.HasMore {
			break
		}
		c := search.CursorOf(r.Hits[len(r.Hits)-1])
		req.After = &c
	}
	if !slices.Equal(got, want) {
		t.Errorf("paging 北京站 returned %d hits %v; want %d in order, each once", len(got), got, len(want))
	}
}

func testScopeConversations(t *testing.T, e search.Engine) {
	put(t, e,
		doc("c1", 1, "secret plan"),
		doc("c2", 1, "secret plan"),
		doc("c3", 2, "secret plan"),
	)
	expect(t, e, search.Request{Text: "secret", Scopes: scopes("c1", "c3")}, "c3/2", "c1/1")
	expect(t, e, search.Request{Text: "secret", Scopes: scopes("c2")}, "c2/1")
	expect(t, e, search.Request{Text: "secret", Scopes: nil})
	expect(t, e, search.Request{Text: "secret", Scopes: scopes("c4")})
}

func testScopeMinSeq(t *testing.T, e search.Engine) {
	var docs []search.Doc
	for seq := int64(1); seq <= 6; seq++ {
		docs = append(docs, doc("c1", seq, "history note"), doc("c2", seq, "history note"))
	}
	put(t, e, docs...)
	req := search.Request{Text: "history", Scopes: []search.Scope{
		{ConversationID: "c1", MinSeq: 5},
		{ConversationID: "c2", MinSeq: 0},
	}}
	expect(t, e, req, "c1/6", "c2/6", "c1/5", "c2/5", "c2/4", "c2/3", "c2/2", "c2/1")
	req.Scopes = []search.Scope{{ConversationID: "c1", MinSeq: 7}}
	expect(t, e, req)
}

func testHide(t *testing.T, e search.Engine) {
	d := doc("c1", 2, "party on saturday")
	d.HiddenFor = []string{"carol"}
	put(t, e, doc("c1", 1, "party on friday"), d)
	sc := scopes("c1")
	expect(t, e, search.Request{Viewer: "bob", Text: "party", Scopes: sc}, "c1/2", "c1/1")
	expect(t, e, search.Request{Viewer: "carol", Text: "party", Scopes: sc}, "c1/1")

	apply(t, e, search.Change{Hide: &search.Hide{Key: search.Key{ConversationID: "c1", Seq: 1}, UserID: "bob"}})
	expect(t, e, search.Request{Viewer: "bob", Text: "party", Scopes: sc}, "c1/2")
	expect(t, e, search.Request{Viewer: "carol", Text: "party", Scopes: sc}, "c1/1")
	expect(t, e, search.Request{Viewer: "dave", Text: "party", Scopes: sc}, "c1/2", "c1/1")

	// Hiding a message the index does not hold is not an error.
	apply(t, e, search.Change{Hide: &search.Hide{Key: search.Key{ConversationID: "c9", Seq: 9}, UserID: "bob"}})
}

func testRemove(t *testing.T, e search.Engine) {
	put(t, e, doc("c1", 1, "revoked words"), doc("c1", 2, "kept words"))
	sc := scopes("c1")
	expect(t, e, search.Request{Text: "words", Scopes: sc}, "c1/2", "c1/1")
	apply(t, e, search.Change{Remove: &search.Key{ConversationID: "c1", Seq: 1}})
	expect(t, e, search.Request{Text: "words", Scopes: sc}, "c1/2")
	expect(t, e, search.Request{Text: "revoked", Scopes: sc})
	// Removing twice, or removing what is not there, is not an error.
	apply(t, e,
		search.Change{Remove: &search.Key{ConversationID: "c1", Seq: 1}},
		search.Change{Remove: &search.Key{ConversationID: "c9", Seq: 1}},
	)
	expect(t, e, search.Request{Text: "words", Scopes: sc}, "c1/2")
}

func testIdempotent(t *testing.T, e search.Engine) {
	d := doc("c1", 1, "twice applied")
	put(t, e, d)
	put(t, e, d, d)
	sc := scopes("c1")
	expect(t, e, search.Request{Text: "twice", Scopes: sc}, "c1/1")

	// A replayed batch (the relay crashed after applying, before recording
	// its progress) ends where the first application did.
	batch := []search.Change{
		{Put: &search.Doc{Key: search.Key{ConversationID: "c1", Seq: 2}, SenderID: "alice", ContentType: 101, SendTime: base + 2000, Text: "twice edited"}},
		{Hide: &search.Hide{Key: search.Key{ConversationID: "c1", Seq: 2}, UserID: "bob"}},
		{Hide: &search.Hide{Key: search.Key{ConversationID: "c1", Seq: 2}, UserID: "bob"}},
		{Put: &search.Doc{Key: search.Key{ConversationID: "c1", Seq: 3}, SenderID: "alice", ContentType: 101, SendTime: base + 3000, Text: "twice revoked"}},
		{Remove: &search.Key{ConversationID: "c1", Seq: 3}},
	}
	apply(t, e, batch...)
	apply(t, e, batch...)
	expect(t, e, search.Request{Viewer: "bob", Text: "twice", Scopes: sc}, "c1/1")
	expect(t, e, search.Request{Viewer: "carol", Text: "twice", Scopes: sc}, "c1/2", "c1/1")

	// A later Put replaces the earlier version (an edit or a reindex).
	apply(t, e, search.Change{Put: &search.Doc{Key: search.Key{ConversationID: "c1", Seq: 1}, SenderID: "alice", ContentType: 101, SendTime: base + 1000, Text: "once replaced"}})
	expect(t, e, search.Request{Viewer: "carol", Text: "twice", Scopes: sc}, "c1/2")
	expect(t, e, search.Request{Viewer: "carol", Text: "replaced", Scopes: sc}, "c1/1")
}

func testSender(t *testing.T, e search.Engine) {
	d2 := doc("c1", 2, "status report")
	d2.SenderID = "bob"
	d3 := doc("c2", 3, "status report")
	d3.SenderID = "bob"
	put(t, e, doc("c1", 1, "status report"), d2, d3)
	sc := scopes("c1", "c2")
	expect(t, e, search.Request{Text: "status", Scopes: sc, SenderID: "bob"}, "c2/3", "c1/2")
	expect(t, e, search.Request{Text: "status", Scopes: sc, SenderID: "alice"}, "c1/1")
	expect(t, e, search.Request{Text: "status", Scopes: sc, SenderID: "nobody"})
}

func testContentTypes(t *testing.T, e search.Engine) {
	d2 := doc("c1", 2, "holiday photo")
	d2.ContentType = 102
	d3 := doc("c1", 3, "holiday file")
	d3.ContentType = 105
	put(t, e, doc("c1", 1, "holiday text"), d2, d3)
	sc := scopes("c1")
	expect(t, e, search.Request{Text: "holiday", Scopes: sc, ContentTypes: []int32{102}}, "c1/2")
	expect(t, e, search.Request{Text: "holiday", Scopes: sc, ContentTypes: []int32{101, 105}}, "c1/3", "c1/1")
	expect(t, e, search.Request{Text: "holiday", Scopes: sc, ContentTypes: []int32{110}})
}

func testSendTime(t *testing.T, e search.Engine) {
	var docs []search.Doc
	for seq := int64(1); seq <= 5; seq++ {
		docs = append(docs, doc("c1", seq, "timeline entry"))
	}
	put(t, e, docs...)
	sc := scopes("c1")
	at := func(seq int64) int64 { return base + seq*1000 }
	// Bounds are exclusive.
	expect(t, e, search.Request{Text: "timeline", Scopes: sc, SentAfter: at(2)}, "c1/5", "c1/4", "c1/3")
	expect(t, e, search.Request{Text: "timeline", Scopes: sc, SentBefore: at(2)}, "c1/1")
	expect(t, e, search.Request{Text: "timeline", Scopes: sc, SentAfter: at(1), SentBefore: at(4)}, "c1/3", "c1/2")
	expect(t, e, search.Request{Text: "timeline", Scopes: sc, SentAfter: at(1) - 1, SentBefore: at(1) + 1}, "c1/1")
	expect(t, e, search.Request{Text: "timeline", Scopes: sc, SentAfter: at(5)})
}

func testOrder(t *testing.T, e search.Engine) {
	// Ties on SendTime order by conversation, then by seq descending.
	mk := func(conv string, seq, at int64) search.Doc {
		d := doc(conv, seq, "ordered item")
		d.SendTime = base + at
		return d
	}
	put(t, e, mk("b", 1, 10), mk("a", 7, 10), mk("a", 9, 10), mk("a", 3, 50), mk("c", 1, 5), mk("b", 2, 60))
	expect(t, e, search.Request{Text: "ordered", Scopes: scopes("a", "b", "c")},
		"b/2", "a/3", "a/9", "a/7", "b/1", "c/1")
}

func testPaging(t *testing.T, e search.Engine) {
	// More hits than the caps other chat servers put on search (500, 1,000),
	// with many ties on SendTime so the cursor's tie-break matters.
	const n = 1234
	var docs []search.Doc
	var want []search.Cursor
	convs := []string{"p1", "p2", "p3"}
	for i := 0; i < n; i++ {
		conv := convs[i%3]
		seq := int64(i/3 + 1)
		d := doc(conv, seq, fmt.Sprintf("paged hit number %d", i))
		d.SendTime = base + int64(i/7)*1000
		docs = append(docs, d)
		want = append(want, search.Cursor{SendTime: d.SendTime, Key: d.Key})
	}
	// A near miss that must never appear.
	docs = append(docs, doc("p4", 1, "paged hit outside the scope"))
	put(t, e, docs...)
	slices.SortFunc(want, func(a, b search.Cursor) int {
		if search.Before(a, b) {
			return -1
		}
		if search.Before(b, a) {
			return 1
		}
		return 0
	})

	for _, first := range []int{100, 37} {
		var got []search.Cursor
		req := search.Request{Viewer: "bob", Text: "paged", Scopes: scopes(convs...), First: first}
		for pages := 0; ; pages++ {
			if pages > n {
				t.Fatalf("paging with First=%d does not end", first)
			}
			r := find(t, e, req)
			for _, h := range r.Hits {
				got = append(got, search.CursorOf(h))
			}
			if exact := n <= countLimit(e); r.CountIsExact != exact || (exact && r.Count != n) || r.Count > n {
				t.Fatalf("page %d: count = %d (exact %v), want %d (exact %v)", pages, r.Count, r.CountIsExact, n, exact)
			}
			if !r.HasMore {
				break
			}
			if len(r.Hits) == 0 {
				t.Fatalf("page %d: HasMore with no hits", pages)
			}
			c := search.CursorOf(r.Hits[len(r.Hits)-1])
			req.After = &c
		}
		if !slices.Equal(got, want) {
			t.Errorf("paging with First=%d returned %d hits; want all %d in order, each once", first, len(got), n)
		}
	}

	// A page that ends exactly at the last hit says there is no more.
	last := want[n-5]
	r := find(t, e, search.Request{Text: "paged", Scopes: scopes(convs...), First: 4, After: &last})
	if len(r.Hits) != 4 || r.HasMore {
		t.Errorf("last page: %d hits, HasMore %v; want 4 hits and no more", len(r.Hits), r.HasMore)
	}
}

func countLimit(e search.Engine) int {
	if l, ok := e.(CountLimiter); ok && l.CountLimit() > 0 {
		return l.CountLimit()
	}
	return search.CountLimit
}

func testCount(t *testing.T, e search.Engine) {
	limit := countLimit(e)
	var docs []search.Doc
	for i := 0; i < limit; i++ {
		docs = append(docs, doc(fmt.Sprintf("k%d", i%4), int64(i/4+1), "counted message"))
	}
	put(t, e, docs...)
	sc := scopes("k0", "k1", "k2", "k3")
	r := find(t, e, search.Request{Text: "counted", Scopes: sc, First: 10})
	if r.Count != limit || !r.CountIsExact || !r.HasMore || len(r.Hits) != 10 {
		t.Errorf("at the limit: count %d exact %v hasMore %v hits %d; want %d exact, more, 10 hits",
			r.Count, r.CountIsExact, r.HasMore, len(r.Hits), limit)
	}
	// What the viewer may not read is not counted even when it would push
	// the count over the limit.
	put(t, e, doc("k9", 1, "counted message"), doc("k0", int64(limit), "counted message hidden"))
	apply(t, e, search.Change{Hide: &search.Hide{Key: search.Key{ConversationID: "k0", Seq: int64(limit)}, UserID: "bob"}})
	r = find(t, e, search.Request{Text: "counted", Scopes: sc, First: 10})
	if r.Count != limit || !r.CountIsExact {
		t.Errorf("with unreadable matches: count %d exact %v; want %d exact", r.Count, r.CountIsExact, limit)
	}

	put(t, e, doc("k1", int64(limit), "counted message over"))
	r = find(t, e, search.Request{Text: "counted", Scopes: sc, First: 10})
	if r.Count < limit || r.CountIsExact {
		t.Errorf("over the limit: count %d exact %v; want at least %d, not exact", r.Count, r.CountIsExact, limit)
	}
	if len(r.Hits) != 10 || !r.HasMore {
		t.Errorf("over the limit: %d hits, HasMore %v; want 10 and more", len(r.Hits), r.HasMore)
	}
}
