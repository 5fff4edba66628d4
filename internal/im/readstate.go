package im

// Unread returns how many messages of a conversation a user has not read:
// maxSeq - max(readSeq, userMinSeq-1), never negative. It is computed from seqs on every read
// and never stored, so it cannot drift from the messages that exist.
func Unread(maxSeq, readSeq, userMinSeq int64) int64 {
	seen := readSeq
	if userMinSeq-1 > seen {
		seen = userMinSeq - 1
	}
	if maxSeq <= seen {
		return 0
	}
	return maxSeq - seen
}
