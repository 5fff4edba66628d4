package chunkstore

import (
	"context"
	"errors"
	"fmt"
	"time"

	"go.mongodb.org/mongo-driver/v2/event"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"
	"go.opentelemetry.io/otel/trace"
)

// Defaults of Options.
const (
	// DefaultDatabase is the database msggate keeps its collections in.
	DefaultDatabase = "msggate"
	// DefaultTimeout bounds one MongoDB operation, retries included, when the caller's
	// context allows longer.
	DefaultTimeout = 10 * time.Second
	// DefaultServerSelectionTimeout bounds the wait for a reachable server when the URI sets
	// none (the driver's own is 30 s): while the store is down or restarting an operation
	// fails as UNAVAILABLE within it, instead of holding its admission slot and its client
	// until the request's time is up. A restarted server is found again within it too.
	DefaultServerSelectionTimeout = 2 * time.Second
)

// Options says where Connect finds MongoDB and who watches the commands it sends. Every zero
// field but URI takes its default.
type Options struct {
	// URI is the MongoDB connection string (mongodb:// or mongodb+srv://). Required.
	URI string
	// Database holds the collections. Default DefaultDatabase.
	Database string
	// Timeout bounds each operation. Default DefaultTimeout.
	Timeout time.Duration
	// ObserveCommand, when set, is told how long each command took and whether it failed
	// (metrics).
	ObserveCommand CommandObserver
	// OnCommand, when set, is told of each command as it is about to be sent (tests count
	// commands, or hold one back).
	OnCommand CommandStarted
	// SoleWriter says that no other process writes to the database: the embedded default,
	// whose FerretDB runs inside the gateway's process. Updates are then serialised within
	// this process only. Otherwise, on FerretDB (detected at start), each update also takes a
	// lease document, so that several processes can share one FerretDB (see leases); MongoDB
	// needs neither.
	SoleWriter bool
	// LockLease is how long a lease on FerretDB is valid. Default DefaultLockLease.
	LockLease time.Duration
	// StartInBackground makes Connect return at once and prepare the store (indexes, backend
	// detection) in the background until it succeeds; operations wait for it, up to 2 s for a
	// request (background_start.go). A gateway uses it so that it answers at once when it
	// starts while the store is down or saturated.
	StartInBackground bool
	// OnStartFailed, when set, is told of each failed attempt to prepare a store started in
	// the background (logs).
	OnStartFailed func(error)
	// Admission, when set, lets each operation through or refuses it (overload); nil lets
	// everything through.
	Admission Acquirer
	// TracerProvider, when set (tracing on), spans each command (TracingMonitor). nil
	// installs nothing.
	TracerProvider trace.TracerProvider
}

// CommandStarted is told of a MongoDB command as it is about to be sent: its name ("find",
// "update", ...) and the collection it targets, "" when it targets none. It runs on the
// caller's goroutine before the command goes out, so it may hold the command back.
type CommandStarted func(ctx context.Context, command, collection string)

// Connect connects to MongoDB and opens the Store on opts.Database (see Open). Close
// disconnects.
func Connect(ctx context.Context, opts Options) (*Store, error) {
	db, err := ConnectDatabase(opts)
	if err != nil {
		return nil, err
	}
	s, err := open(ctx, db, opts)
	if err != nil {
		_ = db.Client().Disconnect(context.Background())
		return nil, err
	}
	s.ownsClient = true
	return s, nil
}

// ConnectDatabase connects to MongoDB as Connect does (same options, monitors and timeout)
// and returns opts.Database as it is. Unlike Connect it creates no collection and no index and
// writes nothing: it is how a database msggate does not own is opened (an OpenIM deployment's,
// which internal/openim reads). It only parses and prepares: connections are made as commands
// need them. The caller disconnects the database's client.
func ConnectDatabase(opts Options) (*mongo.Database, error) {
	if opts.URI == "" {
		return nil, errors.New("chunkstore: no MongoDB URI")
	}
	if opts.Database == "" {
		opts.Database = DefaultDatabase
	}
	if opts.Timeout == 0 {
		opts.Timeout = DefaultTimeout
	}
	observe := opts.ObserveCommand
	if observe == nil {
		observe = func(string, time.Duration, bool) {}
	}
	monitor := TimingMonitor(StartedMonitor(opts.OnCommand), observe)
	if opts.TracerProvider != nil {
		monitor = TracingMonitor(monitor, opts.TracerProvider)
	}
	co := options.Client().
		ApplyURI(opts.URI).
		SetTimeout(opts.Timeout).
		SetMonitor(monitor)
	if co.ServerSelectionTimeout == nil {
		co.SetServerSelectionTimeout(DefaultServerSelectionTimeout)
	}
	client, err := mongo.Connect(co)
	if err != nil {
		return nil, fmt.Errorf("connect to MongoDB: %w", err)
	}
	return client.Database(opts.Database), nil
}

// Close disconnects from MongoDB when the store connected itself (Connect); a store opened
// on the caller's database (Open) leaves its client to the caller.
func (s *Store) Close(ctx context.Context) error {
	if s.stopStart != nil {
		s.stopStart()
	}
	if !s.ownsClient {
		return nil
	}
	return s.db.Client().Disconnect(ctx)
}

// StartedMonitor returns a command monitor that tells started (when not nil) of every command
// as it starts: the driver-level form of Options.OnCommand, for tests that connect through
// the driver themselves.
func StartedMonitor(started CommandStarted) *event.CommandMonitor {
	if started == nil {
		return &event.CommandMonitor{}
	}
	return &event.CommandMonitor{Started: func(ctx context.Context, e *event.CommandStartedEvent) {
		// A command names its collection as the value of its first field ({find: "msg"});
		// commands on no collection carry something else there ({ping: 1}).
		coll, _ := e.Command.Lookup(e.CommandName).StringValueOK()
		started(ctx, e.CommandName, coll)
	}}
}
