package gateway

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"time"

	"github.com/msggate/msggate/internal/admission"
	"github.com/msggate/msggate/internal/auth"
	"github.com/msggate/msggate/internal/cache"
	"github.com/msggate/msggate/internal/chunkstore"
	"github.com/msggate/msggate/internal/embedded"
	"github.com/msggate/msggate/internal/history"
	"github.com/msggate/msggate/internal/ingest"
	"github.com/msggate/msggate/internal/openim"
	"github.com/msggate/msggate/internal/openimsync"
	"github.com/msggate/msggate/internal/ops"
	"github.com/msggate/msggate/internal/search"
	"github.com/msggate/msggate/internal/search/openimindex"
	imsync "github.com/msggate/msggate/internal/sync"
)

// DefaultStoreRequests is how many operations that need the store (a send makes about ten
// store commands in turn) an instance runs at once. Measured with the load harness at eight
// times the load the embedded store sustains on two cores: more only lengthens every one of
// them; fewer leaves the store idle between commands.
const DefaultStoreRequests = 4

// StoreRequestWait is the longest an operation that needs the store waits for its turn: one
// expected to wait longer is refused at once, so that what is let in answers within about 2 s.
const StoreRequestWait = 500 * time.Millisecond

// Gateway is a running gateway: its stores, its HTTP server, and what must be closed.
type Gateway struct {
	Config Config
	Secret []byte
	Addr   string // the address actually listened on
	Store  *chunkstore.Store
	Cache  *cache.Cache
	Ledger *imsync.Ledger
	Ingest *ingest.Ingester
	Hub    *imsync.Hub
	// Search is the message search index (Config.Search); nil when off, and in OpenIM mode
	// without the feed (nothing would keep it current).
	Search search.Engine
	// SearchIndexer keeps Search current from OpenIM's feed in OpenIM mode; nil otherwise.
	SearchIndexer *openimindex.Indexer
	// SearchIsNew is set when this start created the search index: a store that already held
	// messages needs them indexed (reindex).
	SearchIsNew bool
	// StoreIdentity keeps Redis tied to the store it describes; nil in OpenIM mode, where
	// msggate does not write the store.
	StoreIdentity *imsync.IdentityWatch
	// OpenIM is the deployment an OpenIM-mode gateway serves (Config.OpenIM); then Store,
	// Ledger, Ingest and Hub are nil, and Secret too: clients present OpenIM's tokens.
	OpenIM *openim.Store
	// FollowerLog and Follower serve sync in OpenIM mode when its Kafka is configured
	// (Config.OpenIM.Feed): the log reads OpenIM's stores and msggate's event logs, the
	// follower fills the logs from OpenIM's changes. nil otherwise.
	FollowerLog *imsync.EventLog
	Follower    *openimsync.Follower
	Logger      *slog.Logger
	Metrics     *ops.Metrics // this gateway's own Prometheus registry, served on /metrics

	// MetricsAddr is the address /metrics is served on when Config.MetricsAddr names one.
	MetricsAddr string
	// IdentityProvider checks the tokens of the identity provider Config.IdentityProvider
	// names, accepted besides msggate's own; nil when none is configured.
	IdentityProvider *auth.IdentityProvider
	// ChunkMemory is the decoded chunks this instance keeps (Config.ChunkMemory); nil when off,
	// and in OpenIM mode, whose store changes without telling msggate.
	ChunkMemory *history.ChunkMemory
	// StoreAdmission and CacheAdmission bound the work this instance lets through to MongoDB
	// and Redis and refuse what cannot finish in time (Config.StoreConcurrency, ...).
	StoreAdmission, CacheAdmission *admission.Limiter
	// StoreRequests bounds the operations that need the store running at once
	// (Config.StoreRequests, server.Dependencies.StoreRequests).
	StoreRequests *admission.Limiter
	// PlaygroundToken, when set before Handler, gives the token GraphiQL's Headers tab opens
	// with (playground.Options.Token), for clients on this machine only (server.LoopbackClient).
	// Only a caller that made the demo user of an embedded store sets it; nil, the default,
	// leaves the tab for the user to fill.
	PlaygroundToken func() string

	observers Observers
	closers   []func() error
	server    *http.Server
}

