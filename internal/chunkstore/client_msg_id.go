package chunkstore

import (
	"context"
	"errors"
	"strings"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"

	"github.com/msggate/msggate/internal/im"
)

// Client message IDs.
//
// A client picks its message IDs itself, and every member of a group sees the IDs of the
// others' messages. So an ID names a send only together with its sender: keyed by conversation
// and ID alone, a member who sends with another member's ID would find the other's seq, and,
// once the write path moved the key to a seq of the member's own, leave the first sender's
// retry without its seq and store that message twice. CollectionClientMsgKey therefore keys
// each claim by conversation, sender and ID, and only the sender's own retry finds it.
//
// Versions before it kept the claims in CollectionClientMsgID, keyed without the sender. Those
// documents are not rewritten (nothing says whose they were but the message in the slot they
// point at); they are read, never written, and only when a key has no claim of its own: what
// they give is a seq some sender used with the ID (ClientMsgSeq.Unowned), which the caller
// takes only if the slot holds its sender's message (im.SameMessage). A store whose
// CollectionClientMsgID was empty when it was opened is never asked.

// CollectionClientMsgKey holds one document per stored message that has a client message ID:
// the seq the message got, under its conversation, sender and client message ID.
const CollectionClientMsgKey = "msg_client_key"

// ClientMsgKey names a message by its conversation, its sender and the sender's own message ID.
type ClientMsgKey struct {
	ConversationID string `bson:"conversation_id"`
	SendID         string `bson:"send_id"`
	ClientMsgID    string `bson:"client_msg_id"`
}

// ClientMsgSeq is the seq found for a key.
type ClientMsgSeq struct {
	Seq int64
	// Unowned: the seq comes from a document of an earlier version (CollectionClientMsgID),
	// which did not record the sender, so it is the seq of a message with this client message
	// ID by someone, perhaps another sender. It is the key's earlier send only if its slot holds
	// the key's sender's message; if not, the caller claims a seq of its own
	// (ClaimClientMsgIDs), since the key has no document to move.
	Unowned bool
}

type clientMsgDoc struct {
	// ID is the natural key where the collection has them; any, so that a document with an
	// ObjectID decodes too.
	ID           any `bson:"_id,omitempty"`
	ClientMsgKey `bson:",inline"`
	Seq          int64 `bson:"seq"`
}

// senderlessDoc is a document of CollectionClientMsgID, as versions before
// CollectionClientMsgKey wrote it.
type senderlessDoc struct {
	ConversationID string `bson:"conversation_id"`
	ClientMsgID    string `bson:"client_msg_id"`
	Seq            int64  `bson:"seq"`
}

// senderlessKey is what a document of CollectionClientMsgID is found by.
type senderlessKey struct{ conversationID, clientMsgID string }

// id is the key's natural _id, "<conversationID>|<sendID>|<clientMsgID>": neither of the first
// two holds a '|' (refused here as in pairKey), so the parts are where the first two '|' are.
func (k ClientMsgKey) id() (string, error) {
	if strings.Contains(k.SendID, "|") {
		return "", im.Errorf(im.EINVALID, "ID %q contains '|'", k.SendID)
	}
	return pairKey(k.ConversationID, k.SendID+"|"+k.ClientMsgID)
}

func (k ClientMsgKey) fields() bson.D {
	return bson.D{{Key: "conversation_id", Value: k.ConversationID}, {Key: "send_id", Value: k.SendID},
		{Key: "client_msg_id", Value: k.ClientMsgID}}
}

// FindClientMsgSeqs returns the seqs already given to the keys: the key's own claim, else, in a
// store of an earlier version, an unowned seq (see ClientMsgSeq). Keys never seen are absent
// from the map.
func (s *Store) FindClientMsgSeqs(ctx context.Context, keys []ClientMsgKey) (map[ClientMsgKey]ClientMsgSeq, error) {
	ctx, done, err := s.admit(ctx)
	if err != nil {
		return nil, err
	}
	defer done()
	owned, err := s.findOwnClientMsgSeqs(ctx, keys)
	if err != nil {
		return nil, err
	}
	out := make(map[ClientMsgKey]ClientMsgSeq, len(keys))
	var rest []ClientMsgKey
	for _, k := range keys {
		if seq, ok := owned[k]; ok {
			out[k] = ClientMsgSeq{Seq: seq}
		} else {
			rest = append(rest, k)
		}
	}
	if !s.senderlessClientMsgIDs || len(rest) == 0 {
		return out, nil
	}
	found, err := s.findSenderlessClientMsgSeqs(ctx, rest)
	if err != nil {
		return nil, err
	}
	for _, k := range rest {
		if seq, ok := found[senderlessKey{k.ConversationID, k.ClientMsgID}]; ok {
			out[k] = ClientMsgSeq{Seq: seq, Unowned: true}
		}
	}
	return out, nil
}

