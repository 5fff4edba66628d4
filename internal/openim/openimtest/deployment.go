package openimtest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"sort"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"
	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"
)

// TTLs OpenIM gives its Redis keys.
const (
	mallocSeqTTL  = 365 * 24 * time.Hour // cache/redis/seq_conversation.go dataTime
	msgCacheTTL   = 24 * time.Hour       // cache/redis/msg.go msgCacheTimeout
	readSeqTTL    = 30 * 24 * time.Hour  // cache/redis/seq_user.go readExpireTime
	userSeqTTL    = 7 * 24 * time.Hour   // cache/redis/seq_user.go expireTime
	minSeqTTL     = time.Hour            // cache/redis/seq_conversation.go minSeqExpireTime
	rocksDelay    = 10 * time.Second     // rockscache NewDefaultOptions Delay (OpenIM keeps it)
	rocksLockTime = 11 * time.Second     // cache/redis/batch_handler.go rocksCacheTimeout
)

// TB is what a Deployment needs of its caller: a *testing.T or *testing.B, or the bench's
// fixture, which fills a deployment outside any test.
type TB interface {
	Helper()
	Fatalf(format string, args ...any)
	Cleanup(func())
}

// Deployment is an OpenIM deployment's MongoDB database and Redis, written as OpenIM writes.
type Deployment struct {
	t     TB
	DB    *mongo.Database
	Redis redis.UniversalClient
	// Secret is the deployment's share.secret (OpenIM's default config value).
	Secret string
	clock  atomic.Int64
}

// New prepares db the way OpenIM's services do when they start: they create the indexes of
// the collections they use (and so the collections). Nothing else is written.
func New(t TB, db *mongo.Database, rdb redis.UniversalClient) *Deployment {
	t.Helper()
	d := &Deployment{t: t, DB: db, Redis: rdb, Secret: "openIM123"}
	d.clock.Store(time.Now().UnixMilli())
	ctx := context.Background()
	for _, ix := range []struct {
		coll   string
		keys   bson.D
		unique bool
	}{
		// database/mgo/msg.go NewMsgMongo
		{"msg", bson.D{{Key: "doc_id", Value: 1}}, true},
		// database/mgo/seq_conversation.go NewSeqConversationMongo: NOT unique
		{"seq", bson.D{{Key: "conversation_id", Value: 1}}, false},
		// database/mgo/seq_user.go NewSeqUserMongo: not unique
		{"seq_user", bson.D{{Key: "user_id", Value: 1}, {Key: "conversation_id", Value: 1}}, false},
		// database/mgo/conversation.go NewConversationMongo
		{"conversation", bson.D{{Key: "owner_user_id", Value: 1}, {Key: "conversation_id", Value: 1}}, true},
		// database/mgo/group_member.go NewGroupMember
		{"group_member", bson.D{{Key: "group_id", Value: 1}, {Key: "user_id", Value: 1}}, true},
	} {
		model := mongo.IndexModel{Keys: ix.keys}
		if ix.unique {
			model.Options = options.Index().SetUnique(true)
		}
		if _, err := db.Collection(ix.coll).Indexes().CreateOne(ctx, model); err != nil {
			t.Fatalf("openimtest: create index on %s: %v", ix.coll, err)
		}
	}
	return d
}

// NewAt is New over the redis-server at addr, with a client of its own closed when the test
// ends: for callers that hold no Redis client themselves.
func NewAt(t TB, db *mongo.Database, redisAddr string) *Deployment {
	t.Helper()
	rdb := redis.NewClient(&redis.Options{Addr: redisAddr})
	t.Cleanup(func() { _ = rdb.Close() })
	return New(t, db, rdb)
}

// Dial is New over the MongoDB at mongoURI (its database) and the redis-server at redisAddr,
// with clients of its own closed by t's cleanups: for callers that hold neither driver.
func Dial(t TB, mongoURI, database, redisAddr string) *Deployment {
	t.Helper()
	client, err := mongo.Connect(options.Client().ApplyURI(mongoURI))
	if err != nil {
		t.Fatalf("openimtest: connect to MongoDB: %v", err)
		return nil
	}
	t.Cleanup(func() { _ = client.Disconnect(context.Background()) })
	return NewAt(t, client.Database(database), redisAddr)
}

// Now is the deployment's clock in ms: real time at New, one ms further on every call, so
// that messages and allocations are strictly ordered.
func (d *Deployment) Now() int64 { return d.clock.Add(1) }

