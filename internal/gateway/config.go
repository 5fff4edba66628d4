package gateway

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"runtime"
	"strconv"
	"strings"
	"time"

	"go.opentelemetry.io/otel/trace"

	"github.com/msggate/msggate/graph"
	"github.com/msggate/msggate/internal/admission"
	"github.com/msggate/msggate/internal/auth"
	"github.com/msggate/msggate/internal/cache"
	"github.com/msggate/msggate/internal/chunkstore"
	"github.com/msggate/msggate/internal/history"
	"github.com/msggate/msggate/internal/retention"
	"github.com/msggate/msggate/internal/server"
)

// This file is the only reader of msggate's environment variables: each setting has a flag,
// and the variable, when set, is the flag's default.
const (
	EnvAddr              = "MSGGATE_ADDR"
	EnvMetricsAddr       = "MSGGATE_METRICS_ADDR"
	EnvDataDir           = "MSGGATE_DATA_DIR"
	EnvSearch            = "MSGGATE_SEARCH"
	EnvSearchPostgres    = "MSGGATE_SEARCH_POSTGRES"
	EnvMongoURI          = "MSGGATE_MONGO_URI"
	EnvMongoDatabase     = "MSGGATE_MONGO_DATABASE"
	EnvRedisURL          = "MSGGATE_REDIS_URL"
	EnvJWTSecret         = "MSGGATE_JWT_SECRET"
	EnvRetentionDays     = "MSGGATE_RETENTION_DAYS"
	EnvRetentionInterval = "MSGGATE_RETENTION_INTERVAL"
	EnvOpenIM            = "MSGGATE_OPENIM"
	EnvOpenIMRedisURL    = "MSGGATE_OPENIM_REDIS_URL"
	EnvOpenIMSecret      = "MSGGATE_OPENIM_SECRET"
	// OpenIM's Kafka, for sync in OpenIM mode (OpenIMConfig.Feed).
	EnvOpenIMKafka            = "MSGGATE_OPENIM_KAFKA"
	EnvOpenIMKafkaTopic       = "MSGGATE_OPENIM_KAFKA_TOPIC"
	EnvOpenIMKafkaGroup       = "MSGGATE_OPENIM_KAFKA_GROUP"
	EnvOpenIMKafkaUser        = "MSGGATE_OPENIM_KAFKA_USER"
	EnvOpenIMKafkaPassword    = "MSGGATE_OPENIM_KAFKA_PASSWORD"
	EnvOpenIMKafkaTLS         = "MSGGATE_OPENIM_KAFKA_TLS"
	EnvOpenIMKafkaCA          = "MSGGATE_OPENIM_KAFKA_CA"
	EnvOpenIMKafkaCert        = "MSGGATE_OPENIM_KAFKA_CERT"
	EnvOpenIMKafkaKey         = "MSGGATE_OPENIM_KAFKA_KEY"
	EnvOpenIMKafkaKeyPassword = "MSGGATE_OPENIM_KAFKA_KEY_PASSWORD"
	EnvOpenIMKafkaInsecure    = "MSGGATE_OPENIM_KAFKA_INSECURE_SKIP_VERIFY"
	EnvOpenIMGapFillInterval  = "MSGGATE_OPENIM_GAP_FILL_INTERVAL"
	EnvJWKS                   = "MSGGATE_JWKS"
	EnvJWTIssuer              = "MSGGATE_JWT_ISSUER"
	EnvJWTAudience            = "MSGGATE_JWT_AUDIENCE"
	EnvJWTUserClaim           = "MSGGATE_JWT_USER_CLAIM"
	EnvJWTAlgorithms          = "MSGGATE_JWT_ALGORITHMS"
	EnvJWTAnyAudience         = "MSGGATE_JWT_ANY_AUDIENCE"
	EnvJWTAnyIssuer           = "MSGGATE_JWT_ANY_ISSUER"
)

// Defaults of Config that belong to no package below it.
const (
	// DefaultAddr is where a gateway on a real store (-mongo-uri) listens: every interface.
	DefaultAddr = ":8080"
	// DefaultEmbeddedAddr is where the embedded default listens: this machine only. It runs
	// for one developer, with a demo user whose token GraphiQL hands to local clients.
	DefaultEmbeddedAddr = "127.0.0.1:8080"
	DefaultDataDir      = "./data"
	// DefaultIdleTimeout closes an HTTP keep-alive connection that has carried no request for
	// this long.
	DefaultIdleTimeout = 2 * time.Minute
	// DefaultReadTimeout bounds reading one HTTP request, body included (a request body holds
	// at most -max-body-bytes). WebSocket connections are exempt once upgraded.
	DefaultReadTimeout = time.Minute
)

