package chunkstore

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"
)

// CollectionOutbox holds the changes that are being made and are not yet announced.
const CollectionOutbox = "outbox"

// IntentKind names what an intent is about to change.
type IntentKind string

// The kinds of change an intent records.
const (
	IntentSend   IntentKind = "send"
	IntentRevoke IntentKind = "revoke"
	IntentDelete IntentKind = "delete"
	IntentRead   IntentKind = "read"
	IntentClear  IntentKind = "clear"
)

// Intent is a change a writer is about to make, recorded before the change reaches any
// other collection. Its writer removes it once the change is announced; one that outlives
// its Due was left by a writer that died or failed, and is finished by whoever finds it.
// The outbox holds only intents in flight, so finding the due ones reads a small collection
// on every store, FerretDB's scans included.
type Intent struct {
	ID   string     `bson:"_id"`
	Kind IntentKind `bson:"kind"`
	// Owner names the gateway instance whose writer recorded the intent: while it is alive,
	// no other instance finishes the intent, however slow its writer is.
	Owner          string `bson:"owner,omitempty"`
	ConversationID string `bson:"conversation_id"`
	// UserID is who acts (a read, a clear or a delete for them only).
	UserID string `bson:"user_id,omitempty"`
	// Seqs are the seqs changed (a revoke, deletes).
	Seqs []int64 `bson:"seqs,omitempty"`
	// Messages are the messages a send writes, with the seqs they were given.
	Messages []IntentMessage `bson:"msgs,omitempty"`
	// ForEveryone marks a delete or a clear for every member.
	ForEveryone bool `bson:"for_everyone,omitempty"`
	// Target is the read seq a read moves to, or the min seq a clear moves to.
	Target int64 `bson:"target,omitempty"`
	// Created is when the intent was recorded; Due is when its writer will have finished or
	// given up (unix ms).
	Created int64 `bson:"created"`
	Due     int64 `bson:"due"`
	// Tries counts the finishes tried by others than the writer.
	Tries int `bson:"tries,omitempty"`
}

// IntentMessage is what an intent keeps of a message it stores: enough to find it in its
// slot and to announce it.
type IntentMessage struct {
	ConversationID string `bson:"conversation_id"`
	Seq            int64  `bson:"seq"`
	SendID         string `bson:"send_id"`
	SendTime       int64  `bson:"send_time"`
	ClientMsgID    string `bson:"client_msg_id,omitempty"`
	ServerMsgID    string `bson:"server_msg_id,omitempty"`
}

// NewIntentID returns a fresh intent ID: 96 random bits.
func NewIntentID() string {
	b := make([]byte, 12)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// createOutboxIndex lets MongoDB find the due intents without a collection scan.
func createOutboxIndex(ctx context.Context, c *mongo.Collection) error {
	_, err := c.Indexes().CreateOne(ctx, mongo.IndexModel{Keys: bson.D{{Key: "due", Value: 1}}})
	if err != nil {
		return fmt.Errorf("chunkstore: create index on %s: %w", c.Name(), err)
	}
	return nil
}

// RecordIntent stores an intent. It is one insert; the change it names must not start
// before it returns without error.
func (s *Store) RecordIntent(ctx context.Context, in *Intent) error {
	if in.ID == "" {
		in.ID = NewIntentID()
	}
	ctx, done, err := s.admit(ctx)
	if err != nil {
		return err
	}
	defer done()
	if _, err := s.outbox.InsertOne(ctx, in); err != nil {
		return storeError("record intent", err)
	}
	return nil
}

// DropIntent removes a finished intent. Removing one that is gone already is no error.
func (s *Store) DropIntent(ctx context.Context, id string) error {
	ctx, done, err := s.admit(ctx)
	if err != nil {
		return err
	}
	defer done()
	if _, err := s.outbox.DeleteOne(ctx, bson.D{{Key: "_id", Value: id}}); err != nil {
		return storeError("drop intent", err)
	}
	return nil
}

// DueIntents returns up to limit intents whose Due is at or before now, the oldest first.
func (s *Store) DueIntents(ctx context.Context, now time.Time, limit int) ([]Intent, error) {
	ctx, done, err := s.admit(ctx)
	if err != nil {
		return nil, err
	}
	defer done()
	cur, err := s.outbox.Find(ctx, bson.D{{Key: "due", Value: bson.D{{Key: "$lte", Value: now.UnixMilli()}}}},
		options.Find().SetSort(bson.D{{Key: "due", Value: 1}}).SetLimit(int64(limit)))
	if err != nil {
		return nil, storeError("find due intents", err)
	}
	var out []Intent
	if err := cur.All(ctx, &out); err != nil {
		return nil, storeError("find due intents", err)
	}
	return out, nil
}

// CountDueIntents counts the intents whose Due is at or before now. It sends the count
// command, which MongoDB and FerretDB both answer, rather than the driver's CountDocuments,
// an aggregation.
func (s *Store) CountDueIntents(ctx context.Context, now time.Time) (int, error) {
	ctx, done, err := s.admit(ctx)
	if err != nil {
		return 0, err
	}
	defer done()
	var out struct {
		N int `bson:"n"`
	}
	err = s.outbox.Database().RunCommand(ctx, bson.D{{Key: "count", Value: CollectionOutbox},
		{Key: "query", Value: bson.D{{Key: "due", Value: bson.D{{Key: "$lte", Value: now.UnixMilli()}}}}}}).Decode(&out)
	if err != nil {
		return 0, storeError("count due intents", err)
	}
	return out.N, nil
}

// ClaimIntent moves a due intent's Due to until, if nobody moved it since it was read, and
// reports whether this caller got it. On MongoDB only one caller gets it. On FerretDB two may
// (its updates are not atomic); finishing an intent twice announces nothing twice, so the
// claim only saves work.
func (s *Store) ClaimIntent(ctx context.Context, in Intent, until time.Time) (bool, error) {
	ctx, done, err := s.admit(ctx)
	if err != nil {
		return false, err
	}
	defer done()
	res, err := s.outbox.UpdateOne(ctx,
		bson.D{{Key: "_id", Value: in.ID}, {Key: "due", Value: in.Due}},
		bson.D{{Key: "$set", Value: bson.D{{Key: "due", Value: until.UnixMilli()}}}, {Key: "$inc", Value: bson.D{{Key: "tries", Value: 1}}}})
	if err != nil {
		return false, storeError("claim intent", err)
	}
	return res.ModifiedCount == 1, nil
}
