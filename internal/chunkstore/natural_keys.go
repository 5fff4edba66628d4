package chunkstore

import (
	"context"
	"errors"
	"strings"
	"sync"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"

	"github.com/msggate/msggate/internal/im"
)

// Natural keys.
//
// FerretDB 1.24 on SQLite hands a filter to SQLite only when it is exactly {_id: <string or
// ObjectID>} (backends/sqlite/collection.go; a find drops dotted keys first, an update or a
// delete does not). Every other filter, $in on _id included, makes FerretDB read every
// document of the collection, decode it into its own types in Go and match it there. The _id
// filter becomes WHERE _ferretdb_sjson->'$._id' = ?, which FerretDB's own _id index (on
// _ferretdb_sjson->"_id", another expression to SQLite) cannot answer: a SCAN of the table.
// msggate's embedded store therefore gets an SQLite index on exactly that expression
// (embedded.IndexIDs, at start), and then a lookup by _id is an index SEARCH whose cost does
// not grow with the collection (BenchmarkColdHistoryRead). Without that index (a FerretDB
// msggate reaches by URI and cannot index) SQLite still extracts the _id from each row's text
// itself, many times faster than FerretDB's decoding, and a find or update of one document
// stops at the row that matches. Either way it is the cheapest lookup FerretDB 1.24 has, so
// msggate gives its documents the key it looks them up by as their _id, and keeps OpenIM's
// field names beside it (doc_id, conversation_id, user_id, ...), with their unique indexes,
// for readers that know only the fields (and for MongoDB, where either is an index lookup):
//
//	msg               _id = doc_id ("<conversationID>:<index>")
//	seq               _id = conversation_id
//	seq_user          _id = "<conversationID>|<userID>"
//	msg_client_id     _id = "<conversationID>|<clientMsgID>" (an earlier version's; read only)
//	msg_client_key    _id = "<conversationID>|<sendID>|<clientMsgID>"
//	group_member      _id = "<groupID>|<userID>"
//	user_conversation _id = "<userID>|<conversationID>"
//
// '|' never occurs in a msggate user, group or conversation ID (im.ValidateID), so the part
// before the first '|' is always the whole first ID and no two pairs share a key; a first part
// holding '|' is refused rather than stored under a key another pair could have.
//
// Stores written by earlier msggate versions hold the same documents with ObjectID _ids.
// Open decides per collection (see keyLayout) and a collection that holds such documents keeps
// being read and updated by its fields, exactly as before: correct, and as slow as before on
// FerretDB. Nothing is rewritten behind the operator's back.

// CollectionLayout records, per collection, that msggate keys its documents by natural _id:
// {_id: "<collection>", natural_ids: true}. Only a collection that was empty when a Store
// first opened it gets the record.
const CollectionLayout = "store_layout"

// keyedCollections are the collections whose documents get natural _ids.
var keyedCollections = []string{
	CollectionChunks, CollectionSeqs, CollectionUserSeqs, CollectionClientMsgID, CollectionClientMsgKey,
	CollectionGroupMember, CollectionUserConversation,
}

// keyLayout says, per collection, whether documents are found by their natural _id (true) or
// by their fields (false: the collection holds documents of an earlier version).
type keyLayout map[string]bool

type layoutDoc struct {
	ID         string `bson:"_id"`
	NaturalIDs bool   `bson:"natural_ids"`
}

// openLayout decides each collection's layout. A recorded layout stands. Without a record, an
// empty collection is new: it is recorded as natural before anything is written to it. A
// collection with documents but no record was written by an earlier version, which knew no
// record, so it is read by its fields. Both checks stop at the first row (a find by _id; a
// find with no filter and a limit, which SQLite ends after one row).
func openLayout(ctx context.Context, db *mongo.Database) (keyLayout, error) {
	layouts := db.Collection(CollectionLayout)
	out := keyLayout{}
	for _, coll := range keyedCollections {
		var rec layoutDoc
		err := layouts.FindOne(ctx, bson.D{{Key: "_id", Value: coll}}).Decode(&rec)
		if err == nil {
			out[coll] = rec.NaturalIDs
			continue
		}
		if !errors.Is(err, mongo.ErrNoDocuments) {
			return nil, storeError("read store layout", err)
		}
		err = db.Collection(coll).FindOne(ctx, bson.D{}, options.FindOne().SetProjection(bson.D{{Key: "_id", Value: 1}})).Err()
		switch {
		case err == nil:
			out[coll] = false // an earlier version's documents
			continue
		case !errors.Is(err, mongo.ErrNoDocuments):
			return nil, storeError("read store layout", err)
		}
		_, err = layouts.InsertOne(ctx, layoutDoc{ID: coll, NaturalIDs: true})
		if err != nil && !mongo.IsDuplicateKeyError(err) {
			return nil, storeError("record store layout", err)
		}
		// Another Store may have recorded the collection first; its record is what counts.
		if err := layouts.FindOne(ctx, bson.D{{Key: "_id", Value: coll}}).Decode(&rec); err != nil {
			return nil, storeError("read store layout", err)
		}
		out[coll] = rec.NaturalIDs
	}
	lists, err := openUserLists(ctx, db)
	if err != nil {
		return nil, err
	}
	out[CollectionUserLists] = lists
	return out, nil
}

