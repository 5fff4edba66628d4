package bleveindex

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/msggate/msggate/internal/search"
	"github.com/msggate/msggate/internal/search/searchtest"
)

// TestConformance runs the engine suite on an index on disk, with a count limit low enough
// for -race; TestConformanceFullCount keeps one run at the real limit.
func TestConformance(t *testing.T) {
	searchtest.Run(t, func(t *testing.T) search.Engine {
		x, err := Open(t.TempDir()+"/index", Options{CountLimit: 500})
		if err != nil {
			t.Fatal(err)
		}
		return x
	})
}

// TestConformanceFullCount runs the suite at the real count limit, ten thousand.
func TestConformanceFullCount(t *testing.T) {
	searchtest.Run(t, func(t *testing.T) search.Engine {
		x, err := Open(t.TempDir()+"/index", Options{})
		if err != nil {
			t.Fatal(err)
		}
		return x
	})
}

// TestConformanceNarrowWindows runs the suite with every page looked for through windows of
// send times from a millisecond wide, as pages of a large index are.
func TestConformanceNarrowWindows(t *testing.T) {
	searchtest.Run(t, func(t *testing.T) search.Engine {
		x, err := Open(t.TempDir()+"/index", Options{CountLimit: 500, FirstWindow: 1, DirectScan: 1})
		if err != nil {
			t.Fatal(err)
		}
		return x
	})
}

// TestReopenKeepsIndex checks that what was indexed is found after the index is closed and
// opened again (a gateway restart), and that a closed index answers ErrUnavailable.
func TestReopenKeepsIndex(t *testing.T) {
	dir := t.TempDir() + "/index"
	x, err := Open(dir, Options{})
	if err != nil {
		t.Fatal(err)
	}
	d := search.Doc{Key: search.Key{ConversationID: "c1", Seq: 1}, SenderID: "alice", ContentType: 101, SendTime: 1000, Text: "persisted 北京"}
	if err := x.Apply(t.Context(), []search.Change{{Put: &d}}); err != nil {
		t.Fatal(err)
	}
	if err := x.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := x.Search(t.Context(), search.Request{Text: "persisted", Scopes: []search.Scope{{ConversationID: "c1"}}, First: 1}); !errors.Is(err, search.ErrUnavailable) {
		t.Errorf("search on a closed index: %v, want ErrUnavailable", err)
	}
	x, err = Open(dir, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer x.Close()
	r, err := x.Search(t.Context(), search.Request{Text: "北京", Scopes: []search.Scope{{ConversationID: "c1"}}, First: 1})
	if err != nil || len(r.Hits) != 1 {
		t.Fatalf("after reopening: %+v, %v; want the message", r, err)
	}
	if !strings.Contains(r.Hits[0].Highlight, "<mark>") {
		t.Errorf("highlight %q marks nothing", r.Hits[0].Highlight)
	}
}

// Ensure a second process opening an index in use is told so within a few seconds, instead of
// waiting on the index's lock for ever, and that two opens within one process share the index.
func TestOpenWhileInUse(t *testing.T) {
	if dir := os.Getenv("BLEVEINDEX_HOLD"); dir != "" {
		x, err := Open(dir, Options{})
		if err != nil {
			t.Fatal(err)
		}
		fmt.Println("held")
		_, _ = io.ReadAll(os.Stdin) // until the parent lets go
		_ = x.Close()
		return
	}
	dir := t.TempDir() + "/index"
	cmd := exec.Command(os.Args[0], "-test.run=^TestOpenWhileInUse$")
	cmd.Env = append(os.Environ(), "BLEVEINDEX_HOLD="+dir)
	stdin, _ := cmd.StdinPipe()
	stdout, _ := cmd.StdoutPipe()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	line, _ := bufio.NewReader(stdout).ReadString('\n')
	if line != "held\n" {
		t.Fatalf("the holding process said %q", line)
	}
	began := time.Now()
	_, err := Open(dir, Options{})
	if !errors.Is(err, ErrInUse) {
		t.Errorf("Open of an index another process holds: %v, want ErrInUse", err)
	}
	if waited := time.Since(began); waited > 2*lockWait {
		t.Errorf("the refused Open took %v", waited)
	}
	_ = stdin.Close()
	_ = cmd.Wait()

	// Within one process: both handles are the same index, and one Close leaves the other open.
	a, err := Open(dir, Options{})
	if err != nil {
		t.Fatal(err)
	}
	b, err := Open(dir, Options{})
	if err != nil {
		t.Fatalf("a second Open in the same process: %v", err)
	}
	ctx := context.Background()
	doc := search.Doc{Key: search.Key{ConversationID: "si_a_b", Seq: 1}, SenderID: "a", ContentType: 101, SendTime: 1, Text: "shared kiwi"}
	if err := a.Apply(ctx, []search.Change{{Put: &doc}}); err != nil {
		t.Fatal(err)
	}
	_ = a.Close()
	res, err := b.Search(ctx, search.Request{Viewer: "b", Text: "kiwi", Scopes: []search.Scope{{ConversationID: "si_a_b"}}, First: 10})
	if err != nil || len(res.Hits) != 1 {
		t.Errorf("the second handle after the first closed: %+v, %v; want the one hit", res, err)
	}
	_ = b.Close()
}
