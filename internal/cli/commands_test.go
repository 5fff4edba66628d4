package cli_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/msggate/msggate/internal/cli"
	"github.com/msggate/msggate/internal/gateway/gatewaytest"
)

// command is a subcommand of package cli.
type command func(ctx context.Context, args []string, stdout, stderr io.Writer) error

// runCommand runs cmd with args, which must succeed, and returns what it printed.
func runCommand(t *testing.T, cmd command, args ...string) (stdout, stderr string) {
	t.Helper()
	var out, errb bytes.Buffer
	if err := cmd(context.Background(), args, &out, &errb); err != nil {
		t.Fatalf("%v: %v\n%s", args, err, errb.String())
	}
	return out.String(), errb.String()
}

// Ensure `seed` stores the demo data, the example query printed at start-up returns it, and
// seeding again stores nothing twice.
func TestSeedThenExampleQuery(t *testing.T) {
	g := gatewaytest.Start(t)
	runCommand(t, cli.Seed, g.StoreFlags()...)
	check := func() {
		t.Helper()
		var v gatewaytest.Viewer
		g.Query(g.Token(cli.DemoUser), cli.DemoQuery, nil, &v)
		nodes := v.Viewer.Conversations.Nodes
		if len(nodes) != 3 || nodes[0].ID != "sg_friends" || nodes[0].LastMessage == nil || nodes[0].LastMessage.Seq != 260 {
			t.Fatalf("example query: %+v", v.Viewer)
		}
		if v.Viewer.TotalUnread == 0 {
			t.Errorf("the demo user should have unread messages: %+v", v.Viewer)
		}
		got := g.Statuses(g.Token("bob"), "sg_friends", 100, 101, 102)
		if strings.Join(got, " ") != "OK REVOKED DELETED" {
			t.Errorf("demo group seqs 100..102 read %v", got)
		}
	}
	check()
	runCommand(t, cli.Seed, g.StoreFlags()...)
	check()
}

// Ensure `group` sets a member list with roles and refuses a malformed one.
func TestGroupCommand(t *testing.T) {
	g := gatewaytest.Start(t)
	out, _ := runCommand(t, cli.Group, append([]string{"-id", "book-club", "-members", "alice:owner,bob"}, g.StoreFlags()...)...)
	if !strings.Contains(out, "2 members") {
		t.Errorf("output %q", out)
	}
	g.SendGQL(g.Token("bob"), map[string]any{"groupID": "book-club", "contentType": 101, "content": "hi"})
	if code := g.ErrorCode(g.Token("carol"), gatewaytest.ConversationQuery, map[string]any{"id": "sg_book-club"}); code != "FORBIDDEN" {
		t.Errorf("carol: %q", code)
	}
	err := cli.Group(context.Background(), append([]string{"-id", "x", "-members", "alice:king"}, g.StoreFlags()...), &bytes.Buffer{}, &bytes.Buffer{})
	if err == nil || !strings.Contains(err.Error(), "role") {
		t.Errorf("a bad role: %v", err)
	}
}

// Ensure `import` stores a 10,000-message file through the ingest path with a progress bar and
// a summary, rejects bad lines without stopping, and stores nothing new when run again.
func TestImportTenThousandMessages(t *testing.T) {
	g := gatewaytest.Start(t)
	path := filepath.Join(t.TempDir(), "messages.jsonl")
	var b strings.Builder
	const convs, per = 20, 500
	// Grouped by conversation, oldest first, as an export of a message store comes.
	for i := 0; i < convs*per; i++ {
		m := map[string]any{
			"send_id": fmt.Sprintf("u%02d", i/per), "recv_id": "alice", "content_type": 101,
			"content": fmt.Sprintf("imported %d", i), "send_time": 1_700_000_000_000 + i,
		}
		if i%3 != 0 { // the rest get IDs derived from their line
			m["client_msg_id"] = fmt.Sprintf("imp-%d", i)
		}
		line, _ := json.Marshal(m)
		b.Write(line)
		b.WriteByte('\n')
		if i == 4000 {
			b.WriteString("{not json\n")
			b.WriteString(`{"send_id":"alice","recv_id":"alice","content":"to myself"}` + "\n")
		}
	}
	if err := os.WriteFile(path, []byte(b.String()), 0o600); err != nil {
		t.Fatal(err)
	}
	args := append(g.StoreFlags(), path)
	out, progress := runCommand(t, cli.Import, args...)
	if want := "10002 lines: 10000 stored, 0 already there, 0 not stored (transient), 2 rejected"; !strings.Contains(out, want) {
		t.Fatalf("summary %q, want %q", out, want)
	}
	if !strings.Contains(progress, "100%") || !strings.Contains(progress, "line 4002") {
		t.Errorf("progress and rejected lines on stderr: %q", progress[max(0, len(progress)-400):])
	}
	out, _ = runCommand(t, cli.Import, args...)
	if want := "10002 lines: 0 stored, 10000 already there"; !strings.Contains(out, want) {
		t.Fatalf("second run: %q, want %q", out, want)
	}
	if c := g.Conversation(g.Token("alice"), "si_alice_u07"); c.MaxSeq != per || c.UnreadCount != per {
		t.Errorf("si_alice_u07 after two imports: %+v", c)
	}
}
