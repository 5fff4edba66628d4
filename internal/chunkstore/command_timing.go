package chunkstore

import (
	"context"
	"time"

	"go.mongodb.org/mongo-driver/v2/event"
)

// CommandObserver is told how long each MongoDB command took, as the driver measured it, and
// whether it failed.
type CommandObserver func(command string, took time.Duration, failed bool)

// TimingMonitor returns a command monitor that reports every command to observe (metrics).
// next, when not nil, sees every event too: a client takes one monitor, and tests count
// commands through theirs.
func TimingMonitor(next *event.CommandMonitor, observe CommandObserver) *event.CommandMonitor {
	if next == nil {
		next = &event.CommandMonitor{}
	}
	return &event.CommandMonitor{
		Started: next.Started,
		Succeeded: func(ctx context.Context, e *event.CommandSucceededEvent) {
			observe(e.CommandName, e.Duration, false)
			if next.Succeeded != nil {
				next.Succeeded(ctx, e)
			}
		},
		Failed: func(ctx context.Context, e *event.CommandFailedEvent) {
			observe(e.CommandName, e.Duration, true)
			if next.Failed != nil {
				next.Failed(ctx, e)
			}
		},
	}
}
