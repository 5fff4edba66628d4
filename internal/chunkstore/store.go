package chunkstore

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"strings"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"

	"github.com/msggate/msggate/internal/im"
)

// Collection names.
const (
	CollectionChunks      = "msg"
	CollectionSeqs        = "seq"
	CollectionUserSeqs    = "seq_user"
	CollectionClientMsgID = "msg_client_id"
	CollectionGroupMember = "group_member"
)

// Store reads and writes msggate's MongoDB collections. It is safe for concurrent use.
type Store struct {
	db           *mongo.Database
	chunks       *mongo.Collection
	seqs         *mongo.Collection
	userSeqs     *mongo.Collection
	clientMsgIDs *mongo.Collection
	groupMembers *mongo.Collection
	// userConversations lists each user's conversations.
	userConversations *mongo.Collection
	// ownsClient: the store connected itself, so Close disconnects.
	ownsClient bool
	// locks serialise this Store's updates of one document; leases, set on a FerretDB that
	// other processes may write to, serialise them across processes (doc_lock.go).
	locks  keyLocks
	leases *leases
	// ferret: the server is FerretDB, which answers only bare _id filters without a scan
	// (natural_keys.go).
	ferret bool
	// natural says per collection whether documents are keyed by natural _id.
	natural keyLayout
}

// Open returns a Store on the database and creates the indexes it relies on. Creating an index
// that already exists is a no-op, so every gateway instance can call Open at start-up. On
// FerretDB the Store takes a lease for each update (Options.SoleWriter is false).
func Open(ctx context.Context, db *mongo.Database) (*Store, error) {
	return open(ctx, db, Options{})
}

// open is Open with the options that concern the Store itself: SoleWriter and LockLease.
func open(ctx context.Context, db *mongo.Database, opts Options) (*Store, error) {
	s := &Store{
		db:           db,
		chunks:       db.Collection(CollectionChunks),
		seqs:         db.Collection(CollectionSeqs),
		userSeqs:     db.Collection(CollectionUserSeqs),
		clientMsgIDs: db.Collection(CollectionClientMsgID),
		groupMembers: db.Collection(CollectionGroupMember),

		userConversations: db.Collection(CollectionUserConversation),
	}
	unique := func(c *mongo.Collection, keys ...string) error {
		d := bson.D{}
		for _, k := range keys {
			d = append(d, bson.E{Key: k, Value: 1})
		}
		_, err := c.Indexes().CreateOne(ctx, mongo.IndexModel{Keys: d, Options: options.Index().SetUnique(true)})
		if err != nil {
			return fmt.Errorf("chunkstore: create index on %s: %w", c.Name(), err)
		}
		return nil
	}
	for _, ix := range []struct {
		c    *mongo.Collection
		keys []string
	}{
		{s.chunks, []string{"doc_id"}},
		{s.seqs, []string{"conversation_id"}},
		{s.userSeqs, []string{"conversation_id", "user_id"}},
		{s.clientMsgIDs, []string{"conversation_id", "client_msg_id"}},
		{s.groupMembers, []string{"group_id", "user_id"}},
		{s.userConversations, []string{"user_id", "conversation_id"}},
	} {
		if err := unique(ix.c, ix.keys...); err != nil {
			return nil, storeError("create indexes", err)
		}
	}
	ferret, err := isFerretDB(ctx, db.Client())
	if err != nil {
		return nil, err
	}
	s.ferret = ferret
	if ferret && !opts.SoleWriter {
		s.leases = newLeases(db, cmp.Or(opts.LockLease, DefaultLockLease))
	}
	if s.natural, err = openLayout(ctx, db); err != nil {
		return nil, err
	}
	return s, nil
}

// Database returns the database the store works on.
func (s *Store) Database() *mongo.Database { return s.db }

// Ping checks that MongoDB answers.
func (s *Store) Ping(ctx context.Context) error {
	if err := s.db.Client().Ping(ctx, nil); err != nil {
		return storeError("ping", err)
	}
	return nil
}

// storeError turns a driver error into a domain error: failures a retry may cure become
// EUNAVAILABLE, the rest stay internal. The operation name goes into the cause for logs.
func storeError(op string, err error) error {
	if err == nil {
		return nil
	}
	cause := fmt.Errorf("mongodb %s: %w", op, err)
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) ||
		mongo.IsNetworkError(err) || mongo.IsTimeout(err) || errors.Is(err, mongo.ErrClientDisconnected) {
		return im.Unavailable("message store", cause)
	}
	var se mongo.ServerError
	if errors.As(err, &se) && (se.HasErrorLabel("RetryableWriteError") || se.HasErrorLabel("TransientTransactionError") ||
		se.HasErrorCode(maxTimeMSExpired) || serverDeadline(se)) {
		return im.Unavailable("message store", cause)
	}
	return cause
}

// maxTimeMSExpired is the server's answer to a command that ran out of the time the driver
// gave it (the client timeout is sent along as maxTimeMS).
const maxTimeMSExpired = 50

// serverDeadline reports a FerretDB answer to a command that ran out of its time: FerretDB
// returns an InternalError that names the context deadline instead of MaxTimeMSExpired. Like
// a timeout on the wire, it is a store too slow to answer, not a broken request.
func serverDeadline(se mongo.ServerError) bool {
	return strings.Contains(se.Error(), context.DeadlineExceeded.Error())
}

// findAll runs one find and decodes every document it returns.
func findAll[T any](ctx context.Context, c *mongo.Collection, op string, filter bson.D) ([]T, error) {
	cur, err := c.Find(ctx, filter)
	if err != nil {
		return nil, storeError(op, err)
	}
	var docs []T
	if err := cur.All(ctx, &docs); err != nil {
		return nil, storeError(op, err)
	}
	return docs, nil
}

// pairFilter matches the documents whose two fields hold one of the given pairs, as one query
// with a $in list per field rather than an $or of pairs: FerretDB evaluates a large $or clause
// by clause and slows down badly, while $in costs one set lookup per document. The query may
// also return pairs nobody asked for (one field from one pair, the other from another); the
// caller drops those.
func pairFilter(fieldA, fieldB string, pairs [][2]string) bson.D {
	var as, bs []string
	seenA, seenB := map[string]bool{}, map[string]bool{}
	for _, p := range pairs {
		if !seenA[p[0]] {
			seenA[p[0]] = true
			as = append(as, p[0])
		}
		if !seenB[p[1]] {
			seenB[p[1]] = true
			bs = append(bs, p[1])
		}
	}
	return bson.D{
		{Key: fieldA, Value: bson.D{{Key: "$in", Value: as}}},
		{Key: fieldB, Value: bson.D{{Key: "$in", Value: bs}}},
	}
}
