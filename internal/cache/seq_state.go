package cache

import (
	"context"
	"errors"
	"strconv"

	"github.com/redis/go-redis/v9"

	"github.com/msggate/msggate/internal/im"
)

// ConversationState is the cached seq state of one conversation.
type ConversationState struct {
	MaxSeq   int64
	MinSeq   int64
	LastTime int64 // send time of the newest stored message
	// ChunksVersion changes with every write to the conversation's chunks (InvalidateChunks):
	// a copy of a chunk read after this version was seen is current while the version stays.
	// Empty when Redis holds none (after a restart, until the next write or fill).
	ChunksVersion string
	// Cached is false on a miss; the other fields are then zero.
	Cached bool
}

// UserState is one user's cached read state in one conversation.
type UserState struct {
	ReadSeq    int64
	UserMinSeq int64
	Cached     bool
}

// StateQuery asks for one user's state in some conversations (UserID "": conversation state
// only).
type StateQuery struct {
	UserID          string
	ConversationIDs []string
}

// States is what GetStatesMany read: per query, aligned with its conversations; and, when
// asked, each query's user's event log head.
type States struct {
	Conversations [][]ConversationState
	Users         [][]UserState
	Heads         []im.Cursor
}

// GetStatesMany answers several state queries in one round trip: the seq state of each query's
// conversations and, when its UserID is not empty, that user's read state in each of them. An
// entry is cached only when all its fields are, so that a half-filled entry is read as a miss,
// never as zeros. With withHeads, the same round trip also reads (creating when needed) each
// query's user's event log head, so a state summary and the token it is valid from are read
// together.
func (c *Cache) GetStatesMany(ctx context.Context, queries []StateQuery, withHeads bool) (States, error) {
	if !withHeads {
		// Plain reads: the round trip may be shared with other requests' (coalescedReads).
		var cmds commands
		read := c.queueStateReads(ctx, &cmds, queries)
		if err := c.reads.do(ctx, c.rdb, cmds); err != nil {
			return States{}, cacheError("get states", err)
		}
		return read.result()
	}
	// With heads: a pipeline of its own, the heads first, since a change after a head is an
	// event after it, so states read after the head are never older than its token promises.
	pipe := c.rdb.Pipeline()
	heads := make([]*redis.Cmd, len(queries))
	for i, q := range queries {
		heads[i] = c.readEventsCmd(ctx, pipe, q.UserID, nil, 0)
	}
	read := c.queueStateReads(ctx, pipe, queries)
	read.headCmds = heads
	if pipe.Len() == 0 {
		return read.result()
	}
	if _, err := pipe.Exec(ctx); err != nil && !errors.Is(err, redis.Nil) {
		return States{}, cacheError("get states", err)
	}
	return read.result()
}

// statesRead is a state read queued on a pipeline, to be parsed once the pipeline ran, so
// that other reads can share its round trip. The conversations' states of all queries are one
// MGET (convMGet), or on a cluster, where the keys live in different slots, one GET each
// (convGets, in query order).
type statesRead struct {
	queries  []StateQuery
	headCmds []*redis.Cmd
	convMGet *redis.StringSliceCmd
	convGets []*redis.StringCmd
	userCmds []*redis.StringSliceCmd
}

// cmdQueue takes the commands of one round trip: a go-redis pipeline, or commands collected
// for coalescedReads.
type cmdQueue interface {
	Process(ctx context.Context, cmd redis.Cmder) error
}

// queueStateReads queues the reads of the queries' seq and read states on q.
func (c *Cache) queueStateReads(ctx context.Context, q cmdQueue, queries []StateQuery) *statesRead {
	r := &statesRead{queries: queries}
	n := 0
	for _, q := range queries {
		n += len(q.ConversationIDs)
	}
	keys := make([]string, 0, n)
	for _, q := range queries {
		for _, id := range q.ConversationIDs {
			keys = append(keys, c.seqStateKey(id))
		}
	}
	if _, cluster := c.rdb.(*redis.ClusterClient); cluster {
		r.convGets = make([]*redis.StringCmd, len(keys))
		for i, key := range keys {
			r.convGets[i] = redis.NewStringCmd(ctx, "get", key)
			_ = q.Process(ctx, r.convGets[i])
		}
	} else if len(keys) > 0 {
		r.convMGet = queueStrings(ctx, q, "mget", "", keys)
	}
	r.userCmds = make([]*redis.StringSliceCmd, len(queries))
	for qi, query := range queries {
		if query.UserID != "" && len(query.ConversationIDs) > 0 {
			r.userCmds[qi] = queueStrings(ctx, q, "hmget", c.readStateKey(query.UserID), query.ConversationIDs)
		}
	}
	return r
}