// Config is everything a gateway needs to start. RegisterFlags fills it from flags and the
// environment; the flag wins.
type Config struct {
	Addr          string    // MSGGATE_ADDR; default DefaultEmbeddedAddr on the embedded default, DefaultAddr with MongoURI
	MetricsAddr   string    // MSGGATE_METRICS_ADDR; when set, /metrics is served there and not on Addr
	DataDir       string    // MSGGATE_DATA_DIR, default DefaultDataDir: embedded store and generated secret
	MongoURI      string    // MSGGATE_MONGO_URI; empty: FerretDB in-process on SQLite under DataDir
	MongoDatabase string    // MSGGATE_MONGO_DATABASE, default chunkstore.DefaultDatabase
	RedisURL      string    // MSGGATE_REDIS_URL; empty: an in-process Redis-compatible server
	JWTSecret     string    // MSGGATE_JWT_SECRET (no flag); empty: generated once and kept in DataDir
	Playground    bool      // serve GraphiQL at /; -playground's default: on with the embedded default only
	LogOutput     io.Writer // where the embedded store logs warnings; default the file embedded.LogFileName in DataDir
	// Search picks the message search index (MSGGATE_SEARCH): "" or SearchBleve, the embedded
	// Bleve index in SearchDir(DataDir), for a gateway that runs alone; SearchOff, none
	// (Query.search answers UNSUPPORTED). docs/search.md says which to pick.
	Search string
	// SearchPostgres, when set, is a PostgreSQL URL (MSGGATE_SEARCH_POSTGRES) whose full-text
	// index every instance shares; it takes the place of the embedded index. Empty: Search
	// decides. docs/search.md says which to pick.
	SearchPostgres string

	// Handler is the GraphQL handler's settings: introspection, the request limits and rate
	// limits, the WebSocket connection limits and keepalive, the dataloaders. Zero takes the
	// default, negative switches a limit off (server.Settings). What the handler needs from
	// what the gateway opens (server.Dependencies) is not configuration: routes.go wires it.
	Handler server.Settings

	// HTTP connection limits: zero takes the default, negative switches off.
	IdleTimeout time.Duration // idle keep-alive HTTP connections; default DefaultIdleTimeout
	ReadTimeout time.Duration // reading one HTTP request; default DefaultReadTimeout

	// Overload (internal/admission): zero takes the default, negative switches off.
	StoreConcurrency int           // MongoDB operations in flight per instance; default admission.DefaultMaxInFlight
	StoreRequests    int           // operations needing the store (mutations, catch-up reads) running at once; default DefaultStoreRequests
	RedisConcurrency int           // Redis round trips in flight per instance; default DefaultRedisConcurrency()
	AdmissionQueue   int           // operations waiting for each of them; default admission.DefaultMaxQueue
	AdmissionWait    time.Duration // longest wait for either; default admission.DefaultMaxWait

	// ChunkMemory bounds the decoded chunks each instance keeps in process, in bytes; default
	// history.DefaultChunkMemoryBytes, negative switches it off (every read goes to Redis).
	ChunkMemory int64
	// RenderedNodes is how many conversation list nodes each instance keeps rendered, written
	// again while the viewer's state in the conversation is unchanged; default
	// graph.DefaultRenderedNodes, negative switches it off.
	RenderedNodes int
	// RedisCoalescedReads bounds how many requests' state reads may share Redis round trips at
	// once (cache.Options.CoalescedReads); default cache.DefaultCoalescedReads, negative
	// switches sharing off.
	RedisCoalescedReads int

	// Sync: the per-user event log and live subscriptions.
	EventLogMaxLen int64         // events kept per user; default cache.DefaultEventLogMaxLen
	EventLogMaxAge time.Duration // how long an event is kept; default cache.DefaultEventLogMaxAge
	// MembershipCheck is how often live subscriptions are checked against their users' groups,
	// which bounds how long a lost membership hint leaves a removed member receiving a group's
	// events; default imsync.DefaultMembershipCheck (imsync.HubOptions.MembershipCheck).
	MembershipCheck time.Duration

	// Announcing every stored change (the outbox and its relay): how long a writer has to
	// announce its own change before the relay may, and how often the relay looks.
	IntentHandoff time.Duration // default imsync.DefaultIntentHandoff
	// RelayInterval is also how often the store's identity is checked against Redis's
	// record (imsync.IdentityWatch): both are the instance's own background work on the store.
	RelayInterval time.Duration // default ingest.DefaultRelayInterval

	// Retention deletes whole chunks older than a number of days (off by default).
	Retention RetentionConfig

	// OpenIM mode serves an OpenIM v3.8 deployment read-only (off by default).
	OpenIM OpenIMConfig

	// Tokens of an identity provider, accepted besides msggate's own (off by default).
	IdentityProvider IdentityProviderConfig

	// Tracing (off by default). OTLPEndpoint is -otlp-endpoint, an OTLP/HTTP collector's base
	// URL that turns tracing on, as OTEL_EXPORTER_OTLP_ENDPOINT does (the standard OTEL_
	// variables are read by internal/tracing and the OpenTelemetry SDK, not here).
	// TracerProvider is what the gateway's components trace to: nil, tracing off, unless
	// the caller sets it (msggate serve does, from tracing.Start); then every GraphQL
	// operation, loader batch, Redis command or pipeline, MongoDB command, Kafka poll and
	// relay step has a span.
	OTLPEndpoint   string
	TracerProvider trace.TracerProvider

	// byStore are the switches whose flags RegisterFlags registered and the command line left
	// alone: WithStoreDefaults sets them by the store. A Config written in code means what it
	// says.
	byStore storeSwitches
}

