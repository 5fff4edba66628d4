package cache

import (
	"context"

	"github.com/redis/go-redis/v9"
)

// Call is one command of a Redis round trip, as a RoundTripObserver sees it.
type Call struct {
	// Name is the command's name in lower case ("hmget", "evalsha", ...).
	Name string
	// Key is the command's first key (for EVAL and EVALSHA, the first key after the script
	// and the key count), or "" when it names none. For a command that takes no key it is
	// the first argument when that is a string ("client setinfo" gives "setinfo").
	Key string
	// Args is how many arguments follow the name (MGET's keys; HMGET's key and fields; a
	// script's hash, key count, keys and arguments): a command reading more keys or fields
	// carries more.
	Args int
}

// RoundTripObserver is told of each Redis round trip before it is made: one command, or one
// pipeline or transaction with all its commands. Tests count round trips with it, since the
// cost contracts of the read path are numbers of round trips. The connection handshake
// go-redis runs on every new connection (HELLO, CLIENT, ...) comes as round trips of its own.
type RoundTripObserver func(calls []Call)

// RoundTripHook returns a go-redis hook that tells observe of every round trip. Added to a
// cluster client, it sees each round trip once, as the caller made it, before go-redis splits
// it by node: a pipeline whose keys live on several masters is one round trip, since its
// shares go to the nodes at the same time.
func RoundTripHook(observe RoundTripObserver) redis.Hook { return roundTripHook{observe} }

type roundTripHook struct{ observe RoundTripObserver }

func (roundTripHook) DialHook(next redis.DialHook) redis.DialHook { return next }

func (h roundTripHook) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		h.observe([]Call{callOf(cmd)})
		return next(ctx, cmd)
	}
}

func (h roundTripHook) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		calls := make([]Call, len(cmds))
		for i, cmd := range cmds {
			calls[i] = callOf(cmd)
		}
		h.observe(calls)
		return next(ctx, cmds)
	}
}

func callOf(cmd redis.Cmder) Call {
	args := cmd.Args()
	c := Call{Name: cmd.Name(), Args: max(0, len(args)-1)}
	first := 1
	if c.Name == "evalsha" || c.Name == "eval" { // EVALSHA sha numkeys key...
		first = 3
	}
	if len(args) > first {
		c.Key, _ = args[first].(string)
	}
	return c
}
