package openim

import "time"

// Options configures a Store. The zero value reads a deployment with the defaults below, but
// refuses every token until Secret is set.
type Options struct {
	// Secret is the deployment's share.secret, the HS256 key OpenIM signs access tokens with.
	// Empty: VerifyToken refuses every token (msggate never guesses OpenIM's default secret).
	Secret string

	// MaxConversations bounds how many of a user's conversation documents UserConversations
	// reads (0 = 10000). The list is sorted by activity in memory, as msggate's own list is.
	MaxConversations int

	// MemoTTL, when set, makes the Store keep what it read from MongoDB for OpenIM's Redis
	// lacking it (ownership, membership, seq and seq_user documents) for this long, for a
	// caller that reports OpenIM's changes with Forget (the follower of OpenIM's feed). 0: off,
	// every request reads afresh.
	MemoTTL time.Duration
}

const defaultMaxConversations = 10000

func (o Options) maxConversations() int {
	if o.MaxConversations > 0 {
		return o.MaxConversations
	}
	return defaultMaxConversations
}