// storeSwitches says which of Config's switches take their default from the store.
type storeSwitches struct{ introspection, playground bool }

// WithStoreDefaults returns c with the defaults that depend on the store filled in. The
// embedded default is one developer's: it listens on loopback (DefaultEmbeddedAddr), and
// introspection and GraphiQL are on unless their flags say otherwise. With a real store
// (MongoURI), where real users are, it listens on every interface (DefaultAddr), and
// introspection and GraphiQL are off unless their flags turn them on, as Apollo Server does
// in production. Open applies it.
func (c Config) WithStoreDefaults() Config {
	embedded := c.MongoURI == ""
	if c.Addr == "" {
		c.Addr = DefaultAddr
		if embedded {
			c.Addr = DefaultEmbeddedAddr
		}
	}
	if c.byStore.introspection {
		c.Handler.Introspection = embedded
	}
	if c.byStore.playground {
		c.Playground = embedded
	}
	c.byStore = storeSwitches{}
	return c
}

// storeSwitch is a boolean flag whose default WithStoreDefaults sets: until the command line
// sets it, byStore says so.
type storeSwitch struct {
	value   *bool
	byStore *bool
}

func (f storeSwitch) String() string {
	if f.value == nil {
		return "false"
	}
	return strconv.FormatBool(*f.value)
}

func (f storeSwitch) Set(s string) error {
	b, err := strconv.ParseBool(s)
	if err != nil {
		return err
	}
	*f.value, *f.byStore = b, false
	return nil
}

func (storeSwitch) IsBoolFlag() bool { return true }

// DefaultRedisConcurrency is go-redis's default pool size (10 connections per CPU): more round
// trips at once would wait inside go-redis's pool, where no one sees or refuses them.
func DefaultRedisConcurrency() int { return 10 * runtime.GOMAXPROCS(0) }

