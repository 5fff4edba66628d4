package deploy_test

import (
	"bytes"
	"flag"
	"net/url"
	"os"
	"os/exec"
	"slices"
	"strings"
	"testing"

	"github.com/goccy/go-yaml"

	"github.com/msggate/msggate/internal/gateway"
)

// What openimsdk/openim-docker's docker-compose.yaml and .env set (commit 55a2d29a, 2026-07-21,
// OpenIM server v3.8.3-patch.15), and openim.yml must name.
const (
	// The network is declared as "openim"; Compose prefixes it with the project, the name of the
	// directory the repository is cloned into.
	openIMNetwork = "openim-docker_openim"
	openIMMongo   = "mongo:27017" // MONGO_ADDRESS
	// MONGO_USERNAME, MONGO_PASSWORD: the user the mongo service creates in MONGO_INITDB_DATABASE.
	openIMMongoUser, openIMMongoPassword, openIMDatabase = "openIM", "openIM123", "openim_v3"
	openIMRedis                                          = "redis:6379" // REDIS_ADDRESS
	openIMRedisPassword                                  = "openIM123"  // REDIS_PASSWORD (--requirepass)
	openIMKafka                                          = "kafka:9094" // KAFKA_ADDRESS: the EXTERNAL listener
	openIMSecret                                         = "openIM123"  // OPENIM_SECRET (share.secret)
)

// composeFile is the part of `docker-compose config`'s output the tests read.
type composeFile struct {
	Services map[string]struct {
		Image       string            `yaml:"image"`
		Environment map[string]string `yaml:"environment"`
		Networks    map[string]any    `yaml:"networks"`
		Volumes     []any             `yaml:"volumes"`
		Ports       []any             `yaml:"ports"`
	} `yaml:"services"`
	Networks map[string]struct {
		External any    `yaml:"external"`
		Name     string `yaml:"name"`
	} `yaml:"networks"`
}

// composeConfig runs `docker-compose config` on file, as an operator checks a Compose file
// before `up`, with none of the variables the file reads set, and decodes what it prints.
func composeConfig(t *testing.T, file string) composeFile {
	t.Helper()
	bin, err := exec.LookPath("docker-compose")
	if err != nil {
		t.Fatalf("docker-compose is not installed (./scripts/test installs Debian's docker-compose): %v", err)
	}
	cmd := exec.Command(bin, "-f", file, "config")
	var env []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "MSGGATE_") && !strings.HasPrefix(kv, "OPENIM_") {
			env = append(env, kv)
		}
	}
	cmd.Env = env
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("docker-compose -f %s config: %v\n%s", file, err, stderr.String())
	}
	var c composeFile
	if err := yaml.Unmarshal(out, &c); err != nil {
		t.Fatalf("decode docker-compose config's output: %v\n%s", err, out)
	}
	return c
}

// gatewayConfig is the configuration the gateway reads from env (and nothing else), as the
// image's process would: the image's own variables first, then the service's.
func gatewayConfig(t *testing.T, env map[string]string) gateway.Config {
	t.Helper()
	for _, kv := range os.Environ() {
		if k, _, _ := strings.Cut(kv, "="); strings.HasPrefix(k, "MSGGATE_") {
			t.Setenv(k, "")
			os.Unsetenv(k)
		}
	}
	t.Setenv("MSGGATE_ADDR", ":8080") // the Dockerfile's ENV
	t.Setenv("MSGGATE_DATA_DIR", "/data")
	for k, v := range env {
		t.Setenv(k, v)
	}
	var cfg gateway.Config
	fs := flag.NewFlagSet("serve", flag.ContinueOnError)
	cfg.RegisterFlags(fs)
	if err := fs.Parse(nil); err != nil {
		t.Fatal(err)
	}
	return cfg.WithStoreDefaults()
}

