// Package openimfeed reads an OpenIM deployment's Kafka topic toPush.
package openimfeed

// ChangeKind says what a record of toPush tells.
type ChangeKind int

// The kinds of change.
const (
	KindMessage ChangeKind = iota
	KindRevoke
	KindDelete
	KindClear
	KindRead
)

// Change is one record of toPush, as msggate reads it.
type Change struct {
	Kind                    ChangeKind
	ConversationID          string
	Seq                     int64
	SendID, RecvID, GroupID string
	SessionType             int32
	ContentType             int32
	ClientMsgID             string
	SendTime                int64
	UserID                  string
	TargetConversationID    string
	Seqs                    []int64
	HasReadSeq              int64
	ConversationIDs         []string
	Partition               int32
	Offset                  int64
}