// RegisterFlags registers the gateway's flags on fs, into c, with defaults from the
// environment. The JWT secret has no flag (a command line is visible to every user of the
// machine): it is taken from MSGGATE_JWT_SECRET here.
func (c *Config) RegisterFlags(fs *flag.FlagSet) {
	c.JWTSecret = env(EnvJWTSecret, "")
	fs.StringVar(&c.Addr, "addr", env(EnvAddr, ""), "listen address (default "+DefaultEmbeddedAddr+" on the embedded default, "+DefaultAddr+" with -mongo-uri) ("+EnvAddr+")")
	fs.StringVar(&c.MetricsAddr, "metrics-addr", env(EnvMetricsAddr, ""), "serve /metrics on this address instead of -addr ("+EnvMetricsAddr+")")
	fs.StringVar(&c.DataDir, "data-dir", env(EnvDataDir, DefaultDataDir), "data directory for the embedded default ("+EnvDataDir+")")
	fs.StringVar(&c.MongoURI, "mongo-uri", env(EnvMongoURI, ""), "MongoDB URI; empty runs FerretDB in-process ("+EnvMongoURI+")")
	fs.StringVar(&c.MongoDatabase, "mongo-db", env(EnvMongoDatabase, chunkstore.DefaultDatabase), "MongoDB database ("+EnvMongoDatabase+")")
	fs.StringVar(&c.RedisURL, "redis-url", env(EnvRedisURL, ""), "Redis URL; empty runs an in-process Redis ("+EnvRedisURL+")")
	fs.StringVar(&c.Search, "search", env(EnvSearch, SearchBleve), "message search index: "+SearchBleve+" (embedded, under -data-dir) or "+SearchOff+" ("+EnvSearch+")")
	fs.StringVar(&c.SearchPostgres, "search-postgres", env(EnvSearchPostgres, ""), "PostgreSQL URL of a message search index shared by every instance, in place of the embedded one ("+EnvSearchPostgres+")")
	c.byStore = storeSwitches{introspection: true, playground: true}
	fs.Var(storeSwitch{&c.Handler.Introspection, &c.byStore.introspection}, "introspection", "allow GraphQL schema introspection (default on with the embedded default, off with -mongo-uri)")
	fs.Var(storeSwitch{&c.Playground, &c.byStore.playground}, "playground", "serve GraphiQL at / (default on with the embedded default, off with -mongo-uri)")
	fs.Int64Var(&c.Handler.MaxBodyBytes, "max-body-bytes", server.DefaultMaxBodyBytes, "largest request body; negative: no limit")
	fs.IntVar(&c.Handler.MaxTokens, "max-tokens", server.DefaultMaxTokens, "most tokens in a query; negative: no limit")
	fs.IntVar(&c.Handler.MaxDepth, "max-depth", server.DefaultMaxDepth, "deepest nesting of fields in a query, introspection aside; negative: no limit")
	fs.IntVar(&c.Handler.MaxAliases, "max-aliases", server.DefaultMaxAliases, "most aliases in a query; negative: no limit")
	fs.IntVar(&c.Handler.MaxComplexity, "max-complexity", server.DefaultMaxComplexity, "highest cost of a query, about the objects it may resolve; negative: no limit")
	fs.Float64Var(&c.Handler.RateLimit, "rate-limit", server.DefaultRateLimit, "requests a second each user may make, sustained; negative: no rate limit")
	fs.IntVar(&c.Handler.RateBurst, "rate-burst", server.DefaultRateBurst, "requests each user may make at once")
	fs.DurationVar(&c.Handler.RequestTimeout, "request-timeout", server.DefaultRequestTimeout, "longest time a request may take; negative: no limit")
	fs.DurationVar(&c.IdleTimeout, "idle-timeout", DefaultIdleTimeout, "close HTTP keep-alive connections idle this long; negative: the read timeout bounds it")
	fs.DurationVar(&c.ReadTimeout, "read-timeout", DefaultReadTimeout, "longest time to read one HTTP request, body included (not WebSockets); negative: no limit")
	fs.Float64Var(&c.Handler.AnonymousRateLimit, "anonymous-rate-limit", server.DefaultAnonymousRateLimit, "requests a second each client address may make without a valid token, sustained; negative: no limit")
	fs.IntVar(&c.Handler.AnonymousRateBurst, "anonymous-rate-burst", server.DefaultAnonymousRateBurst, "requests without a valid token each client address may make at once")
	fs.IntVar(&c.Handler.MaxConnectionsPerUser, "ws-per-user", server.DefaultMaxConnectionsPerUser, "WebSocket connections each user may hold on this instance; negative: no limit")
	fs.IntVar(&c.Handler.MaxPendingConnectionsPerAddress, "ws-pending-per-address", server.DefaultMaxPendingConnectionsPerAddress, "WebSocket connections each client address may hold before connection_init; negative: no limit")
	fs.IntVar(&c.Handler.PersistedQueriesPerUser, "apq-per-user", server.DefaultPersistedQueriesPerUser, "persisted queries each user may register a day; one past it runs but is not kept; negative: no limit")
	fs.Int64Var(&c.Handler.PersistedQueryBytesPerUser, "apq-bytes-per-user", server.DefaultPersistedQueryBytesPerUser, "bytes of persisted queries each user may register a day; negative: no limit")
	fs.StringVar(&c.Handler.ClientIPHeader, "client-ip-header", "", "header in which the proxy in front gives the client's address (X-Forwarded-For, X-Real-IP); only behind such a proxy")
	fs.IntVar(&c.StoreRequests, "store-requests", DefaultStoreRequests, "operations that need the store (mutations, syncState, syncDifference) this instance runs at once; one that would wait over 500ms for its turn is refused with UNAVAILABLE; negative: no limit")
	fs.IntVar(&c.StoreConcurrency, "store-concurrency", admission.DefaultMaxInFlight, "MongoDB operations this instance runs at once; more wait, and what cannot finish in time is refused with UNAVAILABLE; negative: no limit")
	fs.IntVar(&c.RedisConcurrency, "redis-concurrency", DefaultRedisConcurrency(), "Redis round trips this instance makes at once (go-redis's pool size); more wait as for the store; negative: no limit")
	fs.IntVar(&c.AdmissionQueue, "admission-queue", admission.DefaultMaxQueue, "operations that may wait for the store, and for Redis; one more is refused")
	fs.DurationVar(&c.AdmissionWait, "admission-wait", admission.DefaultMaxWait, "longest an operation waits for the store or Redis; one expected to wait longer is refused at once")
	fs.Float64Var(&c.Handler.ConnectionRate, "ws-accept-rate", server.DefaultConnectionRate, "new WebSocket connections a second this instance accepts; more are closed with 1013 and a retry hint; negative: no limit")
	fs.IntVar(&c.Handler.ConnectionBurst, "ws-accept-burst", server.DefaultConnectionBurst, "new WebSocket connections accepted at once after a quiet spell")
	fs.Int64Var(&c.ChunkMemory, "chunk-memory", history.DefaultChunkMemoryBytes, "bytes of decoded chunks kept in process, served while their conversation's chunks version in Redis is unchanged; negative: off")
	fs.IntVar(&c.RenderedNodes, "rendered-nodes", graph.DefaultRenderedNodes, "conversation list nodes kept rendered in process (each at most 2 KiB), written again while the viewer's state in the conversation is unchanged; negative: off")
	fs.IntVar(&c.RedisCoalescedReads, "redis-coalesced-reads", cache.DefaultCoalescedReads, "requests whose seq and read state reads may share Redis round trips at once, when other reads are under way (one Redis node only); negative: each read takes its own")
	fs.Int64Var(&c.EventLogMaxLen, "event-log-len", cache.DefaultEventLogMaxLen, "events kept in each user's sync log; an older sync token answers tooLong")
	fs.DurationVar(&c.EventLogMaxAge, "event-log-age", cache.DefaultEventLogMaxAge, "how long events stay in the sync log")
	fs.DurationVar(&c.Handler.KeepAlive, "ws-keepalive", server.DefaultKeepAlive, "WebSocket keepalive ping interval")
	fs.StringVar(&c.OTLPEndpoint, "otlp-endpoint", "", "send traces to this OpenTelemetry collector's OTLP/HTTP endpoint, such as http://collector:4318 (or set OTEL_EXPORTER_OTLP_ENDPOINT; sampling: OTEL_TRACES_SAMPLER, OTEL_TRACES_SAMPLER_ARG); default: no tracing")
	c.Retention.registerFlags(fs)
	c.OpenIM.registerFlags(fs)
	c.IdentityProvider.registerFlags(fs)
}

