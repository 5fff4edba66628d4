package im

// HistoryUnavailableError answers a read of seqs below the reader's min seq: history that
// existed and is gone for them (deleted by retention, or cleared). Its code is EHISTORY; it
// carries MinSeq, where readable history starts, so that a client can resume there without
// another query.
type HistoryUnavailableError struct {
	MinSeq int64
	err    *Error
}

// HistoryUnavailable returns the error for a read of conversationID below minSeq, the lowest
// seq the reader may read.
func HistoryUnavailable(conversationID string, minSeq int64) *HistoryUnavailableError {
	return &HistoryUnavailableError{
		MinSeq: minSeq,
		err: Errorf(EHISTORY, "history of %s before seq %d is unavailable: deleted by retention or cleared",
			conversationID, minSeq),
	}
}

func (e *HistoryUnavailableError) Error() string { return e.err.Error() }

// Unwrap returns the coded error, so that ErrorCode and errors.As find EHISTORY.
func (e *HistoryUnavailableError) Unwrap() error { return e.err }
