package cache

import (
	"context"
	"errors"
	"time"

	"github.com/redis/go-redis/v9"
)

// CallObserver is told how long each Redis round trip took: label is the command name for a
// single command, "pipeline" for a pipeline or transaction (one round trip whatever it holds),
// and "connect" for the handshake go-redis runs on every new connection.
type CallObserver func(label string, took time.Duration, failed bool)

// TimingHook returns a go-redis hook that times every call for observe (metrics). Add it next
// to any other hook; go-redis runs them all.
func TimingHook(observe CallObserver) redis.Hook { return timingHook{observe} }

type timingHook struct{ observe CallObserver }

func (timingHook) DialHook(next redis.DialHook) redis.DialHook { return next }

func (h timingHook) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		began := time.Now()
		err := next(ctx, cmd)
		label := cmd.Name()
		if handshake(cmd) {
			label = "connect"
		}
		h.observe(label, time.Since(began), failed(label, err))
		return err
	}
}

func (h timingHook) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		began := time.Now()
		err := next(ctx, cmds)
		label := "connect"
		for _, cmd := range cmds {
			if !handshake(cmd) {
				label = "pipeline"
				break
			}
		}
		h.observe(label, time.Since(began), failed(label, err))
		return err
	}
}

// handshake tells the commands go-redis sends to set up a connection.
func handshake(cmd redis.Cmder) bool {
	switch cmd.Name() {
	case "hello", "auth", "select", "client", "readonly":
		return true
	}
	return false
}

// failed leaves out the errors go-redis expects and recovers from, which would otherwise show
// as failures on a healthy server: a missing key (redis.Nil), an EVALSHA of a script the
// server has not seen yet (NOSCRIPT: go-redis then sends EVAL), and a handshake command an
// older server does not know (go-redis then carries on without it). A handshake that fails
// for real fails the command that needed the connection, which is counted.
func failed(label string, err error) bool {
	switch {
	case err == nil, errors.Is(err, redis.Nil), label == "connect":
		return false
	case redis.HasErrorPrefix(err, "NOSCRIPT"):
		return false
	}
	return true
}
