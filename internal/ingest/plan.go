package ingest

import (
	"crypto/rand"
	"encoding/hex"
	"sort"

	"github.com/msggate/msggate/internal/chunkstore"
	"github.com/msggate/msggate/internal/im"
	imsync "github.com/msggate/msggate/internal/sync"
)

// The decisions of the write path that need no store: where each message goes, which
// placements are copies of one message, how a batch is grouped for seq allocation and for
// writing, and what is recorded and announced afterwards. Ingest does the store work around
// them.

// placement is one stored message on its way through Ingest.
type placement struct {
	result, index int // position in the results
	conv          string
	msg           *im.Message
	dedup         bool // the client gave a message ID: remember its seq
	retry         bool // seq came from an earlier send of the same message
	// claimed: the placement's key (clientMsgKey) has a claim of its own, whose seq follows the
	// placement's; false for a seq found unowned (chunkstore.ClientMsgSeq), which is not.
	claimed bool
}

// clientMsgKey is what names the placement's message among earlier sends: its conversation,
// its sender and the sender's client message ID. Another sender's message with the same ID is
// another message.
func (p *placement) clientMsgKey() chunkstore.ClientMsgKey {
	return chunkstore.ClientMsgKey{ConversationID: p.conv, SendID: p.msg.SendID, ClientMsgID: p.msg.ClientMsgID}
}

// plan validates and categorises a batch and stamps what the server owns on each placement's
// copy of its message. It returns the results to fill, aligned with msgs, and the placements
// to store. A refused message refuses the batch, before anything is stored.
func plan(msgs []*im.Message, now int64) ([]Result, []*placement, error) {
	results := make([]Result, len(msgs))
	var stored []*placement
	for i, m := range msgs {
		if err := im.ValidateForSend(m); err != nil {
			return nil, nil, err
		}
		places, err := im.Categorise(m)
		if err != nil {
			return nil, nil, err
		}
		for j, p := range places {
			msg := *p.Message
			dedup := msg.ClientMsgID != ""
			prepare(&msg, p.ConversationID, now)
			results[i].Placements = append(results[i].Placements, Placed{ConversationID: p.ConversationID, Message: &msg})
			if p.Stored {
				stored = append(stored, &placement{result: i, index: j, conv: p.ConversationID, msg: &msg, dedup: dedup})
			}
		}
	}
	return results, stored, nil
}

// prepare stamps what the server owns on a message: its IDs, times, status and session type.
func prepare(m *im.Message, conv string, now int64) {
	m.ServerMsgID = newID()
	if m.ClientMsgID == "" {
		m.ClientMsgID = newID()
	}
	if m.SendTime == 0 {
		m.SendTime = now
	}
	m.CreateTime = now
	m.Status = im.StatusSent
	m.Seq = 0
	c, _ := im.ParseConversationID(conv)
	switch c.Kind {
	case im.SingleChat:
		m.SessionType = im.SessionSingle
	case im.GroupChat:
		m.SessionType = im.SessionGroup
	default:
		m.SessionType = im.SessionNotification
	}
}