// RegisterSecretFlags registers what a client of a running gateway needs to mint tokens
// without opening its stores (sync-client): -secret, defaulting to MSGGATE_JWT_SECRET, and
// -data-dir, the gateway's data directory that keeps a generated secret.
func (c *Config) RegisterSecretFlags(fs *flag.FlagSet) {
	fs.StringVar(&c.JWTSecret, "secret", env(EnvJWTSecret, ""), "JWT secret to mint the token with ("+EnvJWTSecret+")")
	fs.StringVar(&c.DataDir, "data-dir", env(EnvDataDir, DefaultDataDir), "the gateway's data directory, holding its generated secret ("+EnvDataDir+")")
}

// RetentionConfig is the retention part of Config: how old history may get before the
// retention job deletes it (internal/retention). Every gateway instance with Days > 0 runs the
// job; running it on several at once is safe (its steps are idempotent), only redundant.
type RetentionConfig struct {
	Days     int           // MSGGATE_RETENTION_DAYS; 0 keeps history forever
	Interval time.Duration // MSGGATE_RETENTION_INTERVAL, default retention.DefaultInterval: time between runs
	// envErr is a malformed environment value, reported when retention starts (flag
	// registration cannot fail).
	envErr error
}

// registerFlags registers -retention-days and -retention-interval, with defaults from the
// environment.
func (c *RetentionConfig) registerFlags(fs *flag.FlagSet) {
	days, interval := 0, retention.DefaultInterval
	c.envErr = nil
	if v, ok := os.LookupEnv(EnvRetentionDays); ok {
		n, err := strconv.Atoi(v)
		if err != nil {
			c.envErr = fmt.Errorf("%s=%q is not a whole number of days", EnvRetentionDays, v)
		}
		days = n
	}
	if v, ok := os.LookupEnv(EnvRetentionInterval); ok {
		d, err := time.ParseDuration(v)
		if err != nil {
			c.envErr = errors.Join(c.envErr, fmt.Errorf("%s=%q is not a duration such as 1h", EnvRetentionInterval, v))
		}
		interval = d
	}
	fs.IntVar(&c.Days, "retention-days", days, "delete history older than this many days; 0 keeps it forever ("+EnvRetentionDays+")")
	fs.DurationVar(&c.Interval, "retention-interval", interval, "time between retention runs ("+EnvRetentionInterval+")")
}

