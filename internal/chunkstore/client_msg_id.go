package chunkstore

import (
	"context"
	"errors"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"
)

// ClientMsgKey names a message by the conversation and the client's own message ID.
type ClientMsgKey struct {
	ConversationID string `bson:"conversation_id"`
	ClientMsgID    string `bson:"client_msg_id"`
}

type clientMsgDoc struct {
	// ID is the natural key where the collection has them; any, since an earlier version's
	// documents, read back here, carry ObjectIDs.
	ID           any `bson:"_id,omitempty"`
	ClientMsgKey `bson:",inline"`
	Seq          int64 `bson:"seq"`
}

func (k ClientMsgKey) id() (string, error) { return pairKey(k.ConversationID, k.ClientMsgID) }

func (k ClientMsgKey) fields() bson.D {
	return bson.D{{Key: "conversation_id", Value: k.ConversationID}, {Key: "client_msg_id", Value: k.ClientMsgID}}
}

// FindClientMsgSeqs returns the seqs already given to the keys: by _id (findByIDs), or in one
// query by field in a collection of an earlier version. Keys never seen
// are absent from the map.
func (s *Store) FindClientMsgSeqs(ctx context.Context, keys []ClientMsgKey) (map[ClientMsgKey]int64, error) {
	ctx, done, err := s.admit(ctx)
	if err != nil {
		return nil, err
	}
	defer done()
	out := make(map[ClientMsgKey]int64, len(keys))
	if len(keys) == 0 {
		return out, nil
	}
	want := make(map[ClientMsgKey]bool, len(keys))
	pairs := make([][2]string, len(keys))
	ids := make([]string, len(keys))
	for i, k := range keys {
		want[k] = true
		pairs[i] = [2]string{k.ConversationID, k.ClientMsgID}
		id, err := k.id()
		if err != nil {
			return nil, err
		}
		ids[i] = id
	}
	var docs []clientMsgDoc
	if s.natural[CollectionClientMsgID] {
		docs, err = findByIDs[clientMsgDoc](ctx, s, s.clientMsgIDs, "find client message ids", ids)
	} else {
		docs, err = findAll[clientMsgDoc](ctx, s.clientMsgIDs, "find client message ids",
			pairFilter("conversation_id", "client_msg_id", pairs))
	}
	if err != nil {
		return nil, err
	}
	for _, d := range docs {
		if want[d.ClientMsgKey] {
			out[d.ClientMsgKey] = d.Seq
		}
	}
	return out, nil
}

// ClaimClientMsgIDs records the seq given to each key, before the messages are written, so
// that a retry of a send that failed half-way finds its seq and fills the same slot instead of
// taking a new one. The answer holds, for keys another writer claimed first (a concurrent
// duplicate send), the seq that writer got; the caller must use it instead of its own.
func (s *Store) ClaimClientMsgIDs(ctx context.Context, claims map[ClientMsgKey]int64) (map[ClientMsgKey]int64, error) {
	ctx, done, err := s.admit(ctx)
	if err != nil {
		return nil, err
	}
	defer done()
	lost := map[ClientMsgKey]int64{}
	if len(claims) == 0 {
		return lost, nil
	}
	docs := make([]any, 0, len(claims))
	keys := make([]ClientMsgKey, 0, len(claims))
	for k, seq := range claims {
		d := clientMsgDoc{ClientMsgKey: k, Seq: seq}
		if s.natural[CollectionClientMsgID] {
			id, err := k.id()
			if err != nil {
				return nil, err
			}
			d.ID = id
		}
		docs = append(docs, d)
		keys = append(keys, k)
	}
	_, err = s.clientMsgIDs.InsertMany(ctx, docs, options.InsertMany().SetOrdered(false))
	if err == nil {
		return lost, nil
	}
	var bwe mongo.BulkWriteException
	if !errors.As(err, &bwe) || !allDuplicateKeys(err) {
		return nil, storeError("claim client message ids", err)
	}
	var dupKeys []ClientMsgKey
	for _, we := range bwe.WriteErrors {
		if we.Index >= 0 && we.Index < len(keys) {
			dupKeys = append(dupKeys, keys[we.Index])
		}
	}
	found, err := s.FindClientMsgSeqs(ctx, dupKeys)
	if err != nil {
		return nil, err
	}
	for _, k := range dupKeys {
		if seq, ok := found[k]; ok {
			lost[k] = seq
		}
	}
	return lost, nil
}

// MoveClientMsgSeq points a key at a new seq, when the seq first claimed turned out to be taken
// by another message.
func (s *Store) MoveClientMsgSeq(ctx context.Context, k ClientMsgKey, seq int64) error {
	ctx, done, err := s.admit(ctx)
	if err != nil {
		return err
	}
	defer done()
	id, err := k.id()
	if err != nil {
		return err
	}
	_, err = s.clientMsgIDs.UpdateOne(ctx, s.keyFilter(CollectionClientMsgID, id, k.fields()),
		bson.D{{Key: "$set", Value: bson.D{{Key: "seq", Value: seq}}}})
	return storeError("move client message id", err)
}
