package cli_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/msggate/msggate/internal/cli"
	"github.com/msggate/msggate/internal/devtools/bench"
	"github.com/msggate/msggate/internal/gateway/gatewaytest"
	"github.com/msggate/msggate/internal/im"
)

// checkImported asserts that conversation k of a generated import file (bench.WriteImportFile,
// interleaved) holds exactly its n messages, each at its seq in file order.
func checkImported(t *testing.T, g *gatewaytest.Gateway, conversations, n int) {
	t.Helper()
	ctx := context.Background()
	convs := make([]string, conversations)
	var docIDs []string
	for k := range convs {
		convs[k], _ = im.SingleConversationID(bench.ImportPeer(k), bench.ImportHub(k))
		for seq := int64(1); seq <= int64(n); seq += 100 {
			docIDs = append(docIDs, im.DocID(convs[k], seq))
		}
	}
	seqs, err := g.Store.FindConversationSeqs(ctx, convs)
	if err != nil {
		t.Fatal(err)
	}
	chunks, err := g.Store.FindChunks(ctx, docIDs)
	if err != nil {
		t.Fatal(err)
	}
	byID := map[string]*im.Chunk{}
	for i, id := range docIDs {
		byID[id] = chunks[i]
	}
	for k, conv := range convs {
		if got := seqs[conv].MaxSeq; got != int64(n) {
			t.Fatalf("%s: max seq %d, want %d", conv, got, n)
		}
		for i := range n {
			seq := int64(i + 1)
			c := byID[im.DocID(conv, seq)]
			var slot *im.Slot
			if c != nil {
				slot = c.Slot(seq)
			}
			if want := fmt.Sprintf("gen-%d-%d", k, i); slot == nil || slot.Msg == nil || slot.Msg.ClientMsgID != want {
				t.Fatalf("%s seq %d: %+v, want message %s", conv, seq, slot, want)
			}
		}
		if c := byID[im.DocID(conv, int64(n))]; c.Slot(int64(n)+1) != nil && c.Slot(int64(n)+1).Msg != nil {
			t.Fatalf("%s: a message past seq %d: %+v", conv, n, c.Slot(int64(n)+1).Msg)
		}
	}
}

// Ensure an import whose batches each touch hundreds of conversations completes on FerretDB
// with every message at its seq: a file ordered by time over 500 conversations, two messages
// each, is stored in two batches of 250 conversations (before, a batch over 100 conversations
// timed out in raising their max seqs).
func TestImportManyConversationsPerBatch(t *testing.T) {
	g := gatewaytest.Start(t)
	const conversations, per = 500, 2
	out, path := importGenerated(t, g, conversations, per)
	if want := "1000 lines: 1000 stored, 0 already there"; !strings.Contains(out, want) {
		t.Fatalf("summary %q, want %q", out, want)
	}
	checkImported(t, g, conversations, per)
	if _, err := os.Stat(path + ".import-position"); !os.IsNotExist(err) {
		t.Errorf("a finished import leaves its position file: %v", err)
	}
}

// cancelAfter is an import's stderr that cancels the import after its nth progress update.
type cancelAfter struct {
	mu     sync.Mutex
	n      int
	cancel context.CancelFunc
	buf    strings.Builder
}

func (w *cancelAfter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if bytes.HasPrefix(p, []byte("\r[")) {
		if w.n--; w.n == 0 {
			w.cancel()
		}
	}
	return w.buf.Write(p)
}

// Ensure an import stopped half-way records how far it stored, and -resume continues after
// that without storing anything twice, even what the stopped run stored past its recorded
// position.
func TestImportResumesWithoutDuplicates(t *testing.T) {
	defer cli.SetImportWindow(500)()
	g := gatewaytest.Start(t)
	const conversations, per = 30, 50
	path := filepath.Join(t.TempDir(), "history.jsonl")
	var b bytes.Buffer
	if err := bench.WriteImportFile(&b, bench.ImportFileOptions{Messages: conversations * per, Conversations: conversations}); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, b.Bytes(), 0o600); err != nil {
		t.Fatal(err)
	}
	lines := strings.SplitAfter(b.String(), "\n")
	args := append(g.StoreFlags(), path)

	// Stopped (as by a signal) while the third window of 500 lines is stored: the first two
	// are, and the position says so.
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	stderr := &cancelAfter{n: 2, cancel: cancel}
	var stdout bytes.Buffer
	if err := cli.Import(ctx, args, &stdout, stderr); err == nil {
		t.Fatalf("the stopped import succeeded: %s", stdout.String())
	}
	if !strings.Contains(stderr.buf.String(), "stored through line 1000; run again with -resume") {
		t.Errorf("stderr of the stopped import: %q", stderr.buf.String())
	}
	pos, err := os.ReadFile(path + ".import-position")
	if err != nil {
		t.Fatal(err)
	}
	offset := len(strings.Join(lines[:1000], ""))
	if want := fmt.Sprintf(`{"line":1000,"offset":%d}`, offset); strings.TrimSpace(string(pos)) != want {
		t.Fatalf("position %s, want %s", pos, want)
	}
	// A run killed half-way through a window may have stored part of it past the position.
	var partial []*im.Message
	for _, line := range lines[1000:1200] {
		var m im.Message
		if err := json.Unmarshal([]byte(line), &m); err != nil {
			t.Fatal(err)
		}
		partial = append(partial, &m)
	}
	if _, err := g.Ingest.Ingest(context.Background(), partial); err != nil {
		t.Fatal(err)
	}

	out, progress := runCommand(t, cli.Import, append(g.StoreFlags(), "-resume", path)...)
	if !strings.Contains(progress, "resuming after line 1000") {
		t.Errorf("progress of the resumed import: %q", progress)
	}
	var lineCount, stored, already int
	if _, err := fmt.Sscanf(out, "%d lines: %d stored, %d already there", &lineCount, &stored, &already); err != nil {
		t.Fatalf("summary %q: %v", out, err)
	}
	if lineCount != 500 || stored+already != 500 || already < 200 {
		t.Errorf("resumed: %q, want the last 500 lines, 200 or more of them already there", out)
	}
	checkImported(t, g, conversations, per)
	if _, err := os.Stat(path + ".import-position"); !os.IsNotExist(err) {
		t.Errorf("a finished import leaves its position file: %v", err)
	}
}

