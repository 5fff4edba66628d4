package bench

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"path/filepath"
	"strings"

	"github.com/twmb/franz-go/pkg/kfake"

	"github.com/msggate/msggate/internal/embedded"
	"github.com/msggate/msggate/internal/gateway"
	"github.com/msggate/msggate/internal/openim/openimtest"
	"github.com/msggate/msggate/internal/server"
)

// OpenIM mode is measured on the same data (a viewer with 20 single chats, one of 1,000
// messages and 19 of three), written as an OpenIM deployment writes it (openimtest) into a
// FerretDB of its own and the bench's redis-server, read by a second gateway in OpenIM mode.
// OpenIM keeps no chunk in msggate's caches: every page reads its chunks from the msg
// collection by doc_id, which MongoDB answers from OpenIM's index and the embedded FerretDB
// (v1, SQLite) only by scanning the collection. On the embedded store these rows measure that
// scan more than the gateway.
const openIMDatabase = "openim_v3"

// openIMGateway is the gateway in OpenIM mode and the viewer's OpenIM token.
type openIMGateway struct {
	g     *gateway.Gateway
	token string
	close func()
	// cfg opens more gateways on the same deployment (withFeed).
	cfg gateway.Config
}

// startOpenIM fills an OpenIM deployment under dir and opens a gateway on it.
func startOpenIM(ctx context.Context, dir, redisURL, redisAddr string, configure func(*gateway.Config)) (_ *openIMGateway, err error) {
	var closers []func()
	closeAll := func() {
		for i := len(closers) - 1; i >= 0; i-- {
			closers[i]()
		}
	}
	defer func() {
		if err != nil {
			closeAll()
		}
	}()
	uri, stopStore, err := embedded.StartFerretDB(ctx, filepath.Join(dir, "openim-store"), slog.New(slog.DiscardHandler))
	if err != nil {
		return nil, err
	}
	closers = append(closers, func() { _ = stopStore() })
	var f fixture
	closers = append(closers, f.cleanUp)
	var secret string
	token, err := f.run(func() string {
		d := openimtest.Dial(&f, uri, openIMDatabase, redisAddr)
		fillOpenIM(d)
		secret = d.Secret
		return d.Login(viewer, 1, 1)
	})
	if err != nil {
		return nil, fmt.Errorf("writing the OpenIM deployment: %w", err)
	}

	// As the bench's own gateway: tuned by Options.Gateway, rate limit off; then pointed at
	// the deployment, whose Redis also serves as the gateway's own.
	cfg := gateway.Config{Handler: server.Settings{RateLimit: -1}, LogOutput: io.Discard}
	if configure != nil {
		configure(&cfg)
	}
	cfg.DataDir, cfg.MongoURI, cfg.MongoDatabase, cfg.RedisURL = filepath.Join(dir, "openim-gateway"), uri, openIMDatabase, redisURL
	cfg.OpenIM = gateway.OpenIMConfig{Enabled: true, RedisURL: redisURL, Secret: secret}
	g, err := gateway.Open(ctx, cfg, slog.New(slog.DiscardHandler))
	if err != nil {
		return nil, err
	}
	closers = append(closers, func() { g.Close() })
	return &openIMGateway{g: g, token: token, close: closeAll, cfg: cfg}, nil
}

// withFeed opens another gateway in OpenIM mode on the same deployment, following an OpenIM
// Kafka (an in-process one, kfake, holding OpenIM's toPush topic; nothing is produced to it):
// with the feed, OpenIM mode keeps OpenIM's chunks and documents in its caches, which is what
// this row measures against the one without.
func (o *openIMGateway) withFeed(ctx context.Context, dir string) (*gateway.Gateway, func(), error) {
	cluster, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(1, "toPush"))
	if err != nil {
		return nil, nil, fmt.Errorf("starting an in-process Kafka: %w", err)
	}
	cfg := o.cfg
	cfg.DataDir = filepath.Join(dir, "openim-feed-gateway")
	// Its own Redis is another database of the bench's server: the bench's gateway in
	// msggate's mode keeps the chunks of a conversation with the same ID in database 0, under
	// the same keys this one would use. (In production OpenIM mode has its own Redis, or
	// shares OpenIM's, whose keys never collide with msggate's.)
	cfg.RedisURL = strings.TrimSuffix(cfg.RedisURL, "/0") + "/1"
	cfg.OpenIM.Feed = gateway.OpenIMFeedConfig{Brokers: strings.Join(cluster.ListenAddrs(), ",")}
	g, err := gateway.Open(ctx, cfg, slog.New(slog.DiscardHandler))
	if err != nil {
		cluster.Close()
		return nil, nil, err
	}
	return g, func() { _ = g.Close(); cluster.Close() }, nil
}

// fillOpenIM sends the bench's messages as OpenIM's msgtransfer stores them.
func fillOpenIM(d *openimtest.Deployment) {
	text := strings.Repeat("the quick brown fox jumps over the lazy dog ", 3)
	long := openimtest.SingleConversationID(viewer, peer(0))
	var batch []*openimtest.MsgData
	for i := range longLength {
		from, to := peer(0), viewer
		if i%2 == 1 {
			from, to = viewer, peer(0)
		}
		batch = append(batch, openimtest.Single(from, to, openimtest.ContentText, openimtest.TextContent(fmt.Sprintf("%s#%d", text, i))))
		if len(batch) == 250 {
			d.Send(long, batch...)
			batch = nil
		}
	}
	for p := 1; p < peers; p++ {
		var msgs []*openimtest.MsgData
		for i := range 3 {
			msgs = append(msgs, openimtest.Single(peer(p), viewer, openimtest.ContentText, openimtest.TextContent(fmt.Sprintf("%s#%d", text, i))))
		}
		d.Send(openimtest.SingleConversationID(viewer, peer(p)), msgs...)
	}
}

// fixture is what openimtest needs of its caller (openimtest.TB) outside a test: a failure
// ends the fill (run returns it), and cleanups run when the bench closes the deployment.
type fixture struct{ cleanups []func() }

type fixtureFailure struct{ err error }

func (f *fixture) Helper() {}

func (f *fixture) Fatalf(format string, args ...any) {
	panic(fixtureFailure{fmt.Errorf(format, args...)})
}

func (f *fixture) Cleanup(fn func()) { f.cleanups = append(f.cleanups, fn) }

func (f *fixture) cleanUp() {
	for i := len(f.cleanups) - 1; i >= 0; i-- {
		f.cleanups[i]()
	}
}

// run calls fill, turning a Fatalf inside it into an error.
func (f *fixture) run(fill func() string) (out string, err error) {
	defer func() {
		if r := recover(); r != nil {
			failure, ok := r.(fixtureFailure)
			if !ok {
				panic(r)
			}
			err = failure.err
		}
	}()
	out = fill()
	if out == "" {
		return "", errors.New("no token")
	}
	return out, nil
}
