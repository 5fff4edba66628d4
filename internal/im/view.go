package im

// MessageStatus is how a seq reads for one user.
type MessageStatus string

const (
	StatusOK      MessageStatus = "OK"
	StatusMissing MessageStatus = "MISSING" // no message at this seq (a hole or never written)
	StatusDeleted MessageStatus = "DELETED" // deleted for everyone, or by this user for themselves
	StatusRevoked MessageStatus = "REVOKED" // revoked by its sender or an admin; content withheld
)

// DeletedMessageStatus is the Message.Status of a tombstone left by delete-for-everyone.
const DeletedMessageStatus int32 = 4

// MessageView is one seq as one user sees it. Message is nil for MISSING; for DELETED and
// REVOKED it carries the header (sender, IDs, time) but no content.
type MessageView struct {
	ConversationID string
	Seq            int64
	Status         MessageStatus
	Message        *Message
	Revoke         *Revoke
	IsRead         bool
}

// ViewSlot applies the per-user view to a slot. Cached chunks are shared by all users; this
// is where one user's deletions and a revoke take effect, after the cache.
func ViewSlot(conversationID string, seq int64, slot *Slot, viewer string) MessageView {
	v := MessageView{ConversationID: conversationID, Seq: seq, Status: StatusMissing}
	if slot == nil || slot.Msg == nil {
		return v
	}
	m := slot.Msg
	v.IsRead = slot.IsRead || m.IsRead
	switch {
	case m.Status == DeletedMessageStatus || slot.DeletedFor(viewer):
		v.Status, v.Message = StatusDeleted, header(m, seq)
	case slot.Revoke != nil:
		r := *slot.Revoke
		v.Status, v.Message, v.Revoke = StatusRevoked, header(m, seq), &r
	default:
		v.Status, v.Message = StatusOK, m
	}
	return v
}

// header is a message without anything its sender wrote.
func header(m *Message, seq int64) *Message {
	return &Message{
		SendID: m.SendID, RecvID: m.RecvID, GroupID: m.GroupID,
		ClientMsgID: m.ClientMsgID, ServerMsgID: m.ServerMsgID, SessionType: m.SessionType,
		Seq: seq, SendTime: m.SendTime, CreateTime: m.CreateTime, Status: m.Status,
	}
}

// HistoryPage picks the seqs of one page of history in [visibleMin, maxSeq]. beforeSeq and
// afterSeq are exclusive bounds (0 = none). With afterSeq the page starts right after it and
// goes forward; otherwise it ends right before beforeSeq (or at maxSeq) and holds the newest
// limit seqs. The seqs come in ascending order; from > to means an empty page.
func HistoryPage(visibleMin, maxSeq, beforeSeq, afterSeq int64, limit int) (from, to int64) {
	lo, hi := visibleMin, maxSeq
	if afterSeq > 0 && afterSeq+1 > lo {
		lo = afterSeq + 1
	}
	if beforeSeq > 0 && beforeSeq-1 < hi {
		hi = beforeSeq - 1
	}
	if lo > hi {
		return lo, lo - 1
	}
	n := int64(limit)
	if hi-lo+1 <= n {
		return lo, hi
	}
	if afterSeq > 0 {
		return lo, lo + n - 1
	}
	return hi - n + 1, hi
}