func newID() string {
	b := make([]byte, 16)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// batchCopies marks later copies of one message within a batch (same conversation, sender
// and client message ID) as retries of the first, sharing its message and so its seq. It returns
// the first copies, by key, and their keys in batch order: the ones to look up earlier sends of.
func batchCopies(stored []*placement) (map[chunkstore.ClientMsgKey]*placement, []chunkstore.ClientMsgKey) {
	var keys []chunkstore.ClientMsgKey
	first := map[chunkstore.ClientMsgKey]*placement{}
	for _, p := range stored {
		if !p.dedup {
			continue
		}
		k := p.clientMsgKey()
		if f, ok := first[k]; ok {
			p.retry, p.msg = true, f.msg
			continue
		}
		first[k] = p
		keys = append(keys, k)
	}
	return first, keys
}

// convBatch is one conversation's share of a batch, in batch order.
type convBatch struct {
	conv string
	ps   []*placement
}

// byConversation groups placements by conversation, conversations in order of first
// appearance: one seq allocation and one write per conversation.
func byConversation(ps []*placement) []convBatch {
	var out []convBatch
	index := map[string]int{}
	for _, p := range ps {
		i, ok := index[p.conv]
		if !ok {
			i = len(out)
			index[p.conv] = i
			out = append(out, convBatch{conv: p.conv})
		}
		out[i].ps = append(out[i].ps, p)
	}
	return out
}

// needingSeqs returns the placements that still need a seq, by conversation: those without
// one, each message once (copies of one message within a batch share it).
func needingSeqs(pending []*placement) []convBatch {
	seen := map[*im.Message]bool{}
	var need []*placement
	for _, p := range pending {
		if p.msg.Seq != 0 || seen[p.msg] {
			continue
		}
		seen[p.msg] = true
		need = append(need, p)
	}
	return byConversation(need)
}

// splitRetries splits one conversation's placements, each seq once, into fresh messages and
// retries. Retries were probably stored by their first attempt, so they are written by reading
// their chunks first rather than by writing blind.
func splitRetries(ps []*placement) (fresh, retries []*placement) {
	for _, p := range uniqueBySeq(ps) {
		if p.retry {
			retries = append(retries, p)
		} else {
			fresh = append(fresh, p)
		}
	}
	return fresh, retries
}

// uniqueBySeq drops placements that share a message (and so a seq) with an earlier one: copies
// of one message within a batch are written once.
func uniqueBySeq(ps []*placement) []*placement {
	seen := map[int64]bool{}
	out := ps[:0:0]
	for _, p := range ps {
		if !seen[p.msg.Seq] {
			seen[p.msg.Seq] = true
			out = append(out, p)
		}
	}
	return out
}

// storedMessages lists the stored messages once each (copies of one message within a batch
// share its seq), in seq order per conversation.
func storedMessages(stored []*placement) []imsync.StoredMessage {
	type convSeq struct {
		conv string
		seq  int64
	}
	seen := map[convSeq]bool{}
	var out []imsync.StoredMessage
	for _, p := range stored {
		k := convSeq{p.conv, p.msg.Seq}
		if seen[k] {
			continue
		}
		seen[k] = true
		out = append(out, imsync.StoredMessage{ConversationID: p.conv, Seq: p.msg.Seq, SendID: p.msg.SendID, SendTime: p.msg.SendTime})
	}
	return sortStored(out)
}

// sortStored orders stored messages by conversation, then seq: the order they are announced in.
func sortStored(out []imsync.StoredMessage) []imsync.StoredMessage {
	sort.SliceStable(out, func(i, j int) bool {
		if out[i].ConversationID != out[j].ConversationID {
			return out[i].ConversationID < out[j].ConversationID
		}
		return out[i].Seq < out[j].Seq
	})
	return out
}

// newestPerConversation keeps each conversation's last message of msgs (sorted as sortStored
// sorts them): the newest, whose counters cover the others.
func newestPerConversation(msgs []imsync.StoredMessage) []imsync.StoredMessage {
	var out []imsync.StoredMessage
	for i, m := range msgs {
		if i+1 == len(msgs) || msgs[i+1].ConversationID != m.ConversationID {
			out = append(out, m)
		}
	}
	return out
}

// listEntries puts single chats on both members' conversation lists and notification
// conversations on their owner's, once per conversation. Groups' lists are kept by their member
// list (see imsync.Ledger.SetGroup), so a send to a group writes no per-member entry.
func listEntries(msgs []imsync.StoredMessage) []chunkstore.UserConversation {
	var out []chunkstore.UserConversation
	seen := map[string]bool{}
	for _, m := range msgs {
		if seen[m.ConversationID] {
			continue
		}
		seen[m.ConversationID] = true
		c, err := im.ParseConversationID(m.ConversationID)
		if err != nil || (c.Kind != im.SingleChat && c.Kind != im.UserNotification) {
			continue
		}
		for _, u := range c.UserIDs {
			out = append(out, chunkstore.UserConversation{UserID: u, ConversationID: m.ConversationID})
		}
	}
	return out
}

// dedupe sorts ids and drops repeats, in place.
func dedupe(ids []string) []string {
	sort.Strings(ids)
	out := ids[:0]
	for i, id := range ids {
		if i == 0 || id != ids[i-1] {
			out = append(out, id)
		}
	}
	return out
}