// pairKey is the natural _id of a document named by two IDs.
func pairKey(first, second string) (string, error) {
	if strings.Contains(first, "|") {
		return "", im.Errorf(im.EINVALID, "ID %q contains '|'", first)
	}
	return first + "|" + second, nil
}

// keyFilter is the filter that finds one document: by _id where the collection has natural
// keys, else by the fields that the unique index covers.
func (s *Store) keyFilter(coll, id string, fields bson.D) bson.D {
	if s.natural[coll] {
		return bson.D{{Key: "_id", Value: id}}
	}
	return fields
}

// maxPointReads bounds the finds by _id one call sends at a time on FerretDB.
const maxPointReads = 8

// findByIDs reads the documents with the given _ids. On MongoDB that is one $in query, which
// the _id index answers. On FerretDB, whose $in decodes the whole collection, it is one find
// per _id, maxPointReads at a time, so the caller waits about one round trip for a handful of
// documents and a round trip per maxPointReads more: the cost follows the documents asked for,
// never the collection's size. (One $in past 16 documents was cheaper on a small collection
// without the _id index; on a collection that grows with every message, as the client
// message IDs and the chunks do, it became most of an import's time at 20,000 messages.)
// Absent documents are simply not in the answer.
func findByIDs[T any](ctx context.Context, s *Store, c *mongo.Collection, op string, ids []string) ([]T, error) {
	ids = distinct(ids)
	if !s.ferret {
		return findAll[T](ctx, c, op, bson.D{{Key: "_id", Value: bson.D{{Key: "$in", Value: ids}}}})
	}
	found := make([]*T, len(ids))
	errs := make([]error, len(ids))
	sem := make(chan struct{}, maxPointReads)
	var wg sync.WaitGroup
	for i, id := range ids {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer func() { <-sem; wg.Done() }()
			var d T
			err := c.FindOne(ctx, bson.D{{Key: "_id", Value: id}}).Decode(&d)
			switch {
			case err == nil:
				found[i] = &d
			case !errors.Is(err, mongo.ErrNoDocuments):
				errs[i] = err
			}
		}()
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return nil, storeError(op, err)
	}
	out := make([]T, 0, len(ids))
	for _, d := range found {
		if d != nil {
			out = append(out, *d)
		}
	}
	return out, nil
}

func distinct(ids []string) []string {
	seen := make(map[string]bool, len(ids))
	out := make([]string, 0, len(ids))
	for _, id := range ids {
		if !seen[id] {
			seen[id] = true
			out = append(out, id)
		}
	}
	return out
}

// deleteByIDs deletes the documents with the given _ids in one delete command of one
// statement per _id: each statement's filter is a bare _id, which FerretDB hands to SQLite,
// where a single $in would make it decode the whole collection.
func deleteByIDs(ctx context.Context, c *mongo.Collection, op string, ids []string) (int64, error) {
	ids = distinct(ids)
	if len(ids) == 0 {
		return 0, nil
	}
	models := make([]mongo.WriteModel, len(ids))
	for i, id := range ids {
		models[i] = mongo.NewDeleteOneModel().SetFilter(bson.D{{Key: "_id", Value: id}})
	}
	res, err := c.BulkWrite(ctx, models, options.BulkWrite().SetOrdered(false))
	if err != nil {
		return 0, storeError(op, err)
	}
	return res.DeletedCount, nil
}
