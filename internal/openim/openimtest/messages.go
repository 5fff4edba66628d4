package openimtest

import (
	"context"
	"strconv"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
)

const chunkSize = 100

func docID(conversationID string, seq int64) string {
	return conversationID + ":" + strconv.FormatInt((seq-1)/chunkSize, 10)
}

func slotIndex(seq int64) int64 { return (seq - 1) % chunkSize }

// WriteMessages writes consecutive messages into their chunks as BatchInsertBlock
// (controller/msg_transfer.go) does with updateKeyMsg: $set msgs.<i>.msg on an existing chunk,
// otherwise insert the chunk with all 100 slots, the batch's messages in theirs and every other
// slot empty ({msg: null, revoke: null, del_list: [], is_read: false}); a duplicate key falls
// back to the update.
func (d *Deployment) WriteMessages(conversationID string, msgs []*MsgData) {
	d.t.Helper()
	fields := make([]any, len(msgs))
	for i, m := range msgs {
		fields[i] = m
	}
	d.insertBlock(conversationID, "msg", fields, msgs[0].Seq)
}

// insertBlock is BatchInsertBlock for key "msg" (fields are *MsgData) or "revoke" (*Revoke).
// OpenIM updates an existing chunk one seq at a time; this sets all of a batch's slots in one
// chunk with one update, which leaves the same document and keeps FerretDB-backed tests fast.
func (d *Deployment) insertBlock(conversationID, key string, fields []any, firstSeq int64) {
	d.t.Helper()
	ctx := context.Background()
	coll := d.DB.Collection("msg")
	for i := 0; i < len(fields); {
		id := docID(conversationID, firstSeq+int64(i))
		n := 0
		for i+n < len(fields) && docID(conversationID, firstSeq+int64(i+n)) == id {
			n++
		}
		set := bson.D{}
		for j := i; j < i+n; j++ {
			set = append(set, bson.E{Key: "msgs." + strconv.FormatInt(slotIndex(firstSeq+int64(j)), 10) + "." + key, Value: fields[j]})
		}
		res, err := coll.UpdateOne(ctx, bson.M{"doc_id": id}, bson.M{"$set": set})
		d.check(err, "update slots")
		if res.MatchedCount == 0 {
			doc := MsgDoc{DocID: id, Msg: make([]*MsgInfo, chunkSize)}
			for j := i; j < i+n; j++ {
				info := &MsgInfo{}
				switch f := fields[j].(type) {
				case *MsgData:
					info.Msg = f
				case *Revoke:
					info.Revoke = f
				}
				doc.Msg[slotIndex(firstSeq+int64(j))] = info
			}
			for k, info := range doc.Msg {
				if info == nil {
					info = &MsgInfo{}
					doc.Msg[k] = info
				}
				if info.DelList == nil {
					info.DelList = []string{}
				}
			}
			if _, err := coll.InsertMany(ctx, []any{&doc}); err != nil {
				if !mongo.IsDuplicateKeyError(err) {
					d.check(err, "insert chunk")
				}
				continue // created meanwhile: update it on the next pass
			}
		}
		i += n
	}
}

// Revoke records a revoke as RevokeMsg does (controller/msg.go): batchInsertBlock with
// updateKeyRevoke ($set msgs.<i>.revoke, creating the chunk when it does not exist yet), then
// the cached message is tagged deleted.
func (d *Deployment) Revoke(conversationID string, seq int64, r Revoke) {
	d.t.Helper()
	if r.Time == 0 {
		r.Time = d.Now()
	}
	d.insertBlock(conversationID, "revoke", []any{&r}, seq)
	d.TagAsDeleted(msgCacheKey(conversationID, seq))
}

// DeleteForMe is DeleteUserMsgsBySeqs: $addToSet the user on each slot's del_list (one update
// per seq, PushUnique), then the cached messages are tagged deleted.
func (d *Deployment) DeleteForMe(conversationID, userID string, seqs ...int64) {
	d.t.Helper()
	ctx := context.Background()
	for _, seq := range seqs {
		_, err := d.DB.Collection("msg").UpdateOne(ctx, bson.M{"doc_id": docID(conversationID, seq)},
			bson.M{"$addToSet": bson.M{"msgs." + strconv.FormatInt(slotIndex(seq), 10) + ".del_list": bson.M{"$each": []string{userID}}}})
		d.check(err, "delete for me")
	}
	for _, seq := range seqs {
		d.TagAsDeleted(msgCacheKey(conversationID, seq))
	}
}

// DeleteForEveryone is DeleteMsgsPhysicalBySeqs: per chunk, one UpdateMany that $sets each
// slot to {msg: null} (DeleteMsgsInOneDocByIndex), then the cached messages are tagged deleted.
func (d *Deployment) DeleteForEveryone(conversationID string, seqs ...int64) {
	d.t.Helper()
	ctx := context.Background()
	byDoc := map[string]bson.M{}
	for _, seq := range seqs {
		set := byDoc[docID(conversationID, seq)]
		if set == nil {
			set = bson.M{}
			byDoc[docID(conversationID, seq)] = set
		}
		set["msgs."+strconv.FormatInt(slotIndex(seq), 10)] = bson.M{"msg": nil}
	}
	for id, set := range byDoc {
		_, err := d.DB.Collection("msg").UpdateMany(ctx, bson.M{"doc_id": id}, bson.M{"$set": set})
		d.check(err, "delete for everyone")
	}
	for _, seq := range seqs {
		d.TagAsDeleted(msgCacheKey(conversationID, seq))
	}
}

// DeleteChunk is the retention job's DeleteDoc: the chunk document is removed, the cache of
// its 100 seqs tagged deleted, and the conversation's min seq raised past it (SetMinSeq).
func (d *Deployment) DeleteChunk(conversationID string, index int64) {
	d.t.Helper()
	ctx := context.Background()
	id := conversationID + ":" + strconv.FormatInt(index, 10)
	_, err := d.DB.Collection("msg").DeleteOne(ctx, bson.M{"doc_id": id})
	d.check(err, "delete chunk")
	first := index*chunkSize + 1
	for seq := first; seq < first+chunkSize; seq++ {
		d.TagAsDeleted(msgCacheKey(conversationID, seq))
	}
	d.SetMinSeq(conversationID, first+chunkSize)
}
