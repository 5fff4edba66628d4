package cache

import (
	"context"
	"errors"
	"strconv"

	"github.com/redis/go-redis/v9"
)

// ConversationState is the cached seq state of one conversation.
type ConversationState struct {
	MaxSeq   int64
	MinSeq   int64
	LastTime int64 // send time of the newest stored message
	// Cached is false on a miss; the other fields are then zero.
	Cached bool
}

// UserState is one user's cached read state in one conversation.
type UserState struct {
	ReadSeq    int64
	UserMinSeq int64
	Cached     bool
}

// GetStates reads the seq state of the conversations and, when userID is not empty, that
// user's read state in each of them, all in one round trip. Both results are aligned with
// conversationIDs. An entry is cached only when all its fields are, so that a half-filled
// entry is read as a miss, never as zeros.
func (c *Cache) GetStates(ctx context.Context, userID string, conversationIDs []string) ([]ConversationState, []UserState, error) {
	convs := make([]ConversationState, len(conversationIDs))
	users := make([]UserState, len(conversationIDs))
	if len(conversationIDs) == 0 {
		return convs, users, nil
	}
	pipe := c.rdb.Pipeline()
	convCmds := make([]*redis.SliceCmd, len(conversationIDs))
	for i, id := range conversationIDs {
		convCmds[i] = pipe.HMGet(ctx, c.convKey(id, "seq"), "max", "min", "time")
	}
	var userCmd *redis.SliceCmd
	if userID != "" {
		fields := make([]string, 0, 2*len(conversationIDs))
		for _, id := range conversationIDs {
			fields = append(fields, id, id+"|min")
		}
		userCmd = pipe.HMGet(ctx, c.userReadKey(userID), fields...)
	}
	if _, err := pipe.Exec(ctx); err != nil && !errors.Is(err, redis.Nil) {
		return nil, nil, cacheError("get states", err)
	}
	for i, cmd := range convCmds {
		vals, err := cmd.Result()
		if err != nil {
			continue
		}
		maxSeq, ok1 := parseInt(vals[0])
		minSeq, ok2 := parseInt(vals[1])
		lastTime, ok3 := parseInt(vals[2])
		if ok1 && ok2 && ok3 {
			convs[i] = ConversationState{MaxSeq: maxSeq, MinSeq: minSeq, LastTime: lastTime, Cached: true}
		}
	}
	if userCmd != nil {
		if vals, err := userCmd.Result(); err == nil {
			for i := range conversationIDs {
				read, ok1 := parseInt(vals[2*i])
				minSeq, ok2 := parseInt(vals[2*i+1])
				if ok1 && ok2 {
					users[i] = UserState{ReadSeq: read, UserMinSeq: minSeq, Cached: true}
				}
			}
		}
	}
	return convs, users, nil
}

func parseInt(v any) (int64, bool) {
	s, ok := v.(string)
	if !ok {
		return 0, false
	}
	n, err := strconv.ParseInt(s, 10, 64)
	return n, err == nil
}

// raiseFields sets each field to the given value unless it already holds a larger one.
var raiseFields = redis.NewScript(`
for i = 2, #ARGV, 2 do
  local cur = redis.call('HGET', KEYS[1], ARGV[i])
  if cur == false or tonumber(cur) < tonumber(ARGV[i+1]) then
    redis.call('HSET', KEYS[1], ARGV[i], ARGV[i+1])
  end
end
redis.call('PEXPIRE', KEYS[1], ARGV[1])
return 1`)

// ConversationRaise raises cached conversation state; a nil field is left alone.
type ConversationRaise struct {
	ConversationID           string
	MaxSeq, MinSeq, LastTime *int64
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
		args := []any{ttl}
		if r.MaxSeq != nil {
			args = append(args, "max", *r.MaxSeq)
		}
		if r.MinSeq != nil {
			args = append(args, "min", *r.MinSeq)
		}
		if r.LastTime != nil {
			args = append(args, "time", *r.LastTime)
		}
		if len(args) > 1 {
			raiseFields.Eval(ctx, pipe, []string{c.convKey(r.ConversationID, "seq")}, args...)
		}
	}
	for _, r := range users {
		args := []any{ttl}
		if r.ReadSeq != nil {
			args = append(args, r.ConversationID, *r.ReadSeq)
		}
		if r.UserMinSeq != nil {
			args = append(args, r.ConversationID+"|min", *r.UserMinSeq)
		}
		if len(args) > 1 {
			raiseFields.Eval(ctx, pipe, []string{c.userReadKey(r.UserID)}, args...)
		}
	}
	_, err := pipe.Exec(ctx)
	return cacheError("raise states", err)
}
