package pgindex_test

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/msggate/msggate/internal/devtools/testenv"
	"github.com/msggate/msggate/internal/search"
	"github.com/msggate/msggate/internal/search/pgindex"
	"github.com/msggate/msggate/internal/search/searchtest"
)

func open(t *testing.T, url string, opts pgindex.Options) *pgindex.Index {
	t.Helper()
	x, err := pgindex.Open(context.Background(), url, opts)
	if err != nil {
		t.Fatal(err)
	}
	return x
}

// The engine answers the suite every engine answers, on a real server, with the real count
// limit (10,000).
func TestConformance(t *testing.T) {
	searchtest.Run(t, func(t *testing.T) search.Engine {
		return open(t, testenv.Postgres(t).URL(), pgindex.Options{})
	})
}

func put(t *testing.T, x *pgindex.Index, docs ...search.Doc) {
	t.Helper()
	var cs []search.Change
	for i := range docs {
		cs = append(cs, search.Change{Put: &docs[i]})
	}
	if err := x.Apply(context.Background(), cs); err != nil {
		t.Fatalf("Apply: %v", err)
	}
}

func doc(conv string, seq int64, text string) search.Doc {
	return search.Doc{Key: search.Key{ConversationID: conv, Seq: seq}, SenderID: "alice", ContentType: 101,
		SendTime: 1_700_000_000_000 + seq, Text: text}
}

func hits(t *testing.T, x *pgindex.Index, text string) []string {
	t.Helper()
	r, err := x.Search(context.Background(), search.Request{Viewer: "bob", Text: text, Scopes: []search.Scope{{ConversationID: "c1"}}, First: 100})
	if err != nil {
		t.Fatalf("Search(%q): %v", text, err)
	}
	var out []string
	for _, h := range r.Hits {
		out = append(out, h.Highlight)
	}
	return out
}

// What a word is, beyond the suite: any run of letters and numbers, stop words included,
// whatever PostgreSQL's own parser would make of e-mail addresses or a word run into CJK.
func TestWords(t *testing.T) {
	x := open(t, testenv.Postgres(t).URL(), pgindex.Options{})
	defer x.Close()
	put(t, x,
		doc("c1", 1, "The answer was <b>no</b>"),
		doc("c1", 2, "write to bob@example.com or the e-mail list"),
		doc("c1", 3, "新款iphone手机到了"),
		doc("c1", 4, "nul\x00byte and \xffbad utf-8 are stored"),
	)
	for _, c := range []struct {
		query string
		want  []string
	}{
		{"the", []string{"write to bob@example.com or <mark>the</mark> e-mail list", "<mark>The</mark> answer was &lt;b&gt;no&lt;/b&gt;"}},
		{"was b", []string{"The answer <mark>was</mark> &lt;<mark>b</mark>&gt;no&lt;/<mark>b</mark>&gt;"}},
		{"example", []string{"write to bob@<mark>example</mark>.com or the e-mail list"}},
		{"mail e", []string{"write to bob@example.com or the <mark>e</mark>-<mark>mail</mark> list"}},
		{"iphone", []string{"新款<mark>iphone</mark>手机到了"}},
		{"手机", []string{"新款iphone<mark>手机</mark>到了"}},
		{"iPhone手机", []string{"新款<mark>iphone手机</mark>到了"}},
		{"stored", []string{"nulbyte and \ufffdbad utf-8 are <mark>stored</mark>"}},
		{"byte", nil},
		{"nulbyte", []string{"<mark>nulbyte</mark> and \ufffdbad utf-8 are stored"}},
	} {
		got := hits(t, x, c.query)
		if strings.Join(got, "\n") != strings.Join(c.want, "\n") {
			t.Errorf("Search(%q) highlights\n%q\nwant\n%q", c.query, got, c.want)
		}
	}
}

// A long message is cut around its first match, never through a match.
func TestHighlightOfLongText(t *testing.T) {
	x := open(t, testenv.Postgres(t).URL(), pgindex.Options{})
	defer x.Close()
	long := strings.Repeat("filler words here ", 40) + "the needle is here " + strings.Repeat("and more after ", 40)
	put(t, x, doc("c1", 1, long))
	got := hits(t, x, "needle")
	if len(got) != 1 {
		t.Fatalf("got %d hits, want 1", len(got))
	}
	h := got[0]
	if !strings.HasPrefix(h, "…") || !strings.HasSuffix(h, "…") || !strings.Contains(h, "the <mark>needle</mark> is here") || len(h) > 400 {
		t.Errorf("highlight of a %d-byte text = %q; want a cut fragment around the marked match", len(long), h)
	}
}

