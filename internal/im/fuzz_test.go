package im

import (
	"encoding/json"
	"strings"
	"testing"
)

// The fuzz targets of what a client names in its requests: conversation IDs (msggate's and
// OpenIM's), chunk document IDs and sync tokens. Their seed corpus is below and in
// testdata/fuzz; scripts/fuzz runs each for a set time.

// FuzzParseConversationID: any string is refused or parsed into a conversation whose ID is the
// input, which the constructors of its kind build again, and whose chunks' doc IDs parse back.
func FuzzParseConversationID(f *testing.F) {
	for _, s := range []string{"si_alice_bob", "si_bob_alice", "si_a_a", "sg_team", "n_alice", "n_sg_team", "si_", "sg_",
		"n_", "si__b", "si_a_b_c", "si_a:b_c", "sg_" + strings.Repeat("x", 200), "\x00", "si_é_ü", "n_sg_"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, id string) {
		c, err := ParseConversationID(id)
		if err != nil {
			return
		}
		if c.ID != id {
			t.Fatalf("parsed %q as ID %q", id, c.ID)
		}
		var again string
		switch c.Kind {
		case SingleChat:
			again, err = SingleConversationID(c.UserIDs[1], c.UserIDs[0])
		case GroupChat:
			again, err = GroupConversationID(c.GroupID)
		case GroupNotification:
			again, err = GroupNotificationConversationID(c.GroupID)
		case UserNotification:
			again, err = UserNotificationConversationID(c.UserIDs[0])
		default:
			t.Fatalf("%q parsed as kind %v", id, c.Kind)
		}
		if err != nil || again != id {
			t.Fatalf("%q: its parts build %q, %v", id, again, err)
		}
		for _, seq := range []int64{1, 100, 101, MaxSeq} {
			conv, idx, err := ParseDocID(DocID(id, seq))
			if err != nil || conv != id || idx != ChunkIndex(seq) {
				t.Fatalf("doc ID of %q seq %d parses as %q %d, %v", id, seq, conv, idx, err)
			}
		}
	})
}

// FuzzParseOpenIMConversationID: any string is refused or parsed with itself as ID and one of
// OpenIM's kinds.
func FuzzParseOpenIMConversationID(f *testing.F) {
	for _, s := range []string{"si_1_2", "sg_g1", "g_g1", "sn_1_2", "n_1", "sg_", "x", ""} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, id string) {
		c, err := ParseOpenIMConversationID(id)
		if err != nil {
			return
		}
		if c.ID != id || (c.Kind == GroupChat) != (c.GroupID != "") {
			t.Fatalf("%q parsed as %+v", id, c)
		}
	})
}

// FuzzParseDocID: a parsed doc ID is exactly its conversation ID, ':' and its index.
func FuzzParseDocID(f *testing.F) {
	for _, s := range []string{"si_a_b:0", "sg_x:12", ":1", "a:", "a:-1", "a:01", "a:+1", "a:b:3", "a:9223372036854775808"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, docID string) {
		conv, idx, err := ParseDocID(docID)
		if err != nil {
			return
		}
		if idx < 0 || ChunkDocID(conv, idx) != docID {
			t.Fatalf("%q parsed as %q %d", docID, conv, idx)
		}
	})
}

// FuzzParseSyncToken: a parsed token prints as a token that parses to itself.
func FuzzParseSyncToken(f *testing.F) {
	for _, s := range []string{"abc.0", "abc.12", ".1", "a.", "a.-1", "a.b.3", "a.+3", "a.9223372036854775807", strings.Repeat("e", 70) + ".1",
		"abc.3,sg_g1=def.7", "abc.3,sg_g1=def.7,n_sg_g1=x.0", "abc.3,si_a_b=d.1", "abc.3,sg_g1=d.1,sg_g1=d.2", "abc.3,", "abc.3,sg_g1", "abc.3,sg_team_1=d.1,g_x=e.2", "abc.3,sg_a=b=c.1"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		// By msggate's own ID rules and by OpenIM's.
		for _, parse := range []func(string) (Conversation, error){ParseConversationID, ParseOpenIMConversationID} {
			tok, err := ParseSyncToken(s, parse)
			if err != nil {
				continue
			}
			if tok.User.Position < 0 || tok.User.Epoch == "" {
				t.Fatalf("%q parsed as %+v", s, tok)
			}
			for id, c := range tok.Groups {
				if conv, err := parse(id); err != nil || !conv.Kind.IsGroup() || c.Epoch == "" || c.Position < 0 {
					t.Fatalf("%q parsed with group entry %q=%+v", s, id, c)
				}
			}
			again, err := ParseSyncToken(tok.String(), parse)
			if err != nil || again.String() != tok.String() || len(again.Groups) != len(tok.Groups) {
				t.Fatalf("%q: %+v prints as %q, which parses as %+v, %v", s, tok, tok.String(), again, err)
			}
		}
	})
}

// FuzzMessageLine: a line of `msggate import` (a message as JSON, OpenIM's field names) is
// refused or placed only in conversations whose IDs parse and whose kind fits the message.
func FuzzMessageLine(f *testing.F) {
	for _, s := range []string{
		`{"send_id":"alice","recv_id":"bob","content_type":101,"content":"hi"}`,
		`{"send_id":"alice","group_id":"team","content":"x","options":{"isNotNotification":false,"isSendMsg":true}}`,
		`{"send_id":"alice","recv_id":"bob","group_id":"team"}`,
		`{"send_id":"","recv_id":"bob"}`, `{"send_id":"a","recv_id":"a"}`, `{"options":{"isHistory":false}}`, `[]`, `{`,
		`{"send_id":"alice","recv_id":"bob","seq":-5,"send_time":-1,"at_user_id_list":["x",""]}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, line []byte) {
		var m Message
		if json.Unmarshal(line, &m) != nil {
			return
		}
		placements, err := Categorise(&m)
		if err != nil {
			return
		}
		if len(placements) == 0 {
			t.Fatalf("%s: accepted with no placement", line)
		}
		for _, p := range placements {
			c, err := ParseConversationID(p.ConversationID)
			if err != nil {
				t.Fatalf("%s: placed in %q: %v", line, p.ConversationID, err)
			}
			if p.Message == nil {
				t.Fatalf("%s: a placement in %s without its message", line, c.ID)
			}
			if c.Kind == SingleChat && c.Peer(p.Message.SendID) == "" {
				t.Fatalf("%s: placed in single chat %s, which its sender %q is not in", line, c.ID, p.Message.SendID)
			}
		}
	})
}
