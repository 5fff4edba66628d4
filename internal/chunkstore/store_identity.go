package chunkstore

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"
)

// The store's identity: what ties msggate's Redis state to the store it describes.
//
// Redis holds copies of the store and announcements of what the store holds; they are true
// only of the store they were taken from. A store replaced by another database, or restored
// from a backup, no longer holds what Redis describes, and an ID written once when the store
// was created does not show it: a restore brings back the ID the backup held. So the identity
// is a token chosen when the store first gets one, plus a clock that every gateway instance
// moves on about once a second (AdvanceIdentity) and then records in Redis. Redis only ever
// records a value the store held before, and the store's clock only moves forwards, so while
// Redis describes this store the store's clock is at or past Redis's. A store whose token
// differs, or whose clock is behind Redis's (a backup taken before the last recorded step),
// is not the store Redis describes. Each step also takes a new random stamp, so that a
// restored store whose clock has since come back to the value Redis holds is told apart too.
//
// The record is a document of CollectionLayout: {_id: "identity", token, clock, stamp}.

const identityID = "identity"

// StoreIdentity is a value of the store's identity: its token and a step of its clock.
type StoreIdentity struct {
	Token string `bson:"token"`
	Clock int64  `bson:"clock"`
	Stamp string `bson:"stamp"`
}

// AdvanceIdentity moves the store's clock one step on and returns the new value, provided the
// store is at or past seen, a value read from Redis: the same token, and a later clock or the
// same clock with the same stamp. Otherwise it changes nothing and returns the store's identity
// with ok false. A zero seen (Redis records no identity) advances any store. A store without an
// identity (new, or written by an earlier version) gets one first, and then is at or past
// only a zero seen.
func (s *Store) AdvanceIdentity(ctx context.Context, seen StoreIdentity) (id StoreIdentity, ok bool, err error) {
	ctx, done, err := s.admit(ctx)
	if err != nil {
		return StoreIdentity{}, false, err
	}
	defer done()
	// On a FerretDB that several processes share, a find-and-modify is a read and a write:
	// without the lease two instances could take the same step with different stamps.
	ctx, unlock, err := s.lockDocs(ctx, CollectionLayout, identityID)
	if err != nil {
		return StoreIdentity{}, false, err
	}
	defer unlock()
	layout := s.db.Collection(CollectionLayout)
	filter := bson.D{{Key: "_id", Value: identityID}}
	if seen.Token != "" {
		filter = append(filter, bson.E{Key: "token", Value: seen.Token}, bson.E{Key: "$or", Value: bson.A{
			bson.D{{Key: "clock", Value: bson.D{{Key: "$gt", Value: seen.Clock}}}},
			bson.D{{Key: "clock", Value: seen.Clock}, {Key: "stamp", Value: seen.Stamp}},
		}})
	}
	err = layout.FindOneAndUpdate(ctx, filter,
		bson.D{{Key: "$inc", Value: bson.D{{Key: "clock", Value: 1}}}, {Key: "$set", Value: bson.D{{Key: "stamp", Value: randomHex()}}}},
		options.FindOneAndUpdate().SetReturnDocument(options.After)).Decode(&id)
	if err == nil {
		return id, true, nil
	}
	if !errors.Is(err, mongo.ErrNoDocuments) {
		return StoreIdentity{}, false, storeError("advance the store identity", err)
	}
	err = layout.FindOne(ctx, bson.D{{Key: "_id", Value: identityID}}).Decode(&id)
	if errors.Is(err, mongo.ErrNoDocuments) {
		id = StoreIdentity{Token: randomHex(), Clock: 1, Stamp: randomHex()}
		_, err = layout.InsertOne(ctx, bson.D{{Key: "_id", Value: identityID},
			{Key: "token", Value: id.Token}, {Key: "clock", Value: id.Clock}, {Key: "stamp", Value: id.Stamp}})
		if mongo.IsDuplicateKeyError(err) {
			// Another process (not sharing the lease: a MongoDB) created it first.
			err = layout.FindOne(ctx, bson.D{{Key: "_id", Value: identityID}}).Decode(&id)
		}
	}
	if err != nil {
		return StoreIdentity{}, false, storeError("read the store identity", err)
	}
	return id, seen.Token == "", nil
}

// randomHex is 12 random bytes in hex: a token or a stamp no other store or step has.
func randomHex() string {
	b := make([]byte, 12)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}
