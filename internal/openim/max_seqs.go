package openim

import (
	"context"

	"github.com/redis/go-redis/v9"
)

// ConversationHead is a conversation's newest seq and when it was allocated.
type ConversationHead struct {
	MaxSeq   int64
	LastTime int64 // ms
}

// MaxSeqs returns each conversation's max seq and last allocation time, aligned with
// conversationIDs, read as States reads them (MALLOC_SEQ, else the seq document and the chunks
// below its reservation), without any user's numbers. A follower of OpenIM's changes compares
// them with what it has logged to find what never reached it.
func (s *Store) MaxSeqs(ctx context.Context, conversationIDs []string) ([]ConversationHead, error) {
	if err := validConversationIDs(conversationIDs); err != nil {
		return nil, err
	}
	out := make([]ConversationHead, len(conversationIDs))
	if len(conversationIDs) == 0 {
		return out, nil
	}
	cmds := make([]*redis.SliceCmd, len(conversationIDs))
	pipe := s.rdb.Pipeline()
	for i, c := range conversationIDs {
		cmds[i] = pipe.HMGet(ctx, "MALLOC_SEQ:"+c, "CURR", "TIME")
	}
	if _, err := pipe.Exec(ctx); err != nil && err != redis.Nil {
		return nil, redisError("read MALLOC_SEQ", err)
	}
	var missing []string
	for i, c := range conversationIDs {
		curr, lastTime, ok, err := mallocSeq(cmds[i])
		if err != nil {
			return nil, err
		}
		out[i] = ConversationHead{MaxSeq: curr, LastTime: lastTime}
		if !ok {
			missing = append(missing, c)
		}
	}
	if len(missing) == 0 {
		return out, nil
	}
	seqDocs, err := s.readSeqDocs(ctx, missing)
	if err != nil {
		return nil, err
	}
	var fallback []string
	for _, c := range missing {
		if d, ok := seqDocs[c]; ok && d.MaxSeq > 0 {
			fallback = append(fallback, c)
		}
	}
	heads, err := s.maxSeqFallback(ctx, fallback, seqDocs)
	if err != nil {
		return nil, err
	}
	for i, c := range conversationIDs {
		if h, ok := heads[c]; ok {
			out[i] = ConversationHead{MaxSeq: h.seq, LastTime: h.time}
		}
	}
	return out, nil
}
