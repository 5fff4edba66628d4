package chunkstore

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync/atomic"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"
	"go.mongodb.org/mongo-driver/v2/x/mongo/driver/topology"

	"github.com/msggate/msggate/internal/im"
)

// Collection names.
const (
	CollectionChunks   = "msg"
	CollectionSeqs     = "seq"
	CollectionUserSeqs = "seq_user"
	// CollectionClientMsgID holds the client message IDs as versions before
	// CollectionClientMsgKey kept them, without their sender (client_msg_id.go): read, never
	// written.
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
	// clientMsgKeys holds the client message IDs by conversation and sender (client_msg_id.go).
	clientMsgKeys *mongo.Collection
	groupMembers  *mongo.Collection
	// userConversations lists each user's conversations.
	userConversations *mongo.Collection
	// outbox holds the intents of changes not yet announced (outbox.go).
	outbox *mongo.Collection
	// ownsClient: the store connected itself, so Close disconnects.
	ownsClient bool
	// locks serialise this Store's updates of one document; leases, set on a FerretDB that
	// other processes may write to, serialise them across processes (doc_lock.go).
	locks  keyLocks
	leases *leases
	// admission bounds the operations in flight (Options.Admission); nil: no bound.
	admission Acquirer
	// ready, when not nil, is closed once a store started in the background is prepared
	// (background_start.go); stopStart ends the preparation when the Store is closed first.
	ready       chan struct{}
	stopStart   context.CancelFunc
	startFailed atomic.Bool
	// ferret: the server is FerretDB, which answers only bare _id filters without a scan
	// (natural_keys.go).
	ferret bool
	// natural says per collection whether documents are keyed by natural _id.
	natural keyLayout
	// senderlessClientMsgIDs: CollectionClientMsgID held documents when the Store was opened,
	// so a key without a claim of its own is looked up there too (client_msg_id.go).
	senderlessClientMsgIDs bool
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
		db:            db,
		chunks:        db.Collection(CollectionChunks),
		seqs:          db.Collection(CollectionSeqs),
		userSeqs:      db.Collection(CollectionUserSeqs),
		clientMsgIDs:  db.Collection(CollectionClientMsgID),
		clientMsgKeys: db.Collection(CollectionClientMsgKey),
		groupMembers:  db.Collection(CollectionGroupMember),

		userConversations: db.Collection(CollectionUserConversation),
		outbox:            db.Collection(CollectionOutbox),
		admission:         opts.Admission,
	}
	if opts.StartInBackground {
		// The preparation outlives Connect's context, and ends with Close.
		bg, stop := context.WithCancel(context.WithoutCancel(ctx))
		s.ready, s.stopStart = make(chan struct{}), stop
		go s.prepareInBackground(bg, db, opts)
		return s, nil
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
		{s.clientMsgKeys, []string{"conversation_id", "send_id", "client_msg_id"}},
		{s.groupMembers, []string{"group_id", "user_id"}},
		{s.userConversations, []string{"user_id", "conversation_id"}},
	} {
		if err := unique(ix.c, ix.keys...); err != nil {
			return nil, storeError("create indexes", err)
		}
	}
	if err := createOutboxIndex(ctx, s.outbox); err != nil {
		return nil, storeError("create indexes", err)
	}
	if err := createClientMsgIDIndex(ctx, s.clientMsgKeys); err != nil {
		return nil, storeError("create indexes", err)
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
	if s.senderlessClientMsgIDs, err = hasDocuments(ctx, s.clientMsgIDs); err != nil {
		return nil, err
	}
	return s, nil
}

// Ping checks that MongoDB answers.
func (s *Store) Ping(ctx context.Context) error {
	select {
	case <-s.Ready():
	default:
		return im.Unavailable("message store", errStarting)
	}
	if err := s.db.Client().Ping(ctx, nil); err != nil {
		return storeError("ping", err)
	}
	return nil
}

