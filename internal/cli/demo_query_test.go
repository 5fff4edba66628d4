package cli_test

import (
	"fmt"
	"os"
	"regexp"
	"strings"
	"testing"

	"github.com/msggate/msggate/internal/gateway/gatewaytest"
	"github.com/msggate/msggate/internal/playground"
)

// Ensure the query GraphiQL opens with on the embedded default (the one that comes with the
// demo token) answers on the demo data as its comments say: alice's three conversations, the
// demo group's first message sent at or after 11:00 (seq 113: the group's seq s was sent at
// 09:00 plus 7+s minutes) and the page around seq 101, revoked, with 102 deleted for everyone,
// and more history either way; and so does the README's copy of the jump.
func TestGraphiQLDemoQueryJumpsIntoTheDemoGroup(t *testing.T) {
	readme, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	var readmeJump string
	for _, m := range regexp.MustCompile("(?s)```graphql\n(.*?)```").FindAllStringSubmatch(string(readme), -1) {
		if strings.Contains(m[1], "aroundSeq") {
			readmeJump = m[1]
		}
	}
	if readmeJump == "" {
		t.Fatal("README.md shows no jump into history")
	}
	g, demoToken, stop := startServe(t, t.TempDir())
	defer stop()
	for _, q := range []string{playground.TokenQuery, readmeJump} {
		checkDemoJump(t, g, demoToken, q)
	}
}

func checkDemoJump(t *testing.T, g *gatewaytest.Gateway, demoToken, query string) {
	t.Helper()
	var out struct {
		Viewer struct {
			UserID        string
			Conversations struct{ Nodes []struct{ ID string } }
		}
		Friends struct {
			SeqAtTime *int64
			History   struct {
				HasMoreBefore, HasMoreAfter bool
				Messages                    []struct {
					Seq    int64
					Status string
				}
			}
		}
	}
	g.Query(demoToken, query, nil, &out)
	if strings.Contains(query, "viewer") && (out.Viewer.UserID != "alice" || len(out.Viewer.Conversations.Nodes) != 3) {
		t.Errorf("viewer: %+v, want alice's three demo conversations", out.Viewer)
	}
	if out.Friends.SeqAtTime == nil || *out.Friends.SeqAtTime != 113 {
		t.Errorf("seqAtTime: %v, want 113", out.Friends.SeqAtTime)
	}
	h := out.Friends.History
	if got := fmt.Sprint(h.Messages); got != "[{99 OK} {100 OK} {101 REVOKED} {102 DELETED} {103 OK}]" || !h.HasMoreBefore || !h.HasMoreAfter {
		t.Errorf("around seq 101: %s, more before %v, after %v; want 99..103 with 101 REVOKED, 102 DELETED, more both ways", got, h.HasMoreBefore, h.HasMoreAfter)
	}
}