// Ensure the user stack runs msggate on the official MongoDB and Redis images, reaches them by
// their service names, keeps its data directory (the generated secret) in a volume, and
// publishes the port the image listens on.
func TestComposeUserStack(t *testing.T) {
	c := composeConfig(t, "compose/msggate.yml")
	for name, image := range map[string]string{"mongo": "mongo:7", "redis": "redis:7", "msggate": "msggate:latest"} {
		if got := c.Services[name].Image; got != image {
			t.Errorf("service %s runs image %q, want %q", name, got, image)
		}
	}
	m := c.Services["msggate"]
	cfg := gatewayConfig(t, m.Environment)
	if u, err := url.Parse(cfg.MongoURI); err != nil || u.Host != "mongo:27017" {
		t.Errorf("msggate's MongoDB is %q, want the mongo service", cfg.MongoURI)
	}
	if u, err := url.Parse(cfg.RedisURL); err != nil || u.Host != "redis:6379" {
		t.Errorf("msggate's Redis is %q, want the redis service", cfg.RedisURL)
	}
	if cfg.Addr != ":8080" || len(m.Ports) == 0 {
		t.Errorf("msggate listens on %q and publishes %v, want :8080 published", cfg.Addr, m.Ports)
	}
	if !slices.ContainsFunc(m.Volumes, func(v any) bool {
		return strings.HasSuffix(toString(v), ":/data:rw") || strings.Contains(toString(v), "target:/data")
	}) {
		t.Errorf("msggate's volumes %v do not keep /data", m.Volumes)
	}
}

// Ensure the file next to OpenIM joins openim-docker's network and serves its MongoDB, Redis
// and Kafka in OpenIM mode with the credentials openim-docker sets, as the gateway reads them.
func TestComposeNextToOpenIM(t *testing.T) {
	c := composeConfig(t, "compose/openim.yml")
	n := c.Networks["openim"]
	if n.Name != openIMNetwork || n.External != true {
		t.Errorf("network openim is %+v, want the external network %q", n, openIMNetwork)
	}
	m := c.Services["msggate"]
	if _, ok := m.Networks["openim"]; !ok {
		t.Errorf("msggate joins %v, want openim", m.Networks)
	}
	cfg := gatewayConfig(t, m.Environment)
	if !cfg.OpenIM.Enabled {
		t.Fatal("msggate is not in OpenIM mode")
	}
	u, err := url.Parse(cfg.MongoURI)
	if err != nil {
		t.Fatal(err)
	}
	password, _ := u.User.Password()
	if u.Host != openIMMongo || u.User.Username() != openIMMongoUser || password != openIMMongoPassword ||
		u.Query().Get("authSource") != openIMDatabase || cfg.MongoDatabase != openIMDatabase {
		t.Errorf("MongoDB %q, database %q; want %s@%s, authSource and database %s", cfg.MongoURI, cfg.MongoDatabase,
			openIMMongoUser, openIMMongo, openIMDatabase)
	}
	r, err := url.Parse(cfg.OpenIM.RedisURL)
	if err != nil {
		t.Fatal(err)
	}
	if password, _ := r.User.Password(); r.Host != openIMRedis || password != openIMRedisPassword {
		t.Errorf("OpenIM's Redis %q, want %s with its password", cfg.OpenIM.RedisURL, openIMRedis)
	}
	if cfg.OpenIM.Feed.Brokers != openIMKafka || cfg.OpenIM.Feed.Topic != "toPush" {
		t.Errorf("Kafka %q topic %q, want %s, toPush", cfg.OpenIM.Feed.Brokers, cfg.OpenIM.Feed.Topic, openIMKafka)
	}
	if cfg.OpenIM.Secret != openIMSecret {
		t.Errorf("OpenIM's secret %q, want openim-docker's OPENIM_SECRET", cfg.OpenIM.Secret)
	}
	// msggate's own Redis is not OpenIM's: msggate writes there.
	if own, err := url.Parse(cfg.RedisURL); err != nil || own.Host == openIMRedis {
		t.Errorf("msggate's own Redis is %q, want a server of its own", cfg.RedisURL)
	} else if _, ok := c.Services[own.Hostname()]; !ok {
		t.Errorf("msggate's own Redis %q is no service of the file", cfg.RedisURL)
	}
}

func toString(v any) string {
	switch v := v.(type) {
	case string:
		return v
	case map[string]any:
		var parts []string
		for k, x := range v {
			parts = append(parts, k+":"+toString(x))
		}
		slices.Sort(parts)
		return strings.Join(parts, ",")
	}
	return ""
}
