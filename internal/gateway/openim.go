package gateway

import (
	"context"
	"time"

	"github.com/msggate/msggate/graph"
	"github.com/msggate/msggate/internal/auth"
	"github.com/msggate/msggate/internal/cache"
	"github.com/msggate/msggate/internal/chunkstore"
	"github.com/msggate/msggate/internal/history"
	"github.com/msggate/msggate/internal/openim"
	"github.com/msggate/msggate/internal/openimsync"
	"github.com/msggate/msggate/internal/ops"
)

// OpenIM mode (Config.OpenIM): the gateway reads an OpenIM v3.8 deployment's MongoDB and
// Redis through internal/openim, and nothing of msggate's own store. It connects without
// creating a collection or an index (a read-only MongoDB role is enough), and without the
// feed uses none of msggate's chunk or seq caches (OpenIM's Redis already is that cache, and
// only OpenIM knows when an entry goes stale), has no write path and no event log, and checks
// OpenIM's tokens. msggate's own Redis stays, for rate limits and persisted queries; with the
// feed, also for the event logs and OpenIM's chunks (OpenIMChunkTTL).

// OpenIMTokenHeader is the header OpenIM's own API takes its token from; OpenIM-mode clients
// may send it instead of "Authorization: Bearer <token>".
const OpenIMTokenHeader = "token"

// openOpenIM checks the configuration and connects to the deployment.
func (g *Gateway) openOpenIM(ctx context.Context) (err error) {
	cfg := g.Config
	if err := cfg.OpenIM.check(cfg); err != nil {
		return err
	}
	// With the feed, what OpenIM changes is reported (the follower forgets it): what is read
	// from OpenIM's MongoDB can be kept for the same bound as its chunks.
	memoTTL := time.Duration(0)
	if cfg.OpenIM.Feed.Brokers != "" {
		memoTTL = OpenIMChunkTTL
	}
	g.OpenIM, err = openim.Connect(ctx, openim.Endpoints{
		Mongo: chunkstore.Options{
			URI:            cfg.MongoURI,
			Database:       cfg.MongoDatabase,
			ObserveCommand: g.Metrics.ObserveMongoCommand,
			OnCommand:      g.observers.OnMongoCommand,
			TracerProvider: cfg.TracerProvider,
		},
		RedisURL: cfg.OpenIM.RedisURL,
		Redis: cache.Options{ObserveCall: g.Metrics.ObserveRedisCall, OnRoundTrip: g.observers.OnRedisRoundTrip,
			TracerProvider: cfg.TracerProvider},
	}, openim.Options{Secret: cfg.OpenIM.Secret, MemoTTL: memoTTL})
	if err != nil {
		return err
	}
	g.closers = append(g.closers, func() error { return g.OpenIM.Close(context.Background()) })
	return nil
}

// OpenIMChunkTTL bounds how long msggate keeps a chunk of an OpenIM deployment, in OpenIM mode
// with the feed: in its Redis for OpenIMChunkTTL - OpenIMMemoryPeriod after reading it from
// OpenIM's stores, then in an instance's memory for at most OpenIMMemoryPeriod more. The
// feed's records make a chunk stale in both as soon as they arrive (a new message, revoke,
// delete or read), and the gap fill does for messages stored without a record; a change that
// reaches OpenIM's MongoDB with no record at all (a revoke or delete whose record was lost)
// shows within this time.
const OpenIMChunkTTL = 10 * time.Second

// OpenIMMemoryPeriod is the longest an instance serves a chunk of an OpenIM deployment from
// its memory (openimsync.ReadSource), part of OpenIMChunkTTL.
const OpenIMMemoryPeriod = 2 * time.Second

// openIMReadPath is the read path over OpenIM deployment s (readPath).
func (g *Gateway) openIMReadPath(s *openim.Store, own ops.Check) readPath {
	r := &graph.Resolver{
		Conversations: s,
		// Read afresh every time: OpenIM's Redis is already the cache in front of its
		// MongoDB, and only OpenIM knows when an entry goes stale.
		Chunks:      history.ChunkFunc(s.FindChunks),
		AdjustViews: openIMQuotes,
		// No ClientMsgs: OpenIM keeps a message's client message ID only inside its chunk,
		// with no index on it, and a search of the chunks has no bound, so pages around a
		// client message ID answer UNSUPPORTED (docs/openim.md).
		Logger: g.Logger,
	}
	if g.FollowerLog != nil {
		r.Sync, r.Hub = g.FollowerLog, g.Hub
		// The feed tells which chunks change, so they can be kept (see OpenIMChunkTTL):
		// in Redis, and in memory under the versions the follower moves.
		r.Conversations = openimsync.NewReadSource(s, g.Cache, OpenIMMemoryPeriod)
		cached := cache.NewReadThrough(s, g.Cache, g.Logger)
		cached.ObserveCache = g.Metrics.ObserveChunkCache
		r.Chunks = &history.Chunks{Store: cached, Memory: g.ChunkMemory}
		// The feed keeps the index current (indexOpenIM); the finder scopes by OpenIM's
		// own access and seq states, and keeps to the groups the viewer is in now.
		r.Finder = g.finder(r.Conversations)
	}
	// OpenIM keeps no index of mentions (only a per-conversation flag), and msggate writes
	// none into OpenIM's database: unread mentions are read from the chunks of each
	// unread range, where at_user_id_list, revoke and del_list are (docs/openim.md).
	r.Mentions = history.ChunkMentions{Chunks: r.Chunks}
	return readPath{
		resolver:      r,
		authenticator: auth.UserTokens(s),
		tokenHeader:   OpenIMTokenHeader,
		checks:        []ops.Check{{Name: "openim-mongodb", Ping: s.PingMongo}, {Name: "openim-redis", Ping: s.PingRedis}, own},
	}
}

// openIMQuotes is OpenIM's quote rewrite on the read path (see openim.ViewQuote): a quote
// whose quoted message has since been revoked shows the revoke notice instead of the quoted
// text, as OpenIM's own reads show it.
var openIMQuotes = history.Quotes(openim.QuotedSeq, openim.ViewQuote)
