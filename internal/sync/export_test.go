package sync

// Hint tells userID's subscribers that events may have been missed, as the event feed does
// after it resubscribes.
func (h *Hub) Hint(userID string) { h.deliver(userID, "", nil) }
