package gateway

import (
	"context"
	"errors"
	"strings"
	"time"

	"github.com/msggate/msggate/internal/cache"
	"github.com/msggate/msggate/internal/openimfeed"
	"github.com/msggate/msggate/internal/openimsync"
	"github.com/msggate/msggate/internal/search/openimindex"
	imsync "github.com/msggate/msggate/internal/sync"
)

// followOpenIM starts following an OpenIM deployment's changes when its Kafka is configured:
// an event log over OpenIM's stores and msggate's Redis, a Hub for subscriptions, the
// feed's consumer and the gap fill. Without the feed, OpenIM mode keeps no event log.
func (g *Gateway) followOpenIM() error {
	fc := g.Config.OpenIM.Feed
	if fc.Brokers == "" {
		return nil
	}
	opts := openimfeed.Options{Topic: fc.Topic, Group: fc.Group, Username: fc.User, Password: fc.Password, Logger: g.Logger,
		TracerProvider: g.Config.TracerProvider}
	for _, b := range strings.Split(fc.Brokers, ",") {
		if b = strings.TrimSpace(b); b != "" {
			opts.Brokers = append(opts.Brokers, b)
		}
	}
	if fc.TLS {
		tlsConfig, err := openimfeed.TLSFiles{CACert: fc.CACert, ClientCert: fc.ClientCert, ClientKey: fc.ClientKey,
			ClientKeyPassword: fc.ClientKeyPassword, InsecureSkipVerify: fc.InsecureSkipVerify}.Config()
		if err != nil {
			return err
		}
		opts.TLS = tlsConfig
	}
	opts.OnSkip = g.keepSkippedRecord
	feed, err := openimfeed.Open(opts)
	if err != nil {
		return err
	}
	g.Metrics.WatchFeedLag(feed.Lag)
	g.FollowerLog = imsync.NewFollowerLog(g.Cache, openimsync.StateSource(g.OpenIM))
	g.Hub = imsync.NewHub(g.FollowerLog, g.Cache, imsync.HubOptions{OnDrop: g.Metrics.CountDroppedSubscriber})
	g.Metrics.WatchSubscribers(g.Hub.Subscribers)
	g.Metrics.WatchLiveSubscribers(g.Hub.LiveSubscribers)
	followOpts := openimsync.Options{GapFillInterval: fc.GapFillInterval, Logger: g.Logger}
	if err := g.indexOpenIM(&followOpts); err != nil {
		return err
	}
	g.Follower = openimsync.New(g.FollowerLog, g.OpenIM, g.Cache, followOpts)

	ctx, stop := context.WithCancel(context.Background())
	fed, filled := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(fed)
		if err := feed.Run(ctx, g.Follower.Apply); err != nil && !errors.Is(err, context.Canceled) {
			g.Logger.Error("OpenIM feed stopped: sync events come from the gap fill alone", "err", err)
		}
	}()
	go func() {
		defer close(filled)
		g.Follower.RunGapFill(ctx)
	}()
	g.closers = append(g.closers, g.Hub.Close, func() error {
		stop()
		<-fed
		<-filled
		feed.Close()
		return nil
	})
	return nil
}

// indexOpenIM opens the search index the config names and has the follower keep it current
// (openimindex): only with the feed, as nothing else tells msggate what OpenIM changes.
func (g *Gateway) indexOpenIM(opts *openimsync.Options) error {
	engine, err := g.openSearch()
	if err != nil || engine == nil {
		return err
	}
	g.Search = engine
	g.SearchIndexer = openimindex.New(g.OpenIM, g.Cache, engine, openimindex.Options{Logger: g.Logger})
	g.Metrics.WatchSearchBacklog(func() (int64, error) {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		return g.Cache.SearchBacklogLen(ctx)
	})
	opts.Touched = g.SearchIndexer.Touched
	ctx, stop := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		g.SearchIndexer.Run(ctx)
	}()
	// Appended after the engine's closer and before the feed's: closers run newest first, so
	// the feed stops, then the indexer, then the engine closes.
	g.closers = append(g.closers, func() error { stop(); <-done; return nil })
	return nil
}

// keepSkippedRecord keeps a record the feed moved past in msggate's Redis, where an operator
// finds it (cache.SkippedRecords, the list msggate:feed:skipped), and counts it once kept.
func (g *Gateway) keepSkippedRecord(ctx context.Context, s openimfeed.Skipped) error {
	r := cache.SkippedRecord{Topic: s.Topic, Partition: s.Partition, Offset: s.Offset, Key: string(s.Key),
		Reason: s.Reason, Value: s.Value}
	if s.Err != nil {
		r.Error = s.Err.Error()
	}
	if err := g.Cache.KeepSkippedRecord(ctx, r); err != nil {
		return err
	}
	g.Metrics.CountSkippedFeedRecord(s.Reason)
	return nil
}
