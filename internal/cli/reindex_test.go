package cli_test

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/msggate/msggate/internal/cli"
	"github.com/msggate/msggate/internal/gateway"
	"github.com/msggate/msggate/internal/gateway/gatewaytest"
	"github.com/msggate/msggate/internal/search"
	"github.com/msggate/msggate/internal/search/bleveindex"
)

// Ensure `reindex` builds from the store an index that answers what the index kept by the
// write path answers (the demo data, with its revoke, delete for everyone and delete for
// me), that running it again changes nothing, and that -resume continues after the recorded
// conversation.
func TestReindexMatchesTheLiveIndex(t *testing.T) {
	g := gatewaytest.Start(t)
	live := t.TempDir()
	runCommand(t, cli.Seed, append(g.StoreFlags(), "-data-dir", live)...)
	built := t.TempDir()
	out, progress := runCommand(t, cli.Reindex, append(g.StoreFlags(), "-data-dir", built)...)
	// The demo data: 6 + 2 + 260 messages, less the revoked and the deleted for everyone.
	if !strings.Contains(out, "3 conversations, 266 messages indexed") {
		t.Errorf("summary %q", out)
	}
	if !strings.Contains(progress, "100%") {
		t.Errorf("no finished progress bar in %q", progress)
	}
	if _, err := os.Stat(filepath.Join(built, "search-reindex-position")); !os.IsNotExist(err) {
		t.Errorf("a finished run left its position behind: %v", err)
	}
	runCommand(t, cli.Reindex, append(g.StoreFlags(), "-data-dir", built)...)
	// A run that stopped after the first conversation, resumed.
	if err := os.WriteFile(filepath.Join(built, "search-reindex-position"), []byte("sg_friends\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	out, _ = runCommand(t, cli.Reindex, append(g.StoreFlags(), "-data-dir", built, "-resume")...)
	if !strings.Contains(out, "2 conversations") {
		t.Errorf("resumed summary %q", out)
	}

	open := func(dir string) search.Engine {
		x, err := bleveindex.Open(gateway.SearchDir(dir), bleveindex.Options{})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = x.Close() })
		return x
	}
	a, b := open(live), open(built)
	scopes := []search.Scope{{ConversationID: "sg_friends"}, {ConversationID: "si_alice_bob"}, {ConversationID: "si_alice_carol"}}
	for _, q := range []search.Request{
		{Viewer: "bob", Text: "message"},
		{Viewer: "bob", Text: "group message 101"},
		{Viewer: "alice", Text: "lake"},
		{Viewer: "bob", Text: "the"},
		{Viewer: "alice", Text: "the"},
	} {
		q.Scopes, q.First = scopes, 100
		ra, err := a.Search(t.Context(), q)
		if err != nil {
			t.Fatal(err)
		}
		rb, err := b.Search(t.Context(), q)
		if err != nil {
			t.Fatal(err)
		}
		if ra.Count != rb.Count || !slices.EqualFunc(ra.Hits, rb.Hits, func(x, y search.Hit) bool { return x.Key == y.Key }) {
			t.Errorf("%s searching %q: the live index finds %d %v, the rebuilt one %d %v", q.Viewer, q.Text, ra.Count, ra.Hits, rb.Count, rb.Hits)
		}
		if q.Text == "message" && ra.Count != 258 {
			t.Errorf("the group's messages found: %d, want 258 (260 less a revoked and a deleted one)", ra.Count)
		}
	}
}