// storeError turns a driver error into a domain error: failures a retry may cure become
// EUNAVAILABLE, the rest stay internal. The operation name goes into the cause for logs.
//
// A retry may cure: a store that is down, restarting or too slow, as the driver reports it
// (network errors, timeouts, no server to select, a wait for a pooled connection that ran
// out, a closed client), as the server reports it (transientCodes, retryable labels, a command
// out of its time) or as FerretDB reports its SQLite backend while it starts or stops
// (ferretTransient).
func storeError(op string, err error) error {
	if err == nil {
		return nil
	}
	cause := fmt.Errorf("mongodb %s: %w", op, err)
	if im.Transient(err) || mongo.IsNetworkError(err) || mongo.IsTimeout(err) ||
		errors.Is(err, mongo.ErrClientDisconnected) || errors.Is(err, topology.ErrTopologyClosed) ||
		errors.As(err, &topology.ServerSelectionError{}) || errors.As(err, &topology.WaitQueueTimeoutError{}) {
		return im.Unavailable("message store", cause)
	}
	var se mongo.ServerError
	if errors.As(err, &se) && (se.HasErrorLabel("RetryableWriteError") || se.HasErrorLabel("TransientTransactionError") ||
		se.HasErrorLabel("NetworkError") || slices.ContainsFunc(transientCodes, se.HasErrorCode) ||
		serverDeadline(se) || ferretTransient(se)) {
		return im.Unavailable("message store", cause)
	}
	return cause
}

// maxTimeMSExpired is the server's answer to a command that ran out of the time the driver
// gave it (the client timeout is sent along as maxTimeMS).
const maxTimeMSExpired = 50

// transientCodes are MongoDB's codes for a server that cannot serve now (shutting down,
// stepping down, out of time, unreachable), as the drivers' retry rules list them.
var transientCodes = []int{
	6,  // HostUnreachable
	7,  // HostNotFound
	24, // LockTimeout
	maxTimeMSExpired,
	89,    // NetworkTimeout
	91,    // ShutdownInProgress
	189,   // PrimarySteppedDown
	262,   // ExceededTimeLimit
	9001,  // SocketException
	10107, // NotWritablePrimary
	11600, // InterruptedAtShutdown
	11602, // InterruptedDueToReplStateChange
	13435, // NotPrimaryNoSecondaryOk
	13436, // NotPrimaryOrSecondary
}

// serverDeadline reports a FerretDB answer to a command that ran out of its time: FerretDB
// returns an InternalError that names the context deadline instead of MaxTimeMSExpired. Like
// a timeout on the wire, it is a store too slow to answer, not a broken request.
func serverDeadline(se mongo.ServerError) bool {
	return strings.Contains(se.Error(), context.DeadlineExceeded.Error())
}

// ferretTransient reports FerretDB's answers while its SQLite backend is busy, starting or
// closing: InternalErrors that name the backend's state rather than the request.
func ferretTransient(se mongo.ServerError) bool {
	msg := se.Error()
	for _, s := range []string{"database is locked", "SQLITE_BUSY", "sql: database is closed", "context canceled", "connection reset", "broken pipe"} {
		if strings.Contains(msg, s) {
			return true
		}
	}
	return false
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

// pairFilter matches the documents whose two fields hold one of the given pairs (tupleFilter).
func pairFilter(fieldA, fieldB string, pairs [][2]string) bson.D {
	rows := make([][]string, len(pairs))
	for i, p := range pairs {
		rows[i] = p[:]
	}
	return tupleFilter([]string{fieldA, fieldB}, rows)
}

// tupleFilter matches the documents whose fields hold one of the given rows of values, as one
// query with a $in list per field rather than an $or of rows: FerretDB evaluates a large $or
// clause by clause and slows down badly, while $in costs one set lookup per document. The query
// may also return rows nobody asked for (one field from one row, another from another); the
// caller drops those.
func tupleFilter(fields []string, rows [][]string) bson.D {
	out := make(bson.D, len(fields))
	for f, field := range fields {
		var vals []string
		seen := map[string]bool{}
		for _, r := range rows {
			if !seen[r[f]] {
				seen[r[f]] = true
				vals = append(vals, r[f])
			}
		}
		out[f] = bson.E{Key: field, Value: bson.D{{Key: "$in", Value: vals}}}
	}
	return out
}
