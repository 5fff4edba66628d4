package graph

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/msggate/msggate/internal/devtools/graphqltest"
	"github.com/msggate/msggate/internal/history"
	"github.com/msggate/msggate/internal/im"
)

// Ensure a panic while one node's history is read (on a goroutine of the conversation list's
// own, where gqlgen's recovery does not reach) fails the page with an INTERNAL error at that
// node, as a resolver's panic would, and leaves the resolver answering the next request.
func TestConversationHistoryPanicIsAnInternalError(t *testing.T) {
	convs := &countingConversations{list: []im.SeqState{
		{ConversationID: "sg_one", MaxSeq: 3, LastTime: 2},
		{ConversationID: "sg_two", MaxSeq: 2, LastTime: 1},
	}}
	r := &Resolver{Conversations: convs, Chunks: chunksNowhere{},
		AdjustViews: func(_ context.Context, _ history.ChunkSource, _ string, views []im.MessageView) error {
			if len(views) > 0 && views[0].ConversationID == "sg_two" {
				panic("a bug in the dialect's adjustment")
			}
			return nil
		}}

	out := askResolver(t, r, LoaderOptions{}, `{ viewer { conversations { nodes { id history { messages { seq } } } } } }`)
	if out["data"] != nil && out["data"].(map[string]any)["viewer"] != nil {
		t.Errorf("data %v: want the page null, history is not nullable", out["data"])
	}
	errs, _ := out["errors"].([]any)
	if len(errs) != 1 {
		t.Fatalf("errors %v, want one", out["errors"])
	}
	e := errs[0].(map[string]any)
	path, _ := json.Marshal(e["path"])
	if graphqltest.ErrorCodes(out) != "INTERNAL" || e["message"] != "internal error" ||
		string(path) != `["viewer","conversations","nodes",1,"history"]` {
		t.Errorf("error %v, want INTERNAL \"internal error\" at the second node's history", e)
	}
	if strings.Contains(e["message"].(string), "dialect") {
		t.Errorf("the panic's value reached the client: %v", e)
	}

	out = askResolver(t, r, LoaderOptions{}, `{ viewer { conversations { nodes { id } } } }`)
	if out["errors"] != nil || len(out["data"].(map[string]any)["viewer"].(map[string]any)["conversations"].(map[string]any)["nodes"].([]any)) != 2 {
		t.Errorf("the next request answered %v", out)
	}
}