// HasSenderlessClientMsgIDs reports whether the store holds client message IDs of an earlier
// version (CollectionClientMsgID): a message is then not known to be new from its own key's
// absence alone (see FindClientMsgSeqs).
func (s *Store) HasSenderlessClientMsgIDs() bool { return s.senderlessClientMsgIDs }

// findOwnClientMsgSeqs reads the keys' claims in CollectionClientMsgKey: by _id (findByIDs), or
// by field in a collection without natural keys.
func (s *Store) findOwnClientMsgSeqs(ctx context.Context, keys []ClientMsgKey) (map[ClientMsgKey]int64, error) {
	out := make(map[ClientMsgKey]int64, len(keys))
	if len(keys) == 0 {
		return out, nil
	}
	want := make(map[ClientMsgKey]bool, len(keys))
	rows := make([][]string, len(keys))
	ids := make([]string, len(keys))
	for i, k := range keys {
		want[k] = true
		rows[i] = []string{k.ConversationID, k.SendID, k.ClientMsgID}
		id, err := k.id()
		if err != nil {
			return nil, err
		}
		ids[i] = id
	}
	const op = "find client message ids"
	var docs []clientMsgDoc
	var err error
	if s.natural[CollectionClientMsgKey] {
		docs, err = findByIDs[clientMsgDoc](ctx, s, s.clientMsgKeys, op, ids)
	} else {
		docs, err = findAll[clientMsgDoc](ctx, s.clientMsgKeys, op,
			tupleFilter([]string{"conversation_id", "send_id", "client_msg_id"}, rows))
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

// findSenderlessClientMsgSeqs reads the documents of CollectionClientMsgID that an earlier
// version wrote for the keys' conversations and client message IDs: by _id
// ("<conversationID>|<clientMsgID>") where that collection has natural keys, else by field.
func (s *Store) findSenderlessClientMsgSeqs(ctx context.Context, keys []ClientMsgKey) (map[senderlessKey]int64, error) {
	want := make(map[senderlessKey]bool, len(keys))
	var pairs [][2]string
	var ids []string
	for _, k := range keys {
		sk := senderlessKey{k.ConversationID, k.ClientMsgID}
		if want[sk] {
			continue
		}
		want[sk] = true
		pairs = append(pairs, [2]string{k.ConversationID, k.ClientMsgID})
		id, err := pairKey(k.ConversationID, k.ClientMsgID)
		if err != nil {
			return nil, err
		}
		ids = append(ids, id)
	}
	const op = "find client message ids of an earlier version"
	var docs []senderlessDoc
	var err error
	if s.natural[CollectionClientMsgID] {
		docs, err = findByIDs[senderlessDoc](ctx, s, s.clientMsgIDs, op, ids)
	} else {
		docs, err = findAll[senderlessDoc](ctx, s.clientMsgIDs, op, pairFilter("conversation_id", "client_msg_id", pairs))
	}
	if err != nil {
		return nil, err
	}
	out := make(map[senderlessKey]int64, len(docs))
	for _, d := range docs {
		if sk := (senderlessKey{d.ConversationID, d.ClientMsgID}); want[sk] {
			out[sk] = d.Seq
		}
	}
	return out, nil
}

// ClaimClientMsgIDs records the seq given to each key, before the messages are written, so
// that a retry of a send that failed half-way finds its seq and fills the same slot instead of
// taking a new one. The answer holds, for keys another writer claimed first (a concurrent
// duplicate send by the same sender), the seq that writer got; the caller must use it instead
// of its own. A claim is never lost to another sender's, nor to an unowned seq.
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
		id, err := k.id() // also refuses a key whose _id would be ambiguous where none is written
		if err != nil {
			return nil, err
		}
		if s.natural[CollectionClientMsgKey] {
			d.ID = id
		}
		docs = append(docs, d)
		keys = append(keys, k)
	}
	_, err = s.clientMsgKeys.InsertMany(ctx, docs, options.InsertMany().SetOrdered(false))
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
	found, err := s.findOwnClientMsgSeqs(ctx, dupKeys)
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

// MoveClientMsgSeq points a key's claim at a new seq, when the seq first claimed turned out to
// be taken by another message.
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
	_, err = s.clientMsgKeys.UpdateOne(ctx, s.keyFilter(CollectionClientMsgKey, id, k.fields()),
		bson.D{{Key: "$set", Value: bson.D{{Key: "seq", Value: seq}}}})
	return storeError("move client message id", err)
}