// MaxAge checks the configuration and returns the age history may reach; 0 means retention
// is off.
func (c RetentionConfig) MaxAge() (time.Duration, error) {
	if c.envErr != nil {
		return 0, c.envErr
	}
	if c.Days < 0 {
		return 0, fmt.Errorf("-retention-days must be 0 (off) or more, got %d", c.Days)
	}
	if c.Interval < 0 {
		return 0, fmt.Errorf("-retention-interval must not be negative, got %s", c.Interval)
	}
	return time.Duration(c.Days) * 24 * time.Hour, nil
}

// OpenIMConfig is the OpenIM part of Config. With Enabled, the gateway serves an existing
// OpenIM v3.8 deployment as it is, read-only: MongoURI and MongoDatabase name OpenIM's
// database (in which msggate creates and writes nothing), RedisURL names OpenIM's Redis (only
// read), clients present the access tokens OpenIM issued, signed with Secret. Config.RedisURL
// stays msggate's own Redis, for rate limits and persisted queries; it may be the same server,
// since msggate's keys never collide with OpenIM's.
type OpenIMConfig struct {
	Enabled  bool   // MSGGATE_OPENIM=true
	RedisURL string // MSGGATE_OPENIM_REDIS_URL: OpenIM's Redis, in any form -redis-url takes
	Secret   string // MSGGATE_OPENIM_SECRET: OpenIM's share.secret, which signs its tokens
	// Feed is OpenIM's Kafka. With its brokers set, msggate follows OpenIM's changes into its
	// own Redis and serves syncState tokens, syncDifference and syncEvents; without, they
	// answer UNSUPPORTED.
	Feed OpenIMFeedConfig
	// envErr is a malformed environment value, reported when the gateway opens.
	envErr error
}

// OpenIMFeedConfig is how msggate reads OpenIM's Kafka, as OpenIM's config/kafka.yml says it.
type OpenIMFeedConfig struct {
	Brokers  string // MSGGATE_OPENIM_KAFKA: host:port, comma-separated (kafka.yml address)
	Topic    string // MSGGATE_OPENIM_KAFKA_TOPIC, default toPush (kafka.yml toPushTopic)
	Group    string // MSGGATE_OPENIM_KAFKA_GROUP, default msggate; never one of OpenIM's own
	User     string // MSGGATE_OPENIM_KAFKA_USER: SASL/PLAIN (kafka.yml username)
	Password string // MSGGATE_OPENIM_KAFKA_PASSWORD (kafka.yml password)
	// TLS (kafka.yml tls): MSGGATE_OPENIM_KAFKA_TLS=true, then the CA, client certificate and
	// key files (..._CA, ..._CERT, ..._KEY, ..._KEY_PASSWORD) and ..._INSECURE_SKIP_VERIFY.
	TLS                bool
	CACert             string
	ClientCert         string
	ClientKey          string
	ClientKeyPassword  string
	InsecureSkipVerify bool
	// GapFillInterval (MSGGATE_OPENIM_GAP_FILL_INTERVAL) is how often the conversations active
	// in the last 10 minutes are compared with OpenIM's max seqs, so that a message OpenIM
	// stored without a record reaches devices: the longest it waits. Default 2 s.
	GapFillInterval time.Duration
}

