package im

// ValidateSeqs checks a list of seqs a client names: at most MaxSeqsPerRequest, each valid
// (ValidateSeq).
func ValidateSeqs(seqs []int64) error {
	if len(seqs) > MaxSeqsPerRequest {
		return Errorf(ELIMIT, "at most %d seqs per request, got %d", MaxSeqsPerRequest, len(seqs))
	}
	for _, s := range seqs {
		if err := ValidateSeq(s); err != nil {
			return err
		}
	}
	return nil
}
