package cli_test

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/msggate/msggate/internal/cli"
	"github.com/msggate/msggate/internal/gateway/gatewaytest"
)

// Ensure `import` reads OpenIM's own option keys, so that messages exported from OpenIM land
// where OpenIM put them: a notification (isNotNotification false) in the user's notification
// conversation, with a copy in the chat unless isSendMsg is false; a transient message
// (history false) nowhere.
func TestImportOpenIMOptions(t *testing.T) {
	g := gatewaytest.Start(t)
	path := filepath.Join(t.TempDir(), "export.jsonl")
	lines := `{"send_id":"sys","recv_id":"bob","content_type":1400,"content":"quiet","client_msg_id":"n1","options":{"isNotNotification":false,"isSendMsg":false}}
{"send_id":"sys","recv_id":"bob","content_type":1400,"content":"loud","client_msg_id":"n2","options":{"isNotNotification":false}}
{"send_id":"alice","recv_id":"bob","content_type":113,"content":"typing","client_msg_id":"t1","options":{"history":false}}
{"send_id":"alice","recv_id":"bob","content_type":101,"content":"hi","client_msg_id":"c1","options":{"isNotNotification":true}}
`
	if err := os.WriteFile(path, []byte(lines), 0o600); err != nil {
		t.Fatal(err)
	}
	out, _ := runCommand(t, cli.Import, append(g.StoreFlags(), path)...)
	if want := "4 lines: 3 stored, 0 already there, 1 not stored (transient), 0 rejected"; !strings.Contains(out, want) {
		t.Fatalf("summary %q, want %q", out, want)
	}
	bob := g.Token("bob")
	if c := g.Conversation(bob, "n_bob"); c.MaxSeq != 2 {
		t.Errorf("bob's notifications hold %d messages, want the 2 notifications", c.MaxSeq)
	}
	if c := g.Conversation(bob, "si_bob_sys"); c.MaxSeq != 1 || c.LastMessage == nil || *c.LastMessage.Content != "loud" {
		t.Errorf("the chat copy of the notification without isSendMsg false: %+v", c)
	}
	if c := g.Conversation(bob, "si_alice_bob"); c.MaxSeq != 1 || *c.LastMessage.Content != "hi" {
		t.Errorf("the chat message: %+v", c)
	}
}

// Ensure the commands that change msggate's own store, and token, refuse OpenIM mode before
// opening anything: msggate never writes to an OpenIM deployment and mints no OpenIM token.
func TestCommandsRefuseOpenIMMode(t *testing.T) {
	for name, tc := range map[string]struct {
		cmd  command
		args []string
	}{
		"import":    {cli.Import, []string{"export.jsonl"}},
		"group":     {cli.Group, []string{"-id", "g", "-members", "a"}},
		"seed":      {cli.Seed, nil},
		"retention": {cli.Retention, []string{"-days", "1"}},
		"token":     {cli.Token, []string{"-user", "u"}},
	} {
		var out, errb bytes.Buffer
		err := tc.cmd(context.Background(), append([]string{"-openim", "-data-dir", t.TempDir()}, tc.args...), &out, &errb)
		if err == nil || !strings.Contains(err.Error(), "-openim") {
			t.Errorf("%s -openim: %v %s", name, err, errb.String())
		}
	}
}