// registerFlags registers -openim, -openim-redis-url and -openim-secret, with defaults from
// the environment.
func (c *OpenIMConfig) registerFlags(fs *flag.FlagSet) {
	c.envErr = nil
	enabled := boolEnv(EnvOpenIM, &c.envErr)
	fs.BoolVar(&c.Enabled, "openim", enabled, "serve an OpenIM v3.8 deployment read-only: -mongo-uri and -mongo-db name its database ("+EnvOpenIM+")")
	fs.StringVar(&c.RedisURL, "openim-redis-url", env(EnvOpenIMRedisURL, ""), "OpenIM's Redis, only read ("+EnvOpenIMRedisURL+")")
	fs.StringVar(&c.Secret, "openim-secret", env(EnvOpenIMSecret, ""), "OpenIM's share.secret, to verify its tokens; prefer "+EnvOpenIMSecret+": a command line is visible to every user of the machine")
	f := &c.Feed
	fs.StringVar(&f.Brokers, "openim-kafka", env(EnvOpenIMKafka, ""), "OpenIM's Kafka brokers, host:port comma-separated: follow OpenIM's changes for sync ("+EnvOpenIMKafka+")")
	fs.StringVar(&f.Topic, "openim-kafka-topic", env(EnvOpenIMKafkaTopic, ""), "the topic to read (default toPush) ("+EnvOpenIMKafkaTopic+")")
	fs.StringVar(&f.Group, "openim-kafka-group", env(EnvOpenIMKafkaGroup, ""), "msggate's consumer group (default msggate; never one of OpenIM's) ("+EnvOpenIMKafkaGroup+")")
	fs.StringVar(&f.User, "openim-kafka-user", env(EnvOpenIMKafkaUser, ""), "SASL/PLAIN user ("+EnvOpenIMKafkaUser+"; the password only from "+EnvOpenIMKafkaPassword+")")
	f.Password = env(EnvOpenIMKafkaPassword, "")
	fs.BoolVar(&f.TLS, "openim-kafka-tls", boolEnv(EnvOpenIMKafkaTLS, &c.envErr), "connect to Kafka over TLS ("+EnvOpenIMKafkaTLS+")")
	fs.StringVar(&f.CACert, "openim-kafka-ca", env(EnvOpenIMKafkaCA, ""), "PEM CA file for Kafka's TLS ("+EnvOpenIMKafkaCA+")")
	fs.StringVar(&f.ClientCert, "openim-kafka-cert", env(EnvOpenIMKafkaCert, ""), "PEM client certificate for Kafka's TLS ("+EnvOpenIMKafkaCert+")")
	fs.StringVar(&f.ClientKey, "openim-kafka-key", env(EnvOpenIMKafkaKey, ""), "PEM client key for Kafka's TLS ("+EnvOpenIMKafkaKey+"; its password only from "+EnvOpenIMKafkaKeyPassword+")")
	f.ClientKeyPassword = env(EnvOpenIMKafkaKeyPassword, "")
	fs.BoolVar(&f.InsecureSkipVerify, "openim-kafka-insecure-skip-verify", boolEnv(EnvOpenIMKafkaInsecure, &c.envErr), "do not verify Kafka's certificate ("+EnvOpenIMKafkaInsecure+")")
	gap := time.Duration(0)
	if v, ok := os.LookupEnv(EnvOpenIMGapFillInterval); ok {
		d, err := time.ParseDuration(v)
		if err != nil {
			c.envErr = errors.Join(c.envErr, fmt.Errorf("%s=%q is not a duration", EnvOpenIMGapFillInterval, v))
		}
		gap = d
	}
	fs.DurationVar(&f.GapFillInterval, "openim-gap-fill-interval", gap, "how often OpenIM's max seqs are compared with what its Kafka delivered (default 2s) ("+EnvOpenIMGapFillInterval+")")
}

// boolEnv reads a true/false environment variable, false when unset; a malformed one is added
// to *malformed, for the caller to report when its part of the gateway opens.
func boolEnv(name string, malformed *error) bool {
	v, ok := os.LookupEnv(name)
	if !ok {
		return false
	}
	b, err := strconv.ParseBool(v)
	if err != nil {
		*malformed = errors.Join(*malformed, fmt.Errorf("%s=%q is not true or false", name, v))
	}
	return b
}

// check reports what OpenIM mode lacks, naming the flag that supplies it.
func (c OpenIMConfig) check(cfg Config) error {
	var missing []string
	if cfg.MongoURI == "" {
		missing = append(missing, "-mongo-uri ("+EnvMongoURI+"), OpenIM's MongoDB")
	}
	if c.RedisURL == "" {
		missing = append(missing, "-openim-redis-url ("+EnvOpenIMRedisURL+"), OpenIM's Redis")
	}
	if c.Secret == "" {
		missing = append(missing, EnvOpenIMSecret+" (or -openim-secret), OpenIM's share.secret")
	}
	if len(missing) > 0 {
		return fmt.Errorf("OpenIM mode (-openim) needs %s", strings.Join(missing, "; "))
	}
	if cfg.Retention.Days > 0 {
		return errors.New("OpenIM mode (-openim) takes no -retention-days: msggate deletes nothing in OpenIM's database, OpenIM's own retention applies")
	}
	if cfg.IdentityProvider.JWKS != "" {
		return errors.New("OpenIM mode (-openim) takes no -jwks: its clients present OpenIM's tokens")
	}
	return nil
}

// IdentityProviderConfig is the identity-provider part of Config. With JWKS set, the gateway
// accepts, besides msggate's own HS256 tokens, the tokens an identity provider signs (RS256 or
// ES256 by default), checked against the keys it publishes (auth.IdentityProvider).
type IdentityProviderConfig struct {
	JWKS       string // MSGGATE_JWKS: the provider's key set, an https:// URL or a file; empty: off
	Issuer     string // MSGGATE_JWT_ISSUER: the iss tokens must carry; required for a URL unless AnyIssuer
	Audience   string // MSGGATE_JWT_AUDIENCE: an aud tokens must carry; required unless AnyAudience
	UserClaim  string // MSGGATE_JWT_USER_CLAIM, default auth.DefaultUserClaim: the claim naming the user
	Algorithms string // MSGGATE_JWT_ALGORITHMS, default auth.DefaultAlgorithms, comma-separated
	// AnyAudience and AnyIssuer (MSGGATE_JWT_ANY_AUDIENCE, MSGGATE_JWT_ANY_ISSUER) are the
	// operator saying that tokens for any audience, or of any issuer, of the key set are to be
	// accepted; without them a gateway missing Audience or Issuer refuses to start.
	AnyAudience bool
	AnyIssuer   bool
	// HTTPClient fetches a JWKS URL and MinRefresh is the least time between two reads of the
	// keys (auth.IdentityProviderOptions), both without a flag: tests set them (a client that
	// trusts their server, a shorter wait). Zero: the auth package's defaults.
	HTTPClient *http.Client
	MinRefresh time.Duration
	// envErr is a malformed environment value, reported when the gateway opens.
	envErr error
}