// hasDocuments reports whether a collection holds any document; the find stops at the first
// row.
func hasDocuments(ctx context.Context, c *mongo.Collection) (bool, error) {
	err := c.FindOne(ctx, bson.D{}, options.FindOne().SetProjection(bson.D{{Key: "_id", Value: 1}})).Err()
	switch {
	case err == nil:
		return true, nil
	case errors.Is(err, mongo.ErrNoDocuments):
		return false, nil
	}
	return false, storeError("look for client message ids of an earlier version", err)
}

// createClientMsgIDIndex lets a message be found by its conversation and client message ID
// alone, whoever sent it (FindClientMsgIDSeqs): not unique, as two senders may pick one ID.
// With seq, newest first, so that MongoDB reads the newest claims first and stops at the
// limit. (FerretDB on SQLite keeps the index but filters by its own means: see
// FindClientMsgIDSeqs.)
func createClientMsgIDIndex(ctx context.Context, c *mongo.Collection) error {
	_, err := c.Indexes().CreateOne(ctx, mongo.IndexModel{Keys: bson.D{
		{Key: "conversation_id", Value: 1}, {Key: "client_msg_id", Value: 1}, {Key: "seq", Value: -1}}})
	return err
}

// FindClientMsgIDSeqs returns the seqs claimed for clientMsgID in the conversation by any
// sender, newest first, at most im.MaxClientMsgIDSeqs of them, and,
// in a store of an earlier version, the seq CollectionClientMsgID holds for it. They are
// claims: the caller checks the message in each slot. On MongoDB the lookup is the index
// createClientMsgIDIndex makes; FerretDB 1.24 on SQLite hands SQLite only filters on _id, so
// there it reads the collection's claims (never a chunk) and grows with their number.
func (s *Store) FindClientMsgIDSeqs(ctx context.Context, conversationID, clientMsgID string) ([]int64, error) {
	ctx, done, err := s.admit(ctx)
	if err != nil {
		return nil, err
	}
	defer done()
	cur, err := s.clientMsgKeys.Find(ctx,
		bson.D{{Key: "conversation_id", Value: conversationID}, {Key: "client_msg_id", Value: clientMsgID}},
		options.Find().SetSort(bson.D{{Key: "seq", Value: -1}}).SetLimit(im.MaxClientMsgIDSeqs).
			SetProjection(bson.D{{Key: "seq", Value: 1}}))
	if err != nil {
		return nil, storeError("find client message id", err)
	}
	var docs []struct {
		Seq int64 `bson:"seq"`
	}
	if err := cur.All(ctx, &docs); err != nil {
		return nil, storeError("find client message id", err)
	}
	out := make([]int64, 0, len(docs)+1)
	for _, d := range docs {
		out = append(out, d.Seq)
	}
	if !s.senderlessClientMsgIDs {
		return out, nil
	}
	k := ClientMsgKey{ConversationID: conversationID, ClientMsgID: clientMsgID}
	older, err := s.findSenderlessClientMsgSeqs(ctx, []ClientMsgKey{k})
	if err != nil {
		return nil, err
	}
	if seq, ok := older[senderlessKey{conversationID, clientMsgID}]; ok && len(out) < im.MaxClientMsgIDSeqs {
		out = append(out, seq)
	}
	return out, nil
}
