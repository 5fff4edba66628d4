package im

import (
	"strconv"
	"strings"
)

// ChunkSize is the number of slots in one chunk document. A conversation's seqs 1..100 live in
// chunk 0, 101..200 in chunk 1, and so on; reads of consecutive seqs therefore touch one or two
// documents instead of one per message.
const ChunkSize = 100

// ChunkIndex returns the index of the chunk that holds seq. seq must be >= 1 (see ValidateSeq).
func ChunkIndex(seq int64) int64 { return (seq - 1) / ChunkSize }

// SlotIndex returns the position of seq inside its chunk, 0..ChunkSize-1.
func SlotIndex(seq int64) int { return int((seq - 1) % ChunkSize) }

// FirstSeq returns the smallest seq stored in the chunk with the given index.
func FirstSeq(chunkIndex int64) int64 { return chunkIndex*ChunkSize + 1 }

// ChunkDocID names the chunk document with the given index: "<conversationID>:<index>".
func ChunkDocID(conversationID string, chunkIndex int64) string {
	return conversationID + ":" + strconv.FormatInt(chunkIndex, 10)
}

// DocID names the chunk document that holds seq of the conversation.
func DocID(conversationID string, seq int64) string {
	return ChunkDocID(conversationID, ChunkIndex(seq))
}

// ParseDocID splits a chunk document ID into its conversation ID and chunk index. The
// conversation ID itself never contains ':' (ParseConversationID rejects it), so the last ':'
// is the separator.
func ParseDocID(docID string) (conversationID string, chunkIndex int64, err error) {
	i := strings.LastIndexByte(docID, ':')
	if i <= 0 {
		return "", 0, Errorf(EINVALID, "malformed chunk id %q", docID)
	}
	idx, perr := strconv.ParseInt(docID[i+1:], 10, 64)
	if perr != nil || idx < 0 || strconv.FormatInt(idx, 10) != docID[i+1:] {
		return "", 0, Errorf(EINVALID, "malformed chunk id %q", docID)
	}
	return docID[:i], idx, nil
}

// MaxSeq bounds the seqs a client may name. Seqs are allocated one by one, so no real
// conversation comes near it; the bound keeps chunk arithmetic far from int64 overflow.
const MaxSeq int64 = 1 << 53

// ValidateSeq rejects seqs outside 1..MaxSeq with an EINVALID error.
func ValidateSeq(seq int64) error {
	if seq < 1 || seq > MaxSeq {
		return Errorf(EINVALID, "seq %d is out of range: seqs start at 1", seq)
	}
	return nil
}

// SeqGroup is the part of a seq list that falls into one chunk document.
type SeqGroup struct {
	DocID string
	Seqs  []int64
}

// GroupSeqsByDocID groups seqs by the chunk that holds them, so that each chunk is read or
// written once. Groups come in the order their first seq appears; within a group, seqs keep
// their input order. Duplicate seqs are kept: callers that need them unique dedupe first.
func GroupSeqsByDocID(conversationID string, seqs []int64) []SeqGroup {
	var groups []SeqGroup
	byIndex := make(map[int64]int)
	for _, seq := range seqs {
		idx := ChunkIndex(seq)
		g, ok := byIndex[idx]
		if !ok {
			g = len(groups)
			byIndex[idx] = g
			groups = append(groups, SeqGroup{DocID: ChunkDocID(conversationID, idx)})
		}
		groups[g].Seqs = append(groups[g].Seqs, seq)
	}
	return groups
}