// registerFlags registers -jwks, -jwt-issuer, -jwt-audience, -jwt-user-claim,
// -jwt-algorithms, -jwt-any-audience and -jwt-any-issuer, with defaults from the environment.
func (c *IdentityProviderConfig) registerFlags(fs *flag.FlagSet) {
	c.envErr = nil
	fs.StringVar(&c.JWKS, "jwks", env(EnvJWKS, ""), "an identity provider's key set (JWKS), an https:// URL or a file: its tokens are accepted besides msggate's own ("+EnvJWKS+")")
	fs.StringVar(&c.Issuer, "jwt-issuer", env(EnvJWTIssuer, ""), "the issuer (iss) the identity provider's tokens must name; required with a JWKS URL unless -jwt-any-issuer ("+EnvJWTIssuer+")")
	fs.StringVar(&c.Audience, "jwt-audience", env(EnvJWTAudience, ""), "an audience (aud) the identity provider's tokens must name; required with -jwks unless -jwt-any-audience ("+EnvJWTAudience+")")
	fs.StringVar(&c.UserClaim, "jwt-user-claim", env(EnvJWTUserClaim, auth.DefaultUserClaim), "the claim of the identity provider's tokens that names the user ("+EnvJWTUserClaim+")")
	fs.StringVar(&c.Algorithms, "jwt-algorithms", env(EnvJWTAlgorithms, strings.Join(auth.DefaultAlgorithms, ",")), "the identity provider's signature algorithms accepted, comma-separated ("+EnvJWTAlgorithms+")")
	fs.BoolVar(&c.AnyAudience, "jwt-any-audience", boolEnv(EnvJWTAnyAudience, &c.envErr), "accept the identity provider's tokens whatever their audience (aud), those it mints for other applications too, when -jwt-audience is empty ("+EnvJWTAnyAudience+")")
	fs.BoolVar(&c.AnyIssuer, "jwt-any-issuer", boolEnv(EnvJWTAnyIssuer, &c.envErr), "accept the identity provider's tokens whatever their issuer (iss) when -jwt-issuer is empty ("+EnvJWTAnyIssuer+")")
}

// check reports, naming the flags, what keeps the identity provider from being used; it reads
// no keys.
func (c IdentityProviderConfig) check() error {
	if c.envErr != nil {
		return c.envErr
	}
	if c.JWKS == "" {
		return nil
	}
	err := c.options().Check()
	var missing []string
	if errors.Is(err, auth.ErrAudienceRequired) {
		missing = append(missing, "-jwt-audience ("+EnvJWTAudience+"), the aud of the tokens the provider mints for msggate, or -jwt-any-audience to accept its tokens for any application")
	}
	if errors.Is(err, auth.ErrIssuerRequired) {
		missing = append(missing, "-jwt-issuer ("+EnvJWTIssuer+"), the provider's iss, or -jwt-any-issuer to accept the tokens of any issuer the key set signs for")
	}
	switch {
	case len(missing) > 0:
		return fmt.Errorf("-jwks needs %s", strings.Join(missing, "; and "))
	case err != nil:
		return fmt.Errorf("identity provider (-jwks): %w", err)
	}
	return nil
}

// options are the auth package's options for this configuration.
func (c IdentityProviderConfig) options() auth.IdentityProviderOptions {
	var algs []string
	for a := range strings.SplitSeq(c.Algorithms, ",") {
		if a = strings.TrimSpace(a); a != "" {
			algs = append(algs, a)
		}
	}
	return auth.IdentityProviderOptions{JWKS: c.JWKS, Issuer: c.Issuer, Audience: c.Audience, UserClaim: c.UserClaim,
		Algorithms: algs, AnyAudience: c.AnyAudience, AnyIssuer: c.AnyIssuer, HTTPClient: c.HTTPClient, MinRefresh: c.MinRefresh}
}

// env returns the environment variable k, or def when it is not set.
func env(k, def string) string {
	if v, ok := os.LookupEnv(k); ok {
		return v
	}
	return def
}