func (d *Deployment) check(err error, what string) {
	d.t.Helper()
	if err != nil {
		d.t.Fatalf("openimtest: %s: %v", what, err)
	}
}

// SingleConversationID is GenConversationIDForSingle: "si_" + the two user IDs, sorted.
func SingleConversationID(a, b string) string {
	ids := []string{a, b}
	sort.Strings(ids)
	return "si_" + strings.Join(ids, "_")
}

// GroupConversationID is the super group conversation "sg_" + group ID.
func GroupConversationID(groupID string) string { return "sg_" + groupID }

// Single is a single-chat message as a client sends it.
func Single(from, to string, contentType int32, content string) *MsgData {
	return &MsgData{SendID: from, RecvID: to, ClientMsgID: randomID(), SenderPlatformID: 1,
		SessionType: SingleChatType, MsgFrom: 100, ContentType: contentType, Content: content,
		Options: map[string]bool{}}
}

// Group is a group message as a client sends it.
func Group(from, groupID string, contentType int32, content string) *MsgData {
	return &MsgData{SendID: from, GroupID: groupID, ClientMsgID: randomID(), SenderPlatformID: 1,
		SessionType: ReadGroupChatType, MsgFrom: 100, ContentType: contentType, Content: content,
		Options: map[string]bool{}}
}

// TextContent is a text element's content as OpenIM's clients send it.
func TextContent(text string) string {
	b, _ := json.Marshal(map[string]string{"content": text})
	return string(b)
}