// Ensure what an import stores is what a gateway serves afterwards: 3,000 messages over 300
// conversations (ten each, senders alternating), imported on FerretDB and redis-server while
// the gateway runs, read back through GraphQL: each conversation's messages at their seqs in
// file order, its last message, and both ends' read seqs, unread counts and lists.
func TestImportedHistoryIsServedByTheGateway(t *testing.T) {
	g := gatewaytest.Start(t)
	const conversations, per = 300, 10
	out, _ := importGenerated(t, g, conversations, per)
	if want := "3000 lines: 3000 stored, 0 already there"; !strings.Contains(out, want) {
		t.Fatalf("summary %q, want %q", out, want)
	}
	seqs := make([]int64, per)
	for i := range seqs {
		seqs[i] = int64(i + 1)
	}
	for _, k := range []int{0, 1, 149, 299} {
		peer, hub := bench.ImportPeer(k), bench.ImportHub(k)
		conv, _ := im.SingleConversationID(peer, hub)
		// The peer sent the messages at odd seqs, the hub those at even ones, the last at 10.
		for user, want := range map[string][2]int64{peer: {per - 1, 1}, hub: {per, 0}} {
			c := g.Conversation(g.Token(user), conv)
			if c.MaxSeq != per || c.ReadSeq != want[0] || c.UnreadCount != want[1] || c.LastMessage == nil || c.LastMessage.Seq != per {
				t.Errorf("%s as %s: %+v, want max seq %d, read seq %d, unread %d, last message at %d", conv, user, c, per, want[0], want[1], per)
			}
		}
		var got struct{ Messages []gatewaytest.Message }
		g.Query(g.Token(peer), gatewaytest.MessagesQuery, map[string]any{"c": conv, "s": seqs}, &got)
		for i, m := range got.Messages {
			if m.Content == nil || !strings.HasPrefix(*m.Content, fmt.Sprintf("message %d of", i)) {
				t.Errorf("%s seq %d: %+v, want message %d", conv, m.Seq, m, i)
			}
		}
	}
	// hub01 is at the other end of conversations 1, 51, ..., 251.
	var v gatewaytest.Viewer
	g.Query(g.Token(bench.ImportHub(1)), gatewaytest.ViewerQuery, map[string]any{"first": 20}, &v)
	if n := len(v.Viewer.Conversations.Nodes); n != conversations/50 || v.Viewer.TotalUnread != 0 {
		t.Errorf("hub01's list: %d conversations, %d unread; want %d, 0", n, v.Viewer.TotalUnread, conversations/50)
	}
	for _, c := range v.Viewer.Conversations.Nodes {
		if c.MaxSeq != per || c.LastMessage == nil || c.LastMessage.Seq != per {
			t.Errorf("hub01's list: %+v, want its last message at %d", c, per)
		}
	}
	g.Query(g.Token(bench.ImportPeer(1)), gatewaytest.ViewerQuery, map[string]any{"first": 20}, &v)
	if len(v.Viewer.Conversations.Nodes) != 1 || v.Viewer.TotalUnread != 1 {
		t.Errorf("imp000001's list: %+v, want its one conversation with 1 unread", v.Viewer)
	}
}

// importGenerated imports the bench's file of conversations*per messages in time order (message
// i in conversation i mod conversations) into g's store, and returns the command's output and
// the file's path.
func importGenerated(t *testing.T, g *gatewaytest.Gateway, conversations, per int) (out, path string) {
	t.Helper()
	path = filepath.Join(t.TempDir(), "by-time.jsonl")
	var b bytes.Buffer
	if err := bench.WriteImportFile(&b, bench.ImportFileOptions{Messages: conversations * per, Conversations: conversations}); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, b.Bytes(), 0o600); err != nil {
		t.Fatal(err)
	}
	out, _ = runCommand(t, cli.Import, append(g.StoreFlags(), path)...)
	return out, path
}

// Ensure the flags of a command with a positional argument are read after it too, as an
// operator writes `msggate import FILE -data-dir D`, and that after "--" a name that looks
// like a flag is the file (here it does not exist, so the import says so).
func TestImportReadsFlagsAfterTheFile(t *testing.T) {
	g := gatewaytest.Start(t)
	path := filepath.Join(t.TempDir(), "after.jsonl")
	var b bytes.Buffer
	if err := bench.WriteImportFile(&b, bench.ImportFileOptions{Messages: 6, Conversations: 2}); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, b.Bytes(), 0o600); err != nil {
		t.Fatal(err)
	}
	out, _ := runCommand(t, cli.Import, append([]string{path}, g.StoreFlags()...)...)
	if want := "6 lines: 6 stored, 0 already there"; !strings.Contains(out, want) {
		t.Fatalf("summary %q, want %q", out, want)
	}
	checkImported(t, g, 2, 3)

	var stdout, stderr bytes.Buffer
	args := append(g.StoreFlags(), "--", "-resume")
	if err := cli.Import(context.Background(), args, &stdout, &stderr); err == nil || !strings.Contains(err.Error(), "-resume") {
		t.Errorf("import of the file named -resume after --: %v", err)
	}
}
