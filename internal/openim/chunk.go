package openim

import (
	"context"
	"fmt"

	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/msggate/msggate/internal/im"
)

// OpenIM's chunk document (pkg/common/storage/model/msg.go MsgDocModel) is
// {doc_id, msgs: [100 x {msg, revoke, del_list, is_read}]}: the same layout and field names as
// im.Chunk. Two slot shapes carry no message and must be told apart:
//
//   - empty: {msg: null, revoke: null, del_list: [], is_read: false}. BatchInsertBlock
//     (pkg/common/storage/controller/msg_transfer.go and msg.go) creates every chunk with all
//     100 slots in this shape. A seq that never got a message (a hole) stays so.
//   - deleted for everyone: {msg: null} and nothing else. DeleteMsgsPhysicalBySeqs
//     (controller/msg.go) has DeleteMsgsInOneDocByIndex (database/mgo/msg.go) $set the whole
//     slot to that one-field document, dropping revoke, del_list and is_read.
//
// OpenIM's own read path does not tell them apart: GetMessageBySeqs (controller/msg.go) answers
// any seq without a message with a placeholder of status 4, constant.MsgStatusHasDeleted
// ("has deleted"). msggate keeps the distinction its view already has: an empty slot reads as
// MISSING (a hole, as in msggate's own store), while a deleted slot becomes a tombstone header,
// a message with only Seq set and Status im.DeletedMessageStatus (4, OpenIM's number), which
// im.ViewSlot shows as DELETED with no content.

// rawChunk keeps each slot raw, so that which fields a slot document has can be seen.
type rawChunk struct {
	DocID string          `bson:"doc_id"`
	Msgs  []bson.RawValue `bson:"msgs"`
}

// readChunks reads the chunk documents named by docIDs (distinct) in one $in query and returns
// them by doc ID.
func (s *Store) readChunks(ctx context.Context, docIDs []string) (map[string]*im.Chunk, error) {
	out := make(map[string]*im.Chunk, len(docIDs))
	if len(docIDs) == 0 {
		return out, nil
	}
	// The projection leaves out _id only; whole chunks are read because FerretDB supports no
	// $slice projection.
	docs, err := findAll[rawChunk](ctx, s.msg, "find msg chunks",
		bson.D{{Key: "doc_id", Value: in(docIDs)}}, bson.D{{Key: "_id", Value: 0}})
	if err != nil {
		return nil, err
	}
	for _, d := range docs {
		c, err := decodeChunk(d)
		if err != nil {
			return nil, err
		}
		out[c.DocID] = c
	}
	return out, nil
}

func decodeChunk(d rawChunk) (*im.Chunk, error) {
	_, index, err := im.ParseDocID(d.DocID)
	if err != nil {
		return nil, recordError("msg doc_id", err)
	}
	c := &im.Chunk{DocID: d.DocID, Slots: make([]im.Slot, im.ChunkSize)}
	for i, rv := range d.Msgs {
		if i >= im.ChunkSize {
			// OpenIM never writes more than 100 slots; seqs cannot address the rest.
			break
		}
		if err := decodeSlot(rv, im.FirstSeq(index)+int64(i), &c.Slots[i]); err != nil {
			return nil, recordError(fmt.Sprintf("slot %d of %s", i, d.DocID), err)
		}
	}
	return c, nil
}

// decodeSlot decodes one slot, turning OpenIM's delete-for-everyone shape into a tombstone.
func decodeSlot(rv bson.RawValue, seq int64, slot *im.Slot) error {
	switch rv.Type {
	case bson.TypeNull, bson.TypeUndefined:
		return nil // a nil element: no message, nothing else
	case bson.TypeEmbeddedDocument:
	default:
		return fmt.Errorf("slot is a BSON %v, not a document", rv.Type)
	}
	doc := rv.Document()
	if deletedForEveryone(doc) {
		slot.Msg = &im.Message{Seq: seq, Status: im.DeletedMessageStatus}
		return nil
	}
	return bson.Unmarshal(doc, slot)
}

// deletedForEveryone reports whether a slot document is exactly {msg: null}.
func deletedForEveryone(doc bson.Raw) bool {
	elems, err := doc.Elements()
	if err != nil || len(elems) != 1 || elems[0].Key() != "msg" {
		return false
	}
	return elems[0].Value().Type == bson.TypeNull
}

// holdsMessage reports whether a slot holds a message or held one (a tombstone).
func holdsMessage(slot *im.Slot) bool { return slot != nil && slot.Msg != nil }
