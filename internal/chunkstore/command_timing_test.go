package chunkstore_test

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/event"

	"github.com/msggate/msggate/internal/chunkstore"
	"github.com/msggate/msggate/internal/devtools/testenv"
)

// Ensure the timing monitor reports commands by name and failures, and still calls the
// monitor it wraps.
func TestTimingMonitor(t *testing.T) {
	var mu sync.Mutex
	calls, failures := map[string]int{}, map[string]int{}
	var took time.Duration
	observe := func(command string, d time.Duration, failed bool) {
		mu.Lock()
		defer mu.Unlock()
		calls[command]++
		took += d
		if failed {
			failures[command]++
		}
	}
	var seen testenv.MongoCommands
	var failedToo atomic.Int32
	inner := seen.Monitor()
	inner.Failed = func(context.Context, *event.CommandFailedEvent) { failedToo.Add(1) }
	db := testenv.Mongo(t).Connect(t, chunkstore.TimingMonitor(inner, observe))
	ctx := context.Background()
	if _, err := db.Collection("c").InsertOne(ctx, bson.M{"_id": 1}); err != nil {
		t.Fatal(err)
	}
	if err := db.Collection("c").FindOne(ctx, bson.M{"_id": 1}).Err(); err != nil {
		t.Fatal(err)
	}
	if err := db.RunCommand(ctx, bson.D{{Key: "nosuchcommand", Value: 1}}).Err(); err == nil {
		t.Fatal("an unknown command succeeded")
	}
	if n := seen.Count("c", "insert", "find"); n != 2 {
		t.Errorf("the wrapped monitor saw %d commands on c, want 2", n)
	}
	if n := failedToo.Load(); n != 1 {
		t.Errorf("the wrapped monitor saw %d failures, want 1", n)
	}
	mu.Lock()
	defer mu.Unlock()
	if calls["insert"] != 1 || calls["find"] != 1 || calls["nosuchcommand"] != 1 {
		t.Errorf("calls %v", calls)
	}
	if len(failures) != 1 || failures["nosuchcommand"] != 1 {
		t.Errorf("failures %v, want only nosuchcommand", failures)
	}
	if took <= 0 {
		t.Error("the commands took no time")
	}
}
