package openim

import (
	"context"
	"strconv"

	"github.com/redis/go-redis/v9"
	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/msggate/msggate/internal/im"
)

// Where OpenIM keeps each number of a user's seq state (its readers, in
// pkg/common/storage/cache/redis and database/mgo, are what these functions follow):
//
//	max seq       MALLOC_SEQ:<conv> hash field CURR (seq_conversation.go malloc with size 0).
//	              When the key is missing OpenIM reseeds CURR from seq.max_seq, the end of the
//	              last block of seqs it reserved, not the last message; msggate instead takes
//	              the highest slot that holds a message (maxSeqFallback).
//	last activity MALLOC_SEQ:<conv> field TIME, ms of the last allocation (GetMaxSeqsWithTime).
//	min seq       MALLOC_MIN_SEQ:<conv> rockscache value, else seq.min_seq (GetMinSeq).
//	read seq      SEQ_USER_READ:<conv>:<user> rockscache value, else seq_user.read_seq
//	              (seq_user.go GetUserReadSeq): mark-read writes Redis only, MongoDB later.
//	user min seq  SEQ_USER_MIN:<conv>:<user>, else seq_user.min_seq (GetUserMinSeq).
//	user max seq  SEQ_USER_MAX:<conv>:<user>, else seq_user.max_seq (GetUserMaxSeq): set to the
//	              conversation's max seq when the user quits or is kicked from a group, 0 again
//	              on rejoin. When set it caps what the user reads (controller/msg.go
//	              GetMsgBySeqs), so it caps MaxSeq here.

// States returns userID's seq state in each conversation, aligned with conversationIDs:
// one Redis round trip for every conversation's keys (shared with other requests' under
// load), then, only for what Redis lacks, one MongoDB query on seq, one on seq_user and one on
// msg. A conversation OpenIM has no record of
// reads as all zeros. Errors: EINVALID for a bad ID, EUNAVAILABLE when a store fails.
func (s *Store) States(ctx context.Context, userID string, conversationIDs []string) ([]im.SeqState, error) {
	if err := validUserID(userID); err != nil {
		return nil, err
	}
	if err := validConversationIDs(conversationIDs); err != nil {
		return nil, err
	}
	out := make([]im.SeqState, len(conversationIDs))
	if len(conversationIDs) == 0 {
		return out, nil
	}

	type keys struct{ malloc, minSeq, read, umin, umax *redis.SliceCmd }
	cmds := make([]keys, len(conversationIDs))
	all := make([]redis.Cmder, 0, 5*len(conversationIDs))
	hmget := func(key string, fields ...string) *redis.SliceCmd {
		args := make([]any, 0, 2+len(fields))
		args = append(args, "hmget", key)
		for _, f := range fields {
			args = append(args, f)
		}
		cmd := redis.NewSliceCmd(ctx, args...)
		all = append(all, cmd)
		return cmd
	}
	for i, c := range conversationIDs {
		cmds[i] = keys{
			malloc: hmget("MALLOC_SEQ:"+c, "CURR", "TIME"),
			minSeq: hmget("MALLOC_MIN_SEQ:"+c, rocksFields...),
			read:   hmget("SEQ_USER_READ:"+c+":"+userID, rocksFields...),
			umin:   hmget("SEQ_USER_MIN:"+c+":"+userID, rocksFields...),
			umax:   hmget("SEQ_USER_MAX:"+c+":"+userID, rocksFields...),
		}
	}
	if err := s.reads.Do(ctx, all...); err != nil {
		return nil, redisError("read seq state", err)
	}

	// inRedis says which numbers Redis had; MongoDB is read for the others only.
	type inRedis struct {
		curr, minSeq, read, umin, umax bool
		userMax                        int64
	}
	found := make([]inRedis, len(conversationIDs))
	var needSeq, needUser []string
	for i, c := range conversationIDs {
		st, f := &out[i], &found[i]
		st.ConversationID = c
		var err error
		if st.MaxSeq, st.LastTime, f.curr, err = mallocSeq(cmds[i].malloc); err != nil {
			return nil, err
		}
		if st.MinSeq, f.minSeq, err = rocksInt(cmds[i].minSeq); err != nil {
			return nil, err
		}
		if st.ReadSeq, f.read, err = rocksInt(cmds[i].read); err != nil {
			return nil, err
		}
		if st.UserMinSeq, f.umin, err = rocksInt(cmds[i].umin); err != nil {
			return nil, err
		}
		if f.userMax, f.umax, err = rocksInt(cmds[i].umax); err != nil {
			return nil, err
		}
		if !f.curr || !f.minSeq {
			needSeq = append(needSeq, c)
		}
		if !f.read || !f.umin || !f.umax {
			needUser = append(needUser, c)
		}
	}

	seqDocs, err := s.readSeqDocs(ctx, needSeq)
	if err != nil {
		return nil, err
	}
	userDocs, err := s.readSeqUserDocs(ctx, userID, needUser)
	if err != nil {
		return nil, err
	}
	var fallback []string
	for i, c := range conversationIDs {
		st, f := &out[i], &found[i]
		if d, ok := seqDocs[c]; ok {
			if !f.minSeq {
				st.MinSeq = d.MinSeq
			}
			if !f.curr && d.MaxSeq > 0 {
				fallback = append(fallback, c)
			}
		}
		if d, ok := userDocs[c]; ok {
			if !f.read {
				st.ReadSeq = d.ReadSeq
			}
			if !f.umin {
				st.UserMinSeq = d.MinSeq
			}
			if !f.umax {
				f.userMax = d.MaxSeq
			}
		}
	}

	heads, err := s.maxSeqFallback(ctx, fallback, seqDocs)
	if err != nil {
		return nil, err
	}
	for i, c := range conversationIDs {
		st, f := &out[i], &found[i]
		if h, ok := heads[c]; ok {
			st.MaxSeq, st.LastTime = h.seq, h.time
		}
		if f.userMax > 0 && f.userMax < st.MaxSeq {
			st.MaxSeq = f.userMax
		}
	}
	return out, nil
}