func randomID() string {
	b := make([]byte, 16)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// Send stores msgs in the conversation as msgtransfer does: seqs from the Redis allocator
// (Malloc), every message into the Redis message cache (BatchInsertChat2Cache,
// SetMessageBySeqs), each sender's read seq raised in Redis (SetHasReadSeqs), the
// conversation documents created when the conversation is new, then the messages written to
// MongoDB by the toMongo consumer (BatchInsertChat2DB, BatchInsertBlock). It returns the seqs.
func (d *Deployment) Send(conversationID string, msgs ...*MsgData) []int64 {
	d.t.Helper()
	return d.send(conversationID, true, msgs)
}

// SendInFlight does what Send does up to the Kafka hand-off to MongoDB: the messages have seqs
// and are in the Redis message cache, not yet in MongoDB.
func (d *Deployment) SendInFlight(conversationID string, msgs ...*MsgData) []int64 {
	d.t.Helper()
	return d.send(conversationID, false, msgs)
}

func (d *Deployment) send(conversationID string, toMongo bool, msgs []*MsgData) []int64 {
	d.t.Helper()
	ctx := context.Background()
	first := d.Malloc(conversationID, int64(len(msgs)))
	seqs := make([]int64, len(msgs))
	lastBySender := map[string]int64{}
	for i, m := range msgs {
		now := d.Now()
		if m.SendTime == 0 {
			m.SendTime = now
		}
		if m.CreateTime == 0 {
			m.CreateTime = now
		}
		if m.ServerMsgID == "" {
			m.ServerMsgID = randomID()
		}
		m.Status = StatusSending
		m.Seq = first + int64(i) + 1
		seqs[i] = m.Seq
		lastBySender[m.SendID] = m.Seq
		data, err := json.Marshal(&MsgInfo{Msg: m})
		d.check(err, "encode cached message")
		d.rocksRawSet(ctx, msgCacheKey(conversationID, m.Seq), string(data), msgCacheTTL)
	}
	for sender, seq := range lastBySender {
		d.SetReadSeq(conversationID, sender, seq)
	}
	if first == 0 {
		d.createConversations(conversationID, msgs[0])
	}
	if toMongo {
		stored := make([]*MsgData, len(msgs))
		for i, m := range msgs {
			c := *m
			if c.Status == StatusSending {
				c.Status = StatusSendSuccess
			}
			stored[i] = &c
		}
		d.WriteMessages(conversationID, stored)
	}
	return seqs
}

// ToMongo is the toMongo consumer catching up: it writes messages Send left in flight.
func (d *Deployment) ToMongo(conversationID string, msgs ...*MsgData) {
	d.t.Helper()
	stored := make([]*MsgData, len(msgs))
	for i, m := range msgs {
		c := *m
		c.Status = StatusSendSuccess
		stored[i] = &c
	}
	d.WriteMessages(conversationID, stored)
}

// createConversations is what handleMsg asks the conversation service for when a
// conversation's first message arrives (CreateSingleChatConversations,
// CreateGroupChatConversations for the group's members).
func (d *Deployment) createConversations(conversationID string, m *MsgData) {
	d.t.Helper()
	switch m.SessionType {
	case SingleChatType:
		d.CreateConversation(Conversation{OwnerUserID: m.SendID, ConversationID: conversationID, ConversationType: SingleChatType, UserID: m.RecvID})
		if m.RecvID != m.SendID {
			d.CreateConversation(Conversation{OwnerUserID: m.RecvID, ConversationID: conversationID, ConversationType: SingleChatType, UserID: m.SendID})
		}
	case ReadGroupChatType:
		cur, err := d.DB.Collection("group_member").Find(context.Background(), bson.D{{Key: "group_id", Value: m.GroupID}})
		d.check(err, "find group members")
		var members []GroupMember
		d.check(cur.All(context.Background(), &members), "decode group members")
		var ids []string
		for _, gm := range members {
			ids = append(ids, gm.UserID)
		}
		d.CreateGroupChatConversations(m.GroupID, ids...)
	}
}

// CreateConversation inserts a conversation document (conversationDatabase.CreateConversation).
func (d *Deployment) CreateConversation(c Conversation) {
	d.t.Helper()
	_, err := d.DB.Collection("conversation").InsertOne(context.Background(), c)
	d.check(err, "insert conversation")
}

// CreateGroupChatConversations is the conversation service's call of the same name: a
// document for each user that has none, max_seq reset to 0 on the existing ones, and the users'
// max seq (seq_user.max_seq) reset to 0 (a rejoin lifts the cap a quit set).
func (d *Deployment) CreateGroupChatConversations(groupID string, userIDs ...string) {
	d.t.Helper()
	ctx := context.Background()
	conv := GroupConversationID(groupID)
	coll := d.DB.Collection("conversation")
	for _, u := range userIDs {
		n, err := coll.CountDocuments(ctx, bson.D{{Key: "owner_user_id", Value: u}, {Key: "conversation_id", Value: conv}})
		d.check(err, "count conversation")
		if n == 0 {
			d.CreateConversation(Conversation{OwnerUserID: u, ConversationID: conv, ConversationType: ReadGroupChatType, GroupID: groupID})
			continue
		}
		_, err = coll.UpdateMany(ctx, bson.D{{Key: "owner_user_id", Value: u}, {Key: "conversation_id", Value: conv}},
			bson.D{{Key: "$set", Value: bson.D{{Key: "max_seq", Value: 0}}}})
		d.check(err, "reset conversation max_seq")
	}
	for _, u := range userIDs {
		d.SetUserMaxSeq(conv, u, 0)
	}
}

// AddGroupMember inserts a group_member document as CreateGroup and the join paths do.
func (d *Deployment) AddGroupMember(groupID, userID string, role int32) {
	d.t.Helper()
	_, err := d.DB.Collection("group_member").InsertOne(context.Background(), GroupMember{
		GroupID: groupID, UserID: userID, RoleLevel: role, JoinSource: 2, JoinTime: time.UnixMilli(d.Now()),
		MuteEndTime: time.UnixMilli(0),
	})
	d.check(err, "insert group member")
}

// QuitGroup removes a member and freezes what they may read at the conversation's current max
// seq (group.go deleteMemberAndSetConversationSeq, conversation.go SetConversationMaxSeq:
// seq_user.max_seq through SetUserConversationsMaxSeq, and the conversation document's
// max_seq).
func (d *Deployment) QuitGroup(groupID, userID string) {
	d.t.Helper()
	ctx := context.Background()
	_, err := d.DB.Collection("group_member").DeleteOne(ctx, bson.D{{Key: "group_id", Value: groupID}, {Key: "user_id", Value: userID}})
	d.check(err, "delete group member")
	conv := GroupConversationID(groupID)
	maxSeq := d.Malloc(conv, 0)
	d.SetUserMaxSeq(conv, userID, maxSeq)
	_, err = d.DB.Collection("conversation").UpdateMany(ctx,
		bson.D{{Key: "owner_user_id", Value: userID}, {Key: "conversation_id", Value: conv}},
		bson.D{{Key: "$set", Value: bson.D{{Key: "max_seq", Value: maxSeq}}}})
	d.check(err, "set conversation max_seq")
}

// Malloc is seqConversationCacheRedis.mallocTime: size seqs from MALLOC_SEQ:<conv>, refilling
// the block from MongoDB's seq.max_seq (Malloc: $inc by 100+size for groups, 50+size
// otherwise, and $set min_seq 0) when the key is missing or the block is used up. Size 0 reads
// the current max seq (and seeds the key from seq.max_seq when it is missing, as OpenIM does).
// It returns the seq before the allocated ones.
func (d *Deployment) Malloc(conversationID string, size int64) int64 {
	d.t.Helper()
	ctx := context.Background()
	key := "MALLOC_SEQ:" + conversationID
	vals, err := d.Redis.HMGet(ctx, key, "CURR", "LAST").Result()
	d.check(err, "read MALLOC_SEQ")
	now := d.Now()
	if vals[0] == nil { // state 1: no key
		block := mallocSize(conversationID, size)
		start := d.mongoMalloc(conversationID, block)
		d.setMallocSeq(key, start+size, start+block, now)
		return start
	}
	curr, _ := strconv.ParseInt(vals[0].(string), 10, 64)
	last, _ := strconv.ParseInt(vals[1].(string), 10, 64)
	if size == 0 {
		d.check(d.Redis.Expire(ctx, key, mallocSeqTTL).Err(), "refresh MALLOC_SEQ")
		return curr
	}
	if curr+size <= last { // state 0
		d.check(d.Redis.HSet(ctx, key, "CURR", curr+size, "TIME", now).Err(), "advance MALLOC_SEQ")
		d.check(d.Redis.Expire(ctx, key, mallocSeqTTL).Err(), "refresh MALLOC_SEQ")
		return curr
	}
	// state 3: block used up
	block := mallocSize(conversationID, size)
	start := d.mongoMalloc(conversationID, block)
	if start == last {
		d.setMallocSeq(key, curr+size, start+block, now)
		return curr
	}
	d.setMallocSeq(key, start+size, start+block, now)
	return start
}

func (d *Deployment) setMallocSeq(key string, curr, last, now int64) {
	d.t.Helper()
	ctx := context.Background()
	d.check(d.Redis.HSet(ctx, key, "CURR", curr, "LAST", last, "TIME", now).Err(), "set MALLOC_SEQ")
	d.check(d.Redis.Expire(ctx, key, mallocSeqTTL).Err(), "expire MALLOC_SEQ")
}

// mallocSize is getMallocSize.
func mallocSize(conversationID string, size int64) int64 {
	if size == 0 {
		return 0
	}
	if strings.HasPrefix(conversationID, "g_") || strings.HasPrefix(conversationID, "sg_") {
		return 100 + size
	}
	return 50 + size
}

// mongoMalloc is seqConversationMongo.Malloc.
func (d *Deployment) mongoMalloc(conversationID string, size int64) int64 {
	d.t.Helper()
	ctx := context.Background()
	coll := d.DB.Collection("seq")
	if size == 0 {
		var doc struct {
			MaxSeq int64 `bson:"max_seq"`
		}
		err := coll.FindOne(ctx, bson.D{{Key: "conversation_id", Value: conversationID}}).Decode(&doc)
		if errors.Is(err, mongo.ErrNoDocuments) {
			return 0
		}
		d.check(err, "read seq")
		return doc.MaxSeq
	}
	var doc struct {
		MaxSeq int64 `bson:"max_seq"`
	}
	err := coll.FindOneAndUpdate(ctx, bson.D{{Key: "conversation_id", Value: conversationID}},
		bson.D{{Key: "$inc", Value: bson.D{{Key: "max_seq", Value: size}}}, {Key: "$set", Value: bson.D{{Key: "min_seq", Value: int64(0)}}}},
		// OpenIM also projects the answer to max_seq; FerretDB cannot, and the stored document
		// is the same either way.
		options.FindOneAndUpdate().SetUpsert(true).SetReturnDocument(options.After)).Decode(&doc)
	d.check(err, "malloc seq")
	return doc.MaxSeq - size
}

// LoseSeqCache deletes MALLOC_SEQ:<conv>, as a Redis flush or eviction does.
func (d *Deployment) LoseSeqCache(conversationID string) {
	d.t.Helper()
	d.check(d.Redis.Del(context.Background(), "MALLOC_SEQ:"+conversationID).Err(), "delete MALLOC_SEQ")
}

func msgCacheKey(conversationID string, seq int64) string {
	return "MSG_CACHE:" + conversationID + ":" + strconv.FormatInt(seq, 10)
}
