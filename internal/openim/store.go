package openim

import (
	"context"
	"fmt"
	"strings"

	"github.com/redis/go-redis/v9"
	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"

	"github.com/msggate/msggate/internal/cache"
	"github.com/msggate/msggate/internal/chunkstore"
)

// Collection names, from OpenIM's pkg/common/storage/model/msg.go (MsgTableName) and
// pkg/common/storage/database/name.go.
const (
	collMsg          = "msg"
	collSeq          = "seq"
	collSeqUser      = "seq_user"
	collConversation = "conversation"
	collGroupMember  = "group_member"
)

// requiredCollections are the collections whose absence means the database is not OpenIM's:
// OpenIM creates them (by creating their indexes) when its msg service starts.
var requiredCollections = []string{collMsg, collSeq}

// Store reads one OpenIM deployment. It is safe for concurrent use. A Store made by Open does
// not own the connections it was given (the caller closes them); one made by Connect does.
type Store struct {
	db  *mongo.Database
	rdb redis.UniversalClient
	// reads sends the per-request reads of OpenIM's Redis (token status, seq state) in round
	// trips shared with other requests' under load; each is still sent after it was made.
	reads *cache.SharedReads
	// claims remembers the checked claims of tokens (VerifyToken).
	claims verifiedClaims
	opts   Options
	// owned: the Store connected itself (Connect), so Close disconnects.
	owned bool

	msg, seq, seqUser, conversation, groupMember *mongo.Collection

	memo *docMemo // nil unless Options.MemoTTL
}

// Open checks that db is an OpenIM database and that OpenIM's Redis answers, and returns a
// Store over them. It reads the collection names and pings Redis; it creates nothing and writes
// nothing. A database without OpenIM's msg and seq collections is refused with ErrNotOpenIM
// and a message naming the missing ones; so is msggate's own database.
func Open(ctx context.Context, db *mongo.Database, rdb redis.UniversalClient, opts Options) (*Store, error) {
	if db == nil || rdb == nil {
		return nil, fmt.Errorf("openim: a MongoDB database and a Redis client are required")
	}
	names, err := db.ListCollectionNames(ctx, bson.D{})
	if err != nil {
		return nil, mongoError("list collections of "+db.Name(), err)
	}
	have := make(map[string]bool, len(names))
	for _, n := range names {
		have[n] = true
	}
	var missing []string
	for _, n := range requiredCollections {
		if !have[n] {
			missing = append(missing, n)
		}
	}
	// msggate's own database has msg and seq too (it keeps OpenIM's layout), so a gateway
	// pointed at it by mistake (msggate's default database name, say) would pass; the
	// collections only msggate creates tell it apart.
	for _, own := range []string{chunkstore.CollectionClientMsgID, chunkstore.CollectionUserConversation} {
		if have[own] {
			return nil, fmt.Errorf("%w: database %q is msggate's own (it has msggate's collection %s); name OpenIM's database (OpenIM's default is openim_v3)",
				ErrNotOpenIM, db.Name(), own)
		}
	}
	if len(missing) > 0 {
		what := "collection " + missing[0]
		if len(missing) > 1 {
			what = "collections " + strings.Join(missing, " and ")
		}
		return nil, fmt.Errorf("%w: database %q lacks OpenIM's %s (OpenIM v3.8 keeps its messages in msg and its seqs in seq; is this the right database?)",
			ErrNotOpenIM, db.Name(), what)
	}
	if err := rdb.Ping(ctx).Err(); err != nil {
		return nil, redisError("ping", err)
	}
	return &Store{
		db:           db,
		rdb:          rdb,
		reads:        cache.NewSharedReads(rdb, 0),
		opts:         opts,
		msg:          db.Collection(collMsg),
		seq:          db.Collection(collSeq),
		seqUser:      db.Collection(collSeqUser),
		conversation: db.Collection(collConversation),
		groupMember:  db.Collection(collGroupMember),
		memo:         newDocMemo(opts.MemoTTL),
	}, nil
}

// findAll runs one find and decodes every document.
func findAll[T any](ctx context.Context, c *mongo.Collection, op string, filter bson.D, projection bson.D) ([]T, error) {
	opts := options.Find()
	if projection != nil {
		opts.SetProjection(projection)
	}
	return findAllOpts[T](ctx, c, op, filter, opts)
}

func in(values []string) bson.D { return bson.D{{Key: "$in", Value: values}} }

// findAllOpts is findAll with the find's options (a sort, a limit) given whole.
func findAllOpts[T any](ctx context.Context, c *mongo.Collection, op string, filter bson.D, opts *options.FindOptionsBuilder) ([]T, error) {
	cur, err := c.Find(ctx, filter, opts)
	if err != nil {
		return nil, mongoError(op, err)
	}
	var docs []T
	if err := cur.All(ctx, &docs); err != nil {
		return nil, mongoError(op, err)
	}
	return docs, nil
}