// mallocSeq reads HMGET MALLOC_SEQ:<conv> CURR TIME. A key that only holds OpenIM's LOCK field
// (it is reseeding the key from MongoDB, for a few milliseconds) has no CURR and counts as
// missing. While a refill holds the lock on an existing key, CURR already equals the end of
// the old block and every seq up to it is being handed to the batch that triggered the refill,
// so it is a true max seq, as CURR always is a moment before the messages reach the cache.
func mallocSeq(cmd *redis.SliceCmd) (curr, lastTime int64, ok bool, err error) {
	vals, err := cmd.Result()
	if err != nil && err != redis.Nil {
		return 0, 0, false, redisError("read MALLOC_SEQ", err)
	}
	if len(vals) != 2 || vals[0] == nil {
		return 0, 0, false, nil
	}
	if curr, err = parseRedisInt(vals[0]); err != nil {
		return 0, 0, false, recordError("MALLOC_SEQ CURR", err)
	}
	if vals[1] != nil {
		if lastTime, err = parseRedisInt(vals[1]); err != nil {
			return 0, 0, false, recordError("MALLOC_SEQ TIME", err)
		}
	}
	return curr, lastTime, true, nil
}

func parseRedisInt(v any) (int64, error) {
	s, _ := v.(string)
	return strconv.ParseInt(s, 10, 64)
}

// seqDoc is OpenIM's seq document (pkg/common/storage/model/seq.go SeqConversation). OpenIM
// writes its numbers as int64 or, from $setOnInsert defaults, int32; both decode into int64.
type seqDoc struct {
	ConversationID string `bson:"conversation_id"`
	MaxSeq         int64  `bson:"max_seq"`
	MinSeq         int64  `bson:"min_seq"`
}