// A server that goes away makes the index answer search.ErrUnavailable, for searches and
// changes alike, and promptly; when it comes back the index answers again, with what it held.
func TestUnavailableWhileServerDown(t *testing.T) {
	srv := testenv.DedicatedPostgres(t)
	if err := srv.CreateDatabase("search"); err != nil {
		t.Fatal(err)
	}
	x := open(t, srv.URL("search"), pgindex.Options{Timeout: 5 * time.Second})
	defer x.Close()
	ctx := context.Background()
	put(t, x, doc("c1", 1, "before the crash"))

	srv.Kill()
	start := time.Now()
	_, err := x.Search(ctx, search.Request{Viewer: "bob", Text: "crash", Scopes: []search.Scope{{ConversationID: "c1"}}, First: 10})
	if !errors.Is(err, search.ErrUnavailable) {
		t.Fatalf("Search with the server killed: %v, want ErrUnavailable", err)
	}
	if err := x.Apply(ctx, []search.Change{{Put: &search.Doc{Key: search.Key{ConversationID: "c1", Seq: 2}, Text: "lost"}}}); !errors.Is(err, search.ErrUnavailable) {
		t.Fatalf("Apply with the server killed: %v, want ErrUnavailable", err)
	}
	if d := time.Since(start); d > 10*time.Second {
		t.Errorf("the two calls took %v to fail; a refused connection should fail at once", d)
	}

	if err := srv.Restart(); err != nil {
		t.Fatal(err)
	}
	put(t, x, doc("c1", 2, "after the crash"))
	if got := hits(t, x, "crash"); len(got) != 2 {
		t.Fatalf("after the restart, %q finds %q; want both messages", "crash", got)
	}
}

// A gateway may start while the index's server is down: Open succeeds, calls answer
// ErrUnavailable, and once the server is up the schema is created and everything works.
func TestOpenWhileServerDown(t *testing.T) {
	srv := testenv.DedicatedPostgres(t)
	if err := srv.CreateDatabase("search"); err != nil {
		t.Fatal(err)
	}
	srv.Stop()
	x := open(t, srv.URL("search"), pgindex.Options{Timeout: 5 * time.Second})
	defer x.Close()
	_, err := x.Search(context.Background(), search.Request{Text: "x", Scopes: []search.Scope{{ConversationID: "c1"}}, First: 1})
	if !errors.Is(err, search.ErrUnavailable) {
		t.Fatalf("Search before the server started: %v, want ErrUnavailable", err)
	}
	if err := srv.Restart(); err != nil {
		t.Fatal(err)
	}
	put(t, x, doc("c1", 1, "first words"))
	if got := hits(t, x, "words"); len(got) != 1 {
		t.Fatalf("after the server started, %q finds %q; want the message", "words", got)
	}
}

// Gateways starting together migrate the schema once, without tripping over each other.
func TestConcurrentOpens(t *testing.T) {
	db := testenv.Postgres(t)
	var wg sync.WaitGroup
	errs := make(chan error, 6)
	for range 6 {
		wg.Go(func() {
			x, err := pgindex.Open(context.Background(), db.URL(), pgindex.Options{})
			if err == nil {
				x.Close()
			}
			errs <- err
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Error(err)
		}
	}
	// Each version recorded once, none skipped.
	if got, err := db.Query("SELECT count(*) = count(DISTINCT version) AND count(*) = max(version) FROM msggate_search_messages_schema"); err != nil || got != "t" {
		out, _ := db.Query("SELECT string_agg(version::text, ',' ORDER BY version) FROM msggate_search_messages_schema")
		t.Errorf("schema versions recorded: %q (%v), want each once from 1", out, err)
	}
}

// A wrong request (here a table name that is no identifier) is an error of its own, not a
// server that is down.
func TestBadTableName(t *testing.T) {
	_, err := pgindex.Open(context.Background(), "postgres://127.0.0.1:1/x", pgindex.Options{Table: "x; DROP TABLE y"})
	if err == nil || errors.Is(err, search.ErrUnavailable) {
		t.Fatalf("Open with a bad table name: %v, want an error that is not ErrUnavailable", err)
	}
}

// A sender id longer than an index entry may be is still indexed and found by its sender: the
// scope index holds only a prefix of it, so such a message cannot fail its batch at every
// retry.
func TestLongSenderID(t *testing.T) {
	x := open(t, testenv.Postgres(t).URL(), pgindex.Options{})
	defer x.Close()
	// Hex of random bytes: PostgreSQL compresses a long index entry, so it must not compress.
	b := make([]byte, 3000)
	if _, err := rand.Read(b); err != nil {
		t.Fatal(err)
	}
	long := hex.EncodeToString(b)
	d := doc("c1", 1, "hello from far away")
	d.SenderID = long
	put(t, x, d, doc("c1", 2, "hello from alice"))
	r, err := x.Search(context.Background(), search.Request{Viewer: "bob", Text: "hello", SenderID: long,
		Scopes: []search.Scope{{ConversationID: "c1"}}, First: 10})
	if err != nil {
		t.Fatal(err)
	}
	if len(r.Hits) != 1 || r.Hits[0].Seq != 1 || r.Count != 1 {
		t.Fatalf("search by the long sender: %+v, want message 1 alone", r)
	}
}