// Open connects to (or starts) MongoDB and Redis and wires every part, without serving.
func Open(ctx context.Context, cfg Config, logger *slog.Logger) (*Gateway, error) {
	return OpenObserved(ctx, cfg, Observers{}, logger)
}

// Observers watch a gateway's MongoDB commands and Redis round trips as they are made. Tests
// count them, or hold a command back (internal/gateway/gatewaytest); a gateway that serves
// has none, and reports its commands and round trips as metrics instead.
type Observers struct {
	OnMongoCommand   chunkstore.CommandStarted
	OnRedisRoundTrip cache.RoundTripObserver
}

// OpenObserved is Open with observers.
func OpenObserved(ctx context.Context, cfg Config, obs Observers, logger *slog.Logger) (g *Gateway, err error) {
	cfg = cfg.WithStoreDefaults()
	// Every line logged with a request's context carries its request_id.
	logger = ops.WithRequestIDs(logger)
	opened := &Gateway{Config: cfg, observers: obs, Logger: logger, Metrics: ops.NewMetrics(),
		StoreAdmission: admission.New(admission.Options{Name: "message store", MaxInFlight: cfg.StoreConcurrency,
			MaxQueue: cfg.AdmissionQueue, MaxWait: cfg.AdmissionWait}),
		CacheAdmission: admission.New(admission.Options{Name: "cache", MaxInFlight: cmp.Or(cfg.RedisConcurrency, DefaultRedisConcurrency()),
			MaxQueue: cfg.AdmissionQueue, MaxWait: cfg.AdmissionWait}),
		StoreRequests: admission.New(admission.Options{Name: "message store", MaxInFlight: cmp.Or(cfg.StoreRequests, DefaultStoreRequests),
			MaxQueue: cfg.AdmissionQueue, MaxWait: StoreRequestWait})}
	g = opened
	for name, l := range map[string]*admission.Limiter{"mongodb": opened.StoreAdmission, "redis": opened.CacheAdmission,
		"store_requests": opened.StoreRequests} {
		opened.Metrics.WatchAdmission(name, func() ops.AdmissionFigures {
			s := l.Stats()
			return ops.AdmissionFigures{InFlight: s.InFlight, Queued: s.Queued, MeanServiceTime: s.MeanServiceTime,
				Admitted: s.Admitted, Refused: s.Refused}
		})
	}
	defer func() {
		// Each error return sets g to nil; what was opened so far is closed through opened.
		if err != nil {
			_ = opened.Close()
		}
	}()
	if err := cfg.OpenIM.envErr; err != nil {
		// A malformed MSGGATE_OPENIM must not start msggate's own store in its place.
		return nil, err
	}
	if !cfg.OpenIM.Enabled && cfg.OpenIM.Feed.Brokers != "" {
		return nil, errors.New("-openim-kafka (" + EnvOpenIMKafka + ") follows an OpenIM deployment: it needs -openim")
	}
	if !cfg.OpenIM.Enabled {
		// Before any store is opened: an identity provider that would let in tokens meant
		// for others is a configuration to fix, not to run with.
		if err := cfg.IdentityProvider.check(); err != nil {
			return nil, err
		}
	}
	if cfg.OpenIM.Enabled {
		if err := g.openOpenIM(ctx); err != nil {
			return nil, err
		}
	} else if err := g.openStore(ctx); err != nil {
		return nil, err
	}

	if cfg.RedisURL == "" {
		url, stop, err := embedded.StartRedis()
		if err != nil {
			return nil, err
		}
		g.closers = append(g.closers, func() error { stop(); return nil })
		cfg.RedisURL = url
	}
	chunkTTL := time.Duration(0) // the cache's default
	if cfg.OpenIM.Enabled {
		chunkTTL = OpenIMChunkTTL - OpenIMMemoryPeriod
	}
	if g.Cache, err = cache.Dial(cfg.RedisURL, cache.Options{
		ChunkTTL:       chunkTTL,
		EventLogMaxLen: cfg.EventLogMaxLen,
		EventLogMaxAge: cfg.EventLogMaxAge,
		ObserveCall:    g.Metrics.ObserveRedisCall,
		OnRoundTrip:    obs.OnRedisRoundTrip,
		Admission:      g.CacheAdmission,
		CoalescedReads: cfg.RedisCoalescedReads,
		TracerProvider: cfg.TracerProvider,
	}); err != nil {
		return nil, err
	}
	g.closers = append(g.closers, g.Cache.Close)
	// OpenIM mode keeps chunks in memory only with the feed, which tells when they change.
	if cfg.ChunkMemory >= 0 && (g.OpenIM == nil || cfg.OpenIM.Feed.Brokers != "") {
		g.ChunkMemory = history.NewChunkMemory(cfg.ChunkMemory)
		g.Metrics.WatchChunkMemory(func() ops.ChunkMemoryFigures {
			s := g.ChunkMemory.Stats()
			return ops.ChunkMemoryFigures{Hits: s.Hits, Misses: s.Misses, Evictions: s.Evictions, Bytes: s.Bytes, Chunks: s.Chunks}
		})
	}
	if g.OpenIM != nil {
		return g, g.followOpenIM()
	}
	// Before anything reads Redis: its state of a store is held until the watch finds it
	// describes this one (another store's, or a restored store's, is discarded first).
	g.StoreIdentity = imsync.NewIdentityWatch(g.Store, g.Cache, imsync.IdentityOptions{Interval: cfg.RelayInterval, Logger: logger})
	watching, stopWatch := context.WithCancel(context.Background())
	watched := make(chan struct{})
	go func() { defer close(watched); g.StoreIdentity.Run(watching) }()
	g.closers = append(g.closers, func() error { stopWatch(); <-watched; return nil })
	g.Ledger = imsync.NewLedger(g.Store, g.Cache, imsync.Options{Logger: logger, IntentHandoff: cfg.IntentHandoff})
	if g.Search, err = g.openSearch(); err != nil {
		return nil, err
	}
	g.Ingest = ingest.New(g.Store, g.Cache, g.Ledger, ingest.Options{Search: g.Search, Logger: logger})
	g.startRelay(logger)
	g.Hub = imsync.NewHub(g.Ledger.Events(), g.Cache, imsync.HubOptions{OnDrop: g.Metrics.CountDroppedSubscriber,
		MembershipCheck: cfg.MembershipCheck})
	g.Metrics.WatchSubscribers(g.Hub.Subscribers)
	g.Metrics.WatchLiveSubscribers(g.Hub.LiveSubscribers)
	g.closers = append(g.closers, g.Hub.Close)
	return g, nil
}