// seqUserDoc is OpenIM's seq_user document (model/seq_user.go SeqUser).
type seqUserDoc struct {
	ConversationID string `bson:"conversation_id"`
	MinSeq         int64  `bson:"min_seq"`
	MaxSeq         int64  `bson:"max_seq"`
	ReadSeq        int64  `bson:"read_seq"`
}

// readSeqDocs reads the seq documents of the conversations in one query. The index on
// conversation_id is not unique in OpenIM (mgo/seq_conversation.go NewSeqConversationMongo);
// OpenIM's own reads take the first match, and so does this.
func (s *Store) readSeqDocs(ctx context.Context, conversationIDs []string) (map[string]seqDoc, error) {
	return memoDocs(s.memo, 's', "", conversationIDs, func(ids []string) (map[string]seqDoc, error) {
		return s.findSeqDocs(ctx, ids)
	})
}

func (s *Store) findSeqDocs(ctx context.Context, conversationIDs []string) (map[string]seqDoc, error) {
	out := make(map[string]seqDoc, len(conversationIDs))
	if len(conversationIDs) == 0 {
		return out, nil
	}
	docs, err := findAll[seqDoc](ctx, s.seq, "find seq", bson.D{{Key: "conversation_id", Value: in(conversationIDs)}},
		bson.D{{Key: "_id", Value: 0}, {Key: "conversation_id", Value: 1}, {Key: "max_seq", Value: 1}, {Key: "min_seq", Value: 1}})
	if err != nil {
		return nil, err
	}
	for _, d := range docs {
		if _, dup := out[d.ConversationID]; !dup {
			out[d.ConversationID] = d
		}
	}
	return out, nil
}

// readSeqUserDocs reads the user's seq_user documents of the conversations in one query.
func (s *Store) readSeqUserDocs(ctx context.Context, userID string, conversationIDs []string) (map[string]seqUserDoc, error) {
	return memoDocs(s.memo, 'u', userID, conversationIDs, func(ids []string) (map[string]seqUserDoc, error) {
		return s.findSeqUserDocs(ctx, userID, ids)
	})
}

// memoDocs answers a read of documents by conversation from the memo where it can, and keeps
// what read returns, a document's absence included (a conversation's first message is reported
// by the feed, which forgets the conversation).
func memoDocs[T any](m *docMemo, kind byte, userID string, ids []string, read func([]string) (map[string]T, error)) (map[string]T, error) {
	if m == nil || len(ids) == 0 {
		return read(ids)
	}
	out := make(map[string]T, len(ids))
	var rest []string
	gens := map[string]uint64{}
	for _, id := range ids {
		if v, ok := m.get(memoKey{kind, userID, id}); ok {
			if d, found := v.(*T); found && d != nil {
				out[id] = *d
			}
			continue
		}
		gens[id] = m.generation(id)
		rest = append(rest, id)
	}
	if len(rest) == 0 {
		return out, nil
	}
	found, err := read(rest)
	if err != nil {
		return nil, err
	}
	for _, id := range rest {
		var kept *T
		if d, ok := found[id]; ok {
			out[id] = d
			kept = &d
		}
		m.put(memoKey{kind, userID, id}, gens[id], kept)
	}
	return out, nil
}

func (s *Store) findSeqUserDocs(ctx context.Context, userID string, conversationIDs []string) (map[string]seqUserDoc, error) {
	out := make(map[string]seqUserDoc, len(conversationIDs))
	if len(conversationIDs) == 0 {
		return out, nil
	}
	docs, err := findAll[seqUserDoc](ctx, s.seqUser, "find seq_user",
		bson.D{{Key: "user_id", Value: userID}, {Key: "conversation_id", Value: in(conversationIDs)}},
		bson.D{{Key: "_id", Value: 0}, {Key: "conversation_id", Value: 1}, {Key: "min_seq", Value: 1}, {Key: "max_seq", Value: 1}, {Key: "read_seq", Value: 1}})
	if err != nil {
		return nil, err
	}
	for _, d := range docs {
		if _, dup := out[d.ConversationID]; !dup {
			out[d.ConversationID] = d
		}
	}
	return out, nil
}