// queueStrings queues a command answering an array of strings (MGET, HMGET) so that its
// values come back as strings, a missing one as "": go-redis's own MGet and HMGet answer each
// value in an interface, an allocation per value. key, when not empty, goes before args.
func queueStrings(ctx context.Context, q cmdQueue, command, key string, args []string) *redis.StringSliceCmd {
	all := make([]any, 0, len(args)+2)
	all = append(all, command)
	if key != "" {
		all = append(all, key)
	}
	for _, a := range args {
		all = append(all, a)
	}
	cmd := redis.NewStringSliceCmd(ctx, all...)
	_ = q.Process(ctx, cmd) // queued: whoever sends the round trip reports its error
	return cmd
}

// result parses what the queued commands answered.
func (r *statesRead) result() (States, error) {
	res := States{Conversations: make([][]ConversationState, len(r.queries)), Users: make([][]UserState, len(r.queries))}
	if r.headCmds != nil {
		res.Heads = make([]im.Cursor, len(r.queries))
		for i, cmd := range r.headCmds {
			p, err := parseEventPage(cmd)
			if err != nil {
				return States{}, err
			}
			res.Heads[i] = p.Head
		}
	}
	var mget []string
	if r.convMGet != nil {
		mget, _ = r.convMGet.Result() // a failed read leaves every state a miss
	}
	next := 0 // the position of the query's first conversation in the MGET or the GETs
	for qi, q := range r.queries {
		res.Conversations[qi] = make([]ConversationState, len(q.ConversationIDs))
		res.Users[qi] = make([]UserState, len(q.ConversationIDs))
		for i := range q.ConversationIDs {
			var value string
			if r.convGets != nil {
				value, _ = r.convGets[next+i].Result()
			} else if next+i < len(mget) {
				value = mget[next+i]
			}
			res.Conversations[qi][i] = parseSeqState(value)
		}
		next += len(q.ConversationIDs)
		if r.userCmds[qi] == nil {
			continue
		}
		if vals, err := r.userCmds[qi].Result(); err == nil && len(vals) == len(q.ConversationIDs) {
			for i, v := range vals {
				res.Users[qi][i] = parseReadState(v)
			}
		}
	}
	return res, nil
}

// ConversationRaise raises cached conversation state; a nil field is left alone.
type ConversationRaise struct {
	ConversationID           string
	MaxSeq, MinSeq, LastTime *int64
	// Users, for a send to a single chat or a user's notifications, are the users whose
	// conversation order moves the conversation forward to LastTime (conversation_order.go).
	Users []string
}

// UserRaise raises one user's cached read state in one conversation; a nil field is left alone.
type UserRaise struct {
	UserID, ConversationID string
	ReadSeq, UserMinSeq    *int64
}

// RaiseStates raises cached seq and read state, in one round trip. Writers call it after
// MongoDB has the new values, readers to fill misses; since values only go up, the order in
// which the two arrive does not matter.
func (c *Cache) RaiseStates(ctx context.Context, convs []ConversationRaise, users []UserRaise) error {
	if len(convs) == 0 && len(users) == 0 {
		return nil
	}
	ttl := ms(c.opts.StateTTL)
	pipe := c.rdb.Pipeline()
	for _, r := range convs {
		args := []any{ttl, randomVersion()}
		if r.MaxSeq != nil {
			args = append(args, seqStateMax, *r.MaxSeq)
		}
		if r.MinSeq != nil {
			args = append(args, seqStateMin, *r.MinSeq)
		}
		if r.LastTime != nil {
			args = append(args, seqStateTime, *r.LastTime)
		}
		if len(args) > 2 {
			raiseSeqState.Eval(ctx, pipe, []string{c.seqStateKey(r.ConversationID)}, args...)
		}
	}
	for _, r := range users {
		if r.ReadSeq == nil && r.UserMinSeq == nil {
			continue
		}
		read, minSeq := "", ""
		if r.ReadSeq != nil {
			read = strconv.FormatInt(*r.ReadSeq, 10)
		}
		if r.UserMinSeq != nil {
			minSeq = strconv.FormatInt(*r.UserMinSeq, 10)
		}
		raiseReadState.Eval(ctx, pipe, []string{c.readStateKey(r.UserID)}, ttl, r.ConversationID, read, minSeq)
	}
	c.queueOrderRaises(ctx, pipe, convs)
	_, err := pipe.Exec(ctx)
	return cacheError("raise states", err)
}
