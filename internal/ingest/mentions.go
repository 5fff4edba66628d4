package ingest

import (
	"context"

	"github.com/msggate/msggate/internal/im"
	"github.com/msggate/msggate/internal/mention"
)

// mentionsByConv are the mentions a send stored, by conversation.
type mentionsByConv map[string][]im.Mention

// mentionsOf collects the mentions of the stored placements (copies of one message once).
func mentionsOf(stored []*placement) mentionsByConv {
	out := mentionsByConv{}
	seen := map[*im.Message]bool{}
	for _, p := range stored {
		if seen[p.msg] {
			continue
		}
		seen[p.msg] = true
		if m, ok := im.MentionOf(p.msg); ok {
			out[p.conv] = append(out[p.conv], m)
		}
	}
	return out
}

// addSlot adds the mention of the message a slot holds, as the store shows it now.
func (ms mentionsByConv) addSlot(conv string, seq int64, slot *im.Slot) {
	if m, ok := im.MentionOfSlot(slot); ok {
		m.Seq = seq
		ms[conv] = append(ms[conv], m)
	}
}

func (ms mentionsByConv) record(ctx context.Context, x *mention.Index) error {
	for conv, list := range ms {
		if err := x.Record(ctx, conv, list); err != nil {
			return err
		}
	}
	return nil
}

// mentionedFor is whose mentions a delete removes: everyone's ("") or the deleter's.
func mentionedFor(userID string, forEveryone bool) string {
	if forEveryone {
		return ""
	}
	return userID
}

// mentioningSeqs are the seqs of the messages that mention someone: the only ones a revoke or
// a delete must take out of the mention index (the relay, which may see only a tombstone,
// takes out every seq it finishes).
func mentioningSeqs(msgs []*im.Message) []int64 {
	var out []int64
	for _, m := range msgs {
		if _, ok := im.MentionOf(m); ok {
			out = append(out, m.Seq)
		}
	}
	return out
}
