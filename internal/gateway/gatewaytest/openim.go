package gatewaytest

import (
	"testing"

	"github.com/msggate/msggate/internal/devtools/testenv"
	"github.com/msggate/msggate/internal/gateway"
	"github.com/msggate/msggate/internal/openim/openimtest"
)

// OpenIMGateway is a gateway in OpenIM mode (gateway.Config.OpenIM) over an OpenIM v3.8
// deployment that openimtest writes as OpenIM writes, on FerretDB and a redis-server of its
// own. The gateway's own Redis (rate limits, persisted queries) is another redis-server, so
// that everything in the deployment's is OpenIM's.
type OpenIMGateway struct {
	*Gateway
	// IM is the deployment: write to it as OpenIM does, sign in its users (Login), and take
	// snapshots of it.
	IM *openimtest.Deployment
}

// StartOpenIM starts an OpenIM deployment and a gateway in OpenIM mode over it, its
// configuration changed by tune first (nil: as is).
func StartOpenIM(t testing.TB, tune func(*gateway.Config)) *OpenIMGateway {
	t.Helper()
	mdb := testenv.Mongo(t)
	imRedis := testenv.Redis(t)
	im := openimtest.NewAt(t, mdb.Connect(t, nil), imRedis.Addr())

	own := testenv.Redis(t)
	cfg := Config(own.URL(), mdb)
	cfg.JWTSecret = ""
	cfg.OpenIM = gateway.OpenIMConfig{Enabled: true, RedisURL: imRedis.URL(), Secret: im.Secret}
	if tune != nil {
		tune(&cfg)
	}
	g := New(t, cfg)
	g.Redis = own
	return &OpenIMGateway{Gateway: g, IM: im}
}
