package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// storeFlags points a subcommand at the test gateway's stores.
func (g *gateway) storeFlags() []string {
	return []string{"-mongo-uri", g.m.Config.MongoURI, "-mongo-db", g.m.Config.MongoDatabase, "-redis-url", g.m.Config.RedisURL}
}

func (g *gateway) runCommand(args ...string) (stdout, stderr string) {
	g.t.Helper()
	var out, errb bytes.Buffer
	if err := run(context.Background(), args, &out, &errb); err != nil {
		g.t.Fatalf("%v: %v\n%s", args, err, errb.String())
	}
	return out.String(), errb.String()
}

// Ensure `seed` stores the demo data, the example query printed at start-up returns it, and
// seeding again stores nothing twice.
func TestSeedThenExampleQuery(t *testing.T) {
	g := startGateway(t)
	g.runCommand(append([]string{"seed"}, g.storeFlags()...)...)
	check := func() {
		t.Helper()
		var v viewerJSON
		g.query(g.token(demoUser), demoQuery, nil, &v)
		nodes := v.Viewer.Conversations.Nodes
		if len(nodes) != 3 || nodes[0].ID != "sg_friends" || nodes[0].LastMessage == nil || nodes[0].LastMessage.Seq != 260 {
			t.Fatalf("example query: %+v", v.Viewer)
		}
		if v.Viewer.TotalUnread == 0 {
			t.Errorf("the demo user should have unread messages: %+v", v.Viewer)
		}
		got := g.statuses(g.token("bob"), "sg_friends", 100, 101, 102)
		if strings.Join(got, " ") != "OK REVOKED DELETED" {
			t.Errorf("demo group seqs 100..102 read %v", got)
		}
	}
	check()
	g.runCommand(append([]string{"seed"}, g.storeFlags()...)...)
	check()
}

// Ensure `group` sets a member list with roles and refuses a malformed one.
func TestGroupCommand(t *testing.T) {
	g := startGateway(t)
	out, _ := g.runCommand(append([]string{"group", "-id", "book-club", "-members", "alice:owner,bob"}, g.storeFlags()...)...)
	if !strings.Contains(out, "2 members") {
		t.Errorf("output %q", out)
	}
	g.sendGQL(g.token("bob"), map[string]any{"groupID": "book-club", "contentType": 101, "content": "hi"})
	if code := g.errorCode(g.token("carol"), convQuery, map[string]any{"id": "sg_book-club"}); code != "FORBIDDEN" {
		t.Errorf("carol: %q", code)
	}
	err := run(context.Background(), append([]string{"group", "-id", "x", "-members", "alice:king"}, g.storeFlags()...), &bytes.Buffer{}, &bytes.Buffer{})
	if err == nil || !strings.Contains(err.Error(), "role") {
		t.Errorf("a bad role: %v", err)
	}
}

// Ensure `import` stores a 10,000-message file through the ingest path with a progress bar and
// a summary, rejects bad lines without stopping, and stores nothing new when run again.
func TestImportTenThousandMessages(t *testing.T) {
	g := startGateway(t)
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
	args := append(append([]string{"import"}, g.storeFlags()...), path)
	out, progress := g.runCommand(args...)
	if want := "10002 lines: 10000 stored, 0 already there, 0 not stored (transient), 2 rejected"; !strings.Contains(out, want) {
		t.Fatalf("summary %q, want %q", out, want)
	}
	if !strings.Contains(progress, "100%") || !strings.Contains(progress, "line 4002") {
		t.Errorf("progress and rejected lines on stderr: %q", progress[max(0, len(progress)-400):])
	}
	out, _ = g.runCommand(args...)
	if want := "10002 lines: 0 stored, 10000 already there"; !strings.Contains(out, want) {
		t.Fatalf("second run: %q, want %q", out, want)
	}
	if c := g.conversation(g.token("alice"), "si_alice_u07"); c.MaxSeq != per || c.UnreadCount != per {
		t.Errorf("si_alice_u07 after two imports: %+v", c)
	}
}
