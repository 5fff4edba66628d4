package openimtest

import (
	"context"
	"errors"
	"strconv"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"
)

func readSeqKey(conversationID, userID string) string {
	return "SEQ_USER_READ:" + conversationID + ":" + userID
}

// SetReadSeq is seqUserCacheRedis.SetUserReadSeq, what mark-read and sending do: the read seq
// is raised in Redis only (a rockscache RawSet of the decimal seq, 30-day TTL), never lowered.
func (d *Deployment) SetReadSeq(conversationID, userID string, seq int64) {
	d.t.Helper()
	ctx := context.Background()
	key := readSeqKey(conversationID, userID)
	cur, err := d.Redis.HGet(ctx, key, "value").Result()
	if err == nil {
		if n, _ := strconv.ParseInt(cur, 10, 64); n >= seq {
			return
		}
	}
	d.rocksRawSet(ctx, key, strconv.FormatInt(seq, 10), readSeqTTL)
}

// PersistReadSeq is seqUserMongo.SetUserReadSeq, msgtransfer's delayed copy of a read seq to
// MongoDB: raise seq_user.read_seq (an upsert whose $setOnInsert writes the other fields as
// Go int zeros, i.e. BSON int32).
func (d *Deployment) PersistReadSeq(conversationID, userID string, seq int64) {
	d.t.Helper()
	var doc struct {
		ReadSeq int64 `bson:"read_seq"`
	}
	err := d.DB.Collection("seq_user").FindOne(context.Background(),
		bson.M{"user_id": userID, "conversation_id": conversationID}).Decode(&doc)
	if err == nil && doc.ReadSeq > seq {
		return
	}
	if err != nil && !errors.Is(err, mongo.ErrNoDocuments) {
		d.check(err, "read seq_user")
	}
	d.setUserSeq(conversationID, userID, "read_seq", seq)
}

// SetUserMinSeq is SetUserMinSeqs (clear for me; joining without history): MongoDB, then the
// SEQ_USER_MIN key is tagged deleted.
func (d *Deployment) SetUserMinSeq(conversationID, userID string, seq int64) {
	d.t.Helper()
	d.setUserSeq(conversationID, userID, "min_seq", seq)
	d.TagAsDeleted("SEQ_USER_MIN:" + conversationID + ":" + userID)
}

// SetUserMaxSeq is SetUserMaxSeq (quit, kicked; 0 on rejoin): MongoDB, then SEQ_USER_MAX is
// tagged deleted.
func (d *Deployment) SetUserMaxSeq(conversationID, userID string, seq int64) {
	d.t.Helper()
	d.setUserSeq(conversationID, userID, "max_seq", seq)
	d.TagAsDeleted("SEQ_USER_MAX:" + conversationID + ":" + userID)
}

// setUserSeq is seqUserMongo.setSeq.
func (d *Deployment) setUserSeq(conversationID, userID, field string, seq int64) {
	d.t.Helper()
	insert := bson.M{"user_id": userID, "conversation_id": conversationID, "min_seq": 0, "max_seq": 0, "read_seq": 0}
	delete(insert, field)
	_, err := d.DB.Collection("seq_user").UpdateOne(context.Background(),
		bson.M{"user_id": userID, "conversation_id": conversationID},
		bson.M{"$set": bson.M{field: seq}, "$setOnInsert": insert}, options.UpdateOne().SetUpsert(true))
	d.check(err, "set seq_user."+field)
}

// SetMinSeq is SetMinSeqs (clear for everyone, retention): seq.min_seq, then MALLOC_MIN_SEQ
// is tagged deleted.
func (d *Deployment) SetMinSeq(conversationID string, seq int64) {
	d.t.Helper()
	_, err := d.DB.Collection("seq").UpdateOne(context.Background(),
		bson.M{"conversation_id": conversationID},
		bson.M{"$set": bson.M{"min_seq": seq}, "$setOnInsert": bson.M{"conversation_id": conversationID, "max_seq": 0}},
		options.UpdateOne().SetUpsert(true))
	d.check(err, "set seq.min_seq")
	d.TagAsDeleted("MALLOC_MIN_SEQ:" + conversationID)
}

// CacheMinSeq, CacheUserMinSeq, CacheUserMaxSeq and CacheReadSeq do what OpenIM's readers do
// on a miss (getCache through rockscache Fetch2): read MongoDB and store the value in the key.
func (d *Deployment) CacheMinSeq(conversationID string) {
	d.t.Helper()
	var doc struct {
		MinSeq int64 `bson:"min_seq"`
	}
	err := d.DB.Collection("seq").FindOne(context.Background(), bson.M{"conversation_id": conversationID}).Decode(&doc)
	if err != nil && !errors.Is(err, mongo.ErrNoDocuments) {
		d.check(err, "read seq")
	}
	d.rocksFill("MALLOC_MIN_SEQ:"+conversationID, strconv.FormatInt(doc.MinSeq, 10), minSeqTTL)
}

func (d *Deployment) CacheUserMinSeq(conversationID, userID string) {
	d.t.Helper()
	d.rocksFill("SEQ_USER_MIN:"+conversationID+":"+userID, strconv.FormatInt(d.userSeq(conversationID, userID, "min_seq"), 10), userSeqTTL)
}

func (d *Deployment) CacheUserMaxSeq(conversationID, userID string) {
	d.t.Helper()
	d.rocksFill("SEQ_USER_MAX:"+conversationID+":"+userID, strconv.FormatInt(d.userSeq(conversationID, userID, "max_seq"), 10), userSeqTTL)
}

func (d *Deployment) CacheReadSeq(conversationID, userID string) {
	d.t.Helper()
	d.rocksFill(readSeqKey(conversationID, userID), strconv.FormatInt(d.userSeq(conversationID, userID, "read_seq"), 10), readSeqTTL)
}

func (d *Deployment) userSeq(conversationID, userID, field string) int64 {
	d.t.Helper()
	var doc bson.M
	err := d.DB.Collection("seq_user").FindOne(context.Background(), bson.M{"user_id": userID, "conversation_id": conversationID}).Decode(&doc)
	if errors.Is(err, mongo.ErrNoDocuments) {
		return 0
	}
	d.check(err, "read seq_user")
	switch v := doc[field].(type) {
	case int32:
		return int64(v)
	case int64:
		return v
	}
	return 0
}
