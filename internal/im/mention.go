package im

import "slices"

// AtAllTag in a message's AtUserIDList mentions every member of its group (OpenIM's spelling).
const AtAllTag = "AtAllTag"

// Mention is what the mention index keeps of one message that mentions someone: who it
// mentions by name, whether it mentions everyone, who sent it (never mentioned by their own
// message) and who deleted it for themselves (no longer mentioned by it).
type Mention struct {
	Seq    int64
	Users  []string
	All    bool
	SendID string
	Hidden []string
}

// MentionOf returns the mention a stored message makes, and false when it mentions nobody: it
// is not a group message, or its list names only its sender. Named users are kept apart from
// AtAllTag, without the sender and without duplicates.
func MentionOf(m *Message) (Mention, bool) {
	if m == nil || m.SessionType != SessionGroup || len(m.AtUserIDList) == 0 || m.Status == DeletedMessageStatus {
		return Mention{}, false
	}
	out := Mention{Seq: m.Seq, SendID: m.SendID}
	for _, u := range m.AtUserIDList {
		switch {
		case u == AtAllTag:
			out.All = true
		case u != "" && u != m.SendID && !slices.Contains(out.Users, u):
			out.Users = append(out.Users, u)
		}
	}
	if !out.All && len(out.Users) == 0 {
		return Mention{}, false
	}
	return out, true
}

// Mentions reports whether the message mentions userID: named or by AtAllTag, not its sender,
// not deleted by userID for themselves.
func (m Mention) Mentions(userID string) bool {
	if userID == m.SendID || slices.Contains(m.Hidden, userID) {
		return false
	}
	return m.All || slices.Contains(m.Users, userID)
}

// MentionOfSlot is MentionOf for a stored slot: a revoked message mentions nobody any more,
// and the users who deleted it for themselves are hidden from it.
func MentionOfSlot(s *Slot) (Mention, bool) {
	if s == nil || s.Revoke != nil {
		return Mention{}, false
	}
	m, ok := MentionOf(s.Msg)
	if ok {
		m.Hidden = append([]string(nil), s.DelList...)
	}
	return m, ok
}

// UnreadRange is the seqs (after, upTo] in which a user's unread mentions lie: above their read
// seq and below nothing they may not read.
func (s SeqState) UnreadRange() (after, upTo int64) {
	after = max(s.ReadSeq, s.VisibleMin()-1)
	return after, s.MaxSeq
}

// MaxUnreadMentions bounds Conversation.unreadMentions' limit; DefaultUnreadMentions is its
// default.
const (
	MaxUnreadMentions     = 100
	DefaultUnreadMentions = 20
)

// UnreadMentionsLimit reads unreadMentions' limit argument, as every page size is read.
func UnreadMentionsLimit(limit *int) (int, error) {
	return PageSize("limit", limit, DefaultUnreadMentions, MaxUnreadMentions)
}
