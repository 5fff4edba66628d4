package gateway_test

import (
	"testing"

	"github.com/msggate/msggate/internal/gateway/gatewaytest"
	"github.com/msggate/msggate/internal/playground"
)

// Ensure the query GraphiQL shows on a first visit without a demo token runs, for any user,
// against the schema the gateway serves, so the first thing a user runs is not a validation
// error. The one shown with the demo token reads the demo data too: the embedded default's
// tests run it (internal/cli).
func TestGraphiQLDefaultQueryIsValid(t *testing.T) {
	g := gatewaytest.Start(t)
	alice := g.Token("alice")
	g.SendGQL(alice, map[string]any{"recvID": "bob", "contentType": 101, "content": "hi"})
	var out struct {
		Viewer struct {
			UserID        string
			Conversations struct {
				Nodes []struct {
					ID          string
					LastMessage struct{ Content string }
				}
			}
		}
	}
	g.Query(alice, playground.DefaultQuery, nil, &out)
	if v := out.Viewer; v.UserID != "alice" || len(v.Conversations.Nodes) != 1 || v.Conversations.Nodes[0].LastMessage.Content != "hi" {
		t.Errorf("the default query returned %+v", v)
	}
}
