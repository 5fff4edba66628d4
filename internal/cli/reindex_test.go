package cli_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/msggate/msggate/internal/cli"
	"github.com/msggate/msggate/internal/gateway"
	"github.com/msggate/msggate/internal/gateway/gatewaytest"
	"github.com/msggate/msggate/internal/openim/openimtest"
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

// Ensure `reindex -openim` builds the index from an OpenIM deployment's chunks, read-only:
// every chat conversation's messages (those only OpenIM's message cache holds yet too), none
// of a revoked or deleted-for-everyone one, a delete for one user hidden for that user only,
// no notification conversation; that a rerun changes nothing, and -resume continues after the
// recorded conversation.
func TestReindexOpenIM(t *testing.T) {
	g := gatewaytest.StartOpenIM(t, nil)
	const single, team = "si_alice_bob", "sg_team"
	for _, u := range []string{"alice", "bob"} {
		g.IM.AddGroupMember("team", u, openimtest.RoleMember)
	}
	var groupMsgs []*openimtest.MsgData
	for i := range 230 {
		groupMsgs = append(groupMsgs, openimtest.Group("alice", "team", openimtest.ContentText, openimtest.TextContent(fmt.Sprint("group note ", i))))
	}
	g.IM.Send(team, groupMsgs...)
	text := func(s string) *openimtest.MsgData {
		return openimtest.Single("alice", "bob", openimtest.ContentText, openimtest.TextContent(s))
	}
	seqs := g.IM.Send(single, text("note one"), text("note revoked"), text("note deleted"), text("note hidden from bob"))
	seqs = append(seqs, g.IM.SendInFlight(single, text("note in flight"))...)
	g.IM.Revoke(single, seqs[1], openimtest.Revoke{UserID: "alice"})
	g.IM.DeleteForEveryone(single, seqs[2])
	g.IM.DeleteForMe(single, "bob", seqs[3])
	g.IM.Send("n_alice_bob", openimtest.Single("alice", "bob", openimtest.ContentText, openimtest.TextContent("note in a notification conversation")))
	before := g.IM.Snapshot()

	dir := t.TempDir()
	flags := []string{"-openim", "-mongo-uri", g.Config.MongoURI, "-mongo-db", g.Config.MongoDatabase,
		"-openim-redis-url", g.Config.OpenIM.RedisURL, "-openim-secret", g.IM.Secret, "-redis-url", g.Config.RedisURL, "-data-dir", dir}
	out, progress := runCommand(t, cli.Reindex, flags...)
	wantSummary := fmt.Sprintf("2 conversations, %d messages indexed", 230+3)
	if !strings.Contains(out, wantSummary) || !strings.Contains(progress, "100%") {
		t.Errorf("summary %q, progress %q; want %q and a finished bar", out, progress, wantSummary)
	}
	out, _ = runCommand(t, cli.Reindex, flags...)
	if !strings.Contains(out, wantSummary) {
		t.Errorf("rerun summary %q", out)
	}
	if err := os.WriteFile(filepath.Join(dir, "search-reindex-position"), []byte("sg_team\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	out, _ = runCommand(t, cli.Reindex, append(flags, "-resume")...)
	if !strings.Contains(out, "1 conversations, 3 messages indexed") {
		t.Errorf("resumed summary %q", out)
	}
	if diff := openimtest.Diff(before, g.IM.Snapshot()); len(diff) > 0 {
		t.Fatalf("reindex changed the deployment:\n%s", strings.Join(diff, "\n"))
	}

	x, err := bleveindex.Open(gateway.SearchDir(dir), bleveindex.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer x.Close()
	scopes := []search.Scope{{ConversationID: team}, {ConversationID: single}, {ConversationID: "n_alice_bob"}}
	for _, c := range []struct {
		viewer, text string
		want         int
	}{
		{"bob", "group note", 230},
		{"alice", "note", 230 + 3},
		{"bob", "note", 230 + 2},
		{"alice", "revoked", 0},
		{"alice", "deleted", 0},
		{"alice", "flight", 1},
		{"alice", "notification", 0},
	} {
		res, err := x.Search(t.Context(), search.Request{Viewer: c.viewer, Text: c.text, Scopes: scopes, First: 10})
		if err != nil {
			t.Fatal(err)
		}
		if res.Count != c.want {
			t.Errorf("%s searching %q in the rebuilt index: %d, want %d", c.viewer, c.text, res.Count, c.want)
		}
	}
}

// cancelOnWrite is stderr that cancels the run once a line containing at is written.
type cancelOnWrite struct {
	strings.Builder
	at     string
	cancel context.CancelFunc
}

func (w *cancelOnWrite) Write(p []byte) (int, error) {
	if strings.Contains(string(p), w.at) {
		w.cancel()
	}
	return w.Builder.Write(p)
}

// Ensure a reindex interrupted (SIGINT cancels its context) says so, and how to go on, rather
// than end with the store's "unavailable: context canceled".
func TestReindexInterruptedSaysSo(t *testing.T) {
	g := gatewaytest.Start(t)
	dir := t.TempDir()
	runCommand(t, cli.Seed, append(g.StoreFlags(), "-data-dir", dir)...)
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	// Cancelled once the run is measured, so the run itself is what is interrupted.
	stderr := &cancelOnWrite{at: "indexing ", cancel: cancel}
	var stdout strings.Builder
	err := cli.Reindex(ctx, append(g.StoreFlags(), "-data-dir", dir), &stdout, stderr)
	if err == nil || !strings.Contains(err.Error(), "interrupted") || strings.Contains(err.Error(), "unavailable") {
		t.Errorf("an interrupted reindex ends with %v, want it to say it was interrupted\n%s", err, stderr.String())
	}
	if !strings.Contains(err.Error(), "run it again") {
		t.Errorf("an interrupted reindex that finished no conversation says %q, not how to go on", err)
	}
}
