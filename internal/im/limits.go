package im

// Bounds on what a client controls. Each is checked before any store is touched.
const (
	// MaxSeqsPerRequest bounds the seqs one messages() call may name.
	MaxSeqsPerRequest = 1000
	// MaxHistoryLimit bounds one page of history.
	MaxHistoryLimit = 200
	// DefaultHistoryLimit is the page size when the client gives none.
	DefaultHistoryLimit = 50
	// MaxContentBytes bounds a message's content.
	MaxContentBytes = 64 << 10
	// MaxExBytes bounds the free-form ex and attached-info fields.
	MaxExBytes = 4 << 10
	// MaxAtUsers bounds the @-mention list of one message.
	MaxAtUsers = 200
	// MaxClientMsgIDLength bounds the client's idempotency key.
	MaxClientMsgIDLength = 128
	// MaxClientMsgIDSeqs bounds the seqs one lookup of a client message ID in a conversation
	// answers, whoever sent them, and so the chunks read to check them: IDs are picked by
	// clients, and a crowd of senders could share one on purpose.
	MaxClientMsgIDSeqs = 16
	// MaxSyncEvents bounds the events of one syncDifference page.
	MaxSyncEvents = 1000
	// DefaultSyncEvents is the syncDifference page size when the client gives none.
	DefaultSyncEvents = 100
	// MaxSyncConversations bounds one syncState page.
	MaxSyncConversations = 100
)

// ValidateForSend checks what a sender controls in a message before it is categorised.
func ValidateForSend(m *Message) error {
	if len(m.Content) > MaxContentBytes {
		return Errorf(ELIMIT, "content is %d bytes; the limit is %d", len(m.Content), MaxContentBytes)
	}
	if len(m.Ex) > MaxExBytes || len(m.AttachedInfo) > MaxExBytes {
		return Errorf(ELIMIT, "ex and attachedInfo are limited to %d bytes", MaxExBytes)
	}
	if len(m.AtUserIDList) > MaxAtUsers {
		return Errorf(ELIMIT, "at most %d users can be mentioned", MaxAtUsers)
	}
	for _, u := range m.AtUserIDList {
		if err := ValidateID("mentioned user ID", u); err != nil {
			return err
		}
	}
	if len(m.ClientMsgID) > MaxClientMsgIDLength {
		return Errorf(EINVALID, "clientMsgID is longer than %d characters", MaxClientMsgIDLength)
	}
	return nil
}