// openStore opens msggate's own store: its JWT secret, and MongoDB (FerretDB in-process on
// the embedded default) with its collections and indexes.
func (g *Gateway) openStore(ctx context.Context) (err error) {
	cfg := g.Config
	if g.Secret, err = JWTSecret(cfg); err != nil {
		return err
	}
	mongoURI := cfg.MongoURI
	// The embedded FerretDB lives in this process, so no other process writes to it and
	// serialising this process's own updates is enough (chunkstore.Options.SoleWriter).
	embeddedStore := mongoURI == ""
	if embeddedStore {
		var storeLog *slog.Logger
		if cfg.LogOutput != nil {
			storeLog = quiet(cfg.LogOutput)
		} else {
			var closeLog func() error
			if storeLog, closeLog, err = embedded.OpenLog(cfg.DataDir); err != nil {
				return err
			}
			// Closed after FerretDB has stopped: closers run newest first.
			g.closers = append(g.closers, closeLog)
		}
		uri, stop, err := embedded.StartFerretDB(ctx, cfg.DataDir, storeLog)
		if err != nil {
			return err
		}
		g.closers = append(g.closers, stop)
		mongoURI = uri
	}
	if g.Store, err = chunkstore.Connect(ctx, chunkstore.Options{
		URI:            mongoURI,
		Database:       cfg.MongoDatabase,
		ObserveCommand: g.Metrics.ObserveMongoCommand,
		OnCommand:      g.observers.OnMongoCommand,
		SoleWriter:     embeddedStore,
		Admission:      g.StoreAdmission,
		TracerProvider: cfg.TracerProvider,
		// A gateway answers at once even when it starts while the store is down or
		// saturated: what needs the store answers UNAVAILABLE until it is prepared.
		StartInBackground: true,
		OnStartFailed: func(err error) {
			g.Logger.Warn("the message store is not prepared yet; retrying", "err", err)
		},
	}); err != nil {
		return err
	}
	g.closers = append(g.closers, func() error { return g.Store.Close(context.Background()) })
	if cfg.IdentityProvider.JWKS != "" {
		if g.IdentityProvider, err = auth.NewIdentityProvider(ctx, cfg.IdentityProvider.options()); err != nil {
			return fmt.Errorf("identity provider (-jwks): %w", err)
		}
		g.Logger.Info("accepting the identity provider's tokens besides msggate's own", "jwks", cfg.IdentityProvider.JWKS,
			"issuer", cfg.IdentityProvider.Issuer, "audience", cfg.IdentityProvider.Audience, "user_claim", cfg.IdentityProvider.UserClaim)
	}
	closing, stopPreparing := context.WithCancel(context.Background())
	prepared := make(chan struct{})
	g.closers = append(g.closers, func() error { stopPreparing(); <-prepared; return nil })
	go func(store *chunkstore.Store) {
		defer close(prepared)
		select {
		case <-store.Ready():
		case <-closing.Done():
			return
		}
		if embeddedStore {
			// Now that the collections exist: without this index FerretDB's SQLite scans a
			// whole table for every lookup by _id.
			if err := embedded.IndexIDs(closing, cfg.DataDir); err != nil && closing.Err() == nil {
				g.Logger.Warn("indexing the embedded store's _id failed; lookups scan", "err", err)
			}
		}
		if store.SharedFerretDB() {
			g.Logger.Info("the store is FerretDB: every update takes a lease document, so that several gateways can share it safely")
		}
	}(g.Store)
	return nil
}

