package cli

import (
	"context"
	"fmt"
	"io"
	"time"

	"github.com/msggate/msggate/internal/gateway"
	"github.com/msggate/msggate/internal/im"
	"github.com/msggate/msggate/internal/ingest"
)

// The demo data set: four users, two single chats, and a group whose conversation is past 250
// messages so that its chunks roll over, with a few messages revoked and deleted. Every message
// has a fixed client message ID, so seeding twice stores nothing twice.
const (
	// DemoUser is the user whose demo token serve prints.
	DemoUser  = "alice"
	demoGroup = "friends"
	// DemoQuery is the example printed at start-up; the tests run it against seeded data.
	DemoQuery = `{ viewer { totalUnread conversations(first: 5) { nodes { id unreadCount lastMessage { seq sendID content } } } } }`
)

var demoLines = []string{
	"hi! are we still on for tonight?",
	"yes, 8pm at the usual place",
	"can you bring the board game?",
	"sure, which one?",
	"the one with the trains",
	"perfect, see you there",
}

// Seed: msggate seed
func Seed(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	m, _, err := openForCommand(ctx, "seed", args, stderr, nil)
	if err != nil {
		return err
	}
	defer m.Close()
	if err := seedDemo(ctx, m, stdout); err != nil {
		return err
	}
	fmt.Fprintf(stdout, "demo data stored; try it as %s with the query:\n  %s\n", DemoUser, DemoQuery)
	return nil
}

// seedDemo stores the demo data set through the ingest path. progress receives one line per
// step.
func seedDemo(ctx context.Context, m *gateway.Gateway, progress io.Writer) error {
	members := []im.GroupMember{
		{UserID: "alice", Role: im.RoleOwner},
		{UserID: "bob", Role: im.RoleAdmin},
		{UserID: "carol", Role: im.RoleMember},
		{UserID: "dave", Role: im.RoleMember},
	}
	if err := m.Ledger.SetGroup(ctx, demoGroup, members); err != nil {
		return err
	}
	fmt.Fprintf(progress, "group %s: alice (owner), bob (admin), carol, dave\n", demoGroup)

	base := time.Date(2026, 11, 1, 9, 0, 0, 0, time.UTC).UnixMilli()
	var msgs []*im.Message
	add := func(id, from, to, group, text string) {
		msgs = append(msgs, &im.Message{SendID: from, RecvID: to, GroupID: group, ClientMsgID: id,
			ContentType: 101, Content: text, SendTime: base + int64(len(msgs))*60_000})
	}
	for i, line := range demoLines {
		from, to := "alice", "bob"
		if i%2 == 1 {
			from, to = to, from
		}
		add(fmt.Sprintf("demo-ab-%d", i), from, to, "", line)
	}
	add("demo-ac-0", "carol", "alice", "", "did you get my photos?")
	add("demo-ac-1", "carol", "alice", "", "the ones from the lake")
	people := []string{"alice", "bob", "carol", "dave"}
	for i := 0; i < 260; i++ {
		add(fmt.Sprintf("demo-g-%d", i), people[i%len(people)], "", demoGroup, fmt.Sprintf("group message %d", i+1))
	}
	for start := 0; start < len(msgs); start += 100 {
		batch := msgs[start:min(start+100, len(msgs))]
		if _, err := m.Ingest.Ingest(ctx, batch); err != nil {
			return err
		}
		fmt.Fprintf(progress, "messages: %d/%d\n", start+len(batch), len(msgs))
	}

	// A revoked message and a message deleted for everyone in the group, one deleted by bob
	// for himself in his chat with alice.
	group, _ := im.ParseConversationID("sg_" + demoGroup)
	if _, err := m.Ingest.Revoke(ctx, ingest.Actor{UserID: "alice", Role: im.RoleOwner}, group, 101, base); err != nil {
		return err
	}
	if _, err := m.Ingest.Delete(ctx, ingest.Actor{UserID: "bob", Role: im.RoleAdmin}, group, []int64{102}, true); err != nil {
		return err
	}
	single, _ := im.ParseConversationID("si_alice_bob")
	if _, err := m.Ingest.Delete(ctx, ingest.Actor{UserID: "bob"}, single, []int64{3}, false); err != nil {
		return err
	}
	fmt.Fprintln(progress, "revoked sg_friends seq 101, deleted seq 102 for everyone and si_alice_bob seq 3 for bob")
	return nil
}
