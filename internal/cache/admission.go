package cache

import (
	"context"

	"github.com/redis/go-redis/v9"
)

// Acquirer lets calls through to Redis or refuses them: *admission.Limiter is one. Each round
// trip (a command, or a pipeline or transaction with all its commands) holds one slot; the
// handshake of a new connection goes with the call that needed it.
type Acquirer interface {
	Acquire(ctx context.Context) (context.Context, func(), error)
}

// admissionHook holds every round trip to its Acquirer's slot. A refusal fails the call with
// the Acquirer's error, which cacheError makes EUNAVAILABLE: readers then go to MongoDB as for
// any Redis failure, and writers answer UNAVAILABLE with the refusal's retry hint.
type admissionHook struct{ a Acquirer }

func (admissionHook) DialHook(next redis.DialHook) redis.DialHook { return next }

func (h admissionHook) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		ctx, done, err := h.a.Acquire(ctx)
		if err != nil {
			cmd.SetErr(err)
			return err
		}
		defer done()
		return next(ctx, cmd)
	}
}

func (h admissionHook) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		ctx, done, err := h.a.Acquire(ctx)
		if err != nil {
			for _, cmd := range cmds {
				cmd.SetErr(err)
			}
			return err
		}
		defer done()
		return next(ctx, cmds)
	}
}