// Close releases every connection and embedded server, newest first.
func (g *Gateway) Close() error {
	var errs []error
	for i := len(g.closers) - 1; i >= 0; i-- {
		errs = append(errs, g.closers[i]())
	}
	g.closers = nil
	return errors.Join(errs...)
}

// quiet returns a logger for embedded servers: warnings and errors only.
func quiet(w io.Writer) *slog.Logger {
	return slog.New(slog.NewJSONHandler(w, &slog.HandlerOptions{Level: slog.LevelWarn}))
}

// startRelay runs the relay that finishes changes other writers left unannounced (see
// ingest.Relay) until the gateway closes; it stops before the stores do.
func (g *Gateway) startRelay(logger *slog.Logger) {
	ctx, cancel := context.WithCancel(context.Background())
	observe := g.Metrics.WatchRelay()
	relay := ingest.NewRelay(g.Ingest, ingest.RelayOptions{Interval: g.Config.RelayInterval, Logger: logger,
		TracerProvider: g.Config.TracerProvider,
		OnLook:         func(l ingest.RelayLook) { observe(l.Due, l.OldestAge, l.Finished, l.Err != nil) }})
	done := make(chan struct{})
	go func() {
		defer close(done)
		relay.Run(ctx)
	}()
	g.closers = append(g.closers, func() error { cancel(); <-done; return nil })
}
