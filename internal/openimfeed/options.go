package openimfeed

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"slices"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/sasl/plain"
	"go.opentelemetry.io/otel/trace"
)

// Defaults of Options, from OpenIM v3.8.3 config/kafka.yml.
const (
	DefaultTopic = "toPush"  // kafka.yml toPushTopic
	DefaultGroup = "msggate" // not one of OpenIM's groups (see openIMGroups)
)

// openIMGroups are the consumer groups OpenIM v3.8.3's own services use (config/kafka.yml
// toRedisGroupID, toMongoGroupID, toPushGroupID, toOfflinePushGroupID). A Feed in one of them
// would take partitions, and commit offsets, away from OpenIM's push or storage: OpenIM would
// then silently miss records.
var openIMGroups = []string{"redis", "mongo", "push", "offlinePush"}

// Options configures a Feed; the zero value of each field is its default.
type Options struct {
	Brokers []string // required; kafka.yml address
	Topic   string   // default "toPush" (OpenIM kafka.yml toPushTopic)
	// Group is the consumer group, default "msggate". Open refuses OpenIM's own group names
	// (kafka.yml toRedisGroupID "redis", toMongoGroupID "mongo", toPushGroupID "push",
	// toOfflinePushGroupID "offlinePush"). A deployment that renamed its groups must itself keep
	// msggate's group apart from them.
	Group string
	// Username and Password enable SASL/PLAIN when either is set, as OpenIM's kafka.yml
	// username/password do (tools mq/kafka BuildConsumerGroupConfig: sarama's default mechanism
	// is PLAIN).
	Username, Password string
	// TLS enables TLS; nil means plaintext. TLSFiles.Config builds it from kafka.yml's tls files.
	TLS    *tls.Config
	Logger *slog.Logger // default slog.Default()
	// StartAtOldest makes a group that has no committed offset start at the oldest record still
	// in the topic. By default it starts at the newest, as OpenIM's own push group does (tools
	// mq/kafka NewMConsumerGroup, sarama.OffsetNewest): on first start msggate does not replay
	// days of old pushes. Once the group has committed, it always resumes after its commit.
	StartAtOldest bool
	// OnSkip is called with each record Run moves past without applying it (undecodable, or
	// refused by apply: ErrRefused), after logging it: keep it where an operator can find it,
	// and count it. An error means it was not kept: Run commits nothing and calls OnSkip
	// again after a backoff. A record may be handed over twice (a crash before its commit).
	// nil: the log line is all that is left of it.
	OnSkip func(ctx context.Context, s Skipped) error
	// TracerProvider, when set (tracing on), spans each poll that brought records, from
	// its records' arrival to their commit: the changes' store and Redis commands are its
	// children. nil: no spans.
	TracerProvider trace.TracerProvider
}

// TLSFiles are kafka.yml's tls settings (caCrt, clientCrt, clientKey, clientKeyPwd,
// insecureSkipVerify), the files OpenIM's own clients use.
type TLSFiles struct {
	CACert     string // PEM CA certificates to trust; empty: the system pool
	ClientCert string // PEM client certificate; used only together with ClientKey
	ClientKey  string // PEM client key, encrypted with ClientKeyPassword when that is set
	// ClientKeyPassword decrypts a legacy-encrypted PEM key ("Proc-Type: 4,ENCRYPTED"), the only
	// kind OpenIM's clients can read (tools mq/kafka/tls.go uses x509.DecryptPEMBlock).
	ClientKeyPassword  string
	InsecureSkipVerify bool
}

// Config builds the tls.Config OpenIM's own Kafka clients build from the same files (tools
// v0.0.50-alpha.67 mq/kafka/tls.go newTLSConfig), so a broker OpenIM reaches, msggate reaches.
func (f TLSFiles) Config() (*tls.Config, error) {
	cfg := &tls.Config{InsecureSkipVerify: f.InsecureSkipVerify} // #nosec G402 -- as kafka.yml says
	if f.ClientCert != "" && f.ClientKey != "" {
		certPEM, err := os.ReadFile(f.ClientCert)
		if err != nil {
			return nil, fmt.Errorf("openimfeed: client certificate: %w", err)
		}
		keyPEM, err := os.ReadFile(f.ClientKey)
		if err != nil {
			return nil, fmt.Errorf("openimfeed: client key: %w", err)
		}
		if f.ClientKeyPassword != "" {
			if keyPEM, err = decryptLegacyPEM(keyPEM, f.ClientKeyPassword); err != nil {
				return nil, err
			}
		}
		cert, err := tls.X509KeyPair(certPEM, keyPEM)
		if err != nil {
			return nil, fmt.Errorf("openimfeed: client certificate and key: %w", err)
		}
		cfg.Certificates = []tls.Certificate{cert}
	}
	if f.CACert != "" {
		caPEM, err := os.ReadFile(f.CACert)
		if err != nil {
			return nil, fmt.Errorf("openimfeed: CA certificate: %w", err)
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(caPEM) {
			return nil, fmt.Errorf("openimfeed: no PEM certificate in %s", f.CACert)
		}
		cfg.RootCAs = pool
	}
	return cfg, nil
}

// decryptLegacyPEM decrypts an RFC 1423 encrypted PEM key. That format is weak and deprecated,
// but it is what kafka.yml's clientKeyPwd means, so msggate reads what OpenIM reads.
func decryptLegacyPEM(keyPEM []byte, password string) ([]byte, error) {
	block, _ := pem.Decode(keyPEM)
	if block == nil {
		return nil, errors.New("openimfeed: client key is not PEM")
	}
	der, err := x509.DecryptPEMBlock(block, []byte(password)) //nolint:staticcheck // see above
	if err != nil {
		return nil, fmt.Errorf("openimfeed: decrypt client key: %w", err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: block.Type, Bytes: der}), nil
}

// withDefaults checks opts and fills in the defaults.
func (o Options) withDefaults() (Options, error) {
	if len(o.Brokers) == 0 {
		return o, errors.New("openimfeed: no Kafka brokers")
	}
	if o.Topic == "" {
		o.Topic = DefaultTopic
	}
	if o.Group == "" {
		o.Group = DefaultGroup
	}
	if slices.Contains(openIMGroups, o.Group) {
		return o, fmt.Errorf("openimfeed: consumer group %q is one of OpenIM's own (%v); msggate would take records away from OpenIM", o.Group, openIMGroups)
	}
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	return o, nil
}

// clientOptions are the franz-go options of a Feed's client; opts has its defaults.
func (o Options) clientOptions() []kgo.Opt {
	start := kgo.NewOffset().AtEnd()
	if o.StartAtOldest {
		start = kgo.NewOffset().AtStart()
	}
	kopts := []kgo.Opt{
		kgo.SeedBrokers(o.Brokers...),
		kgo.ConsumerGroup(o.Group),
		kgo.ConsumeTopics(o.Topic),
		kgo.ConsumeResetOffset(start),
		// Offsets are committed by Run, after apply succeeded, never in the background.
		kgo.DisableAutoCommit(),
		// No rebalance between a poll and its commit: a partition cannot move to another
		// msggate instance while its batch is being applied, so no batch is applied by two.
		// An apply failing for longer than the group's rebalance timeout (60 s) gets this
		// member dropped from the group; its commit then fails and another member applies the
		// batch again, which apply being idempotent allows.
		kgo.BlockRebalanceOnPoll(),
	}
	if o.Username != "" || o.Password != "" {
		kopts = append(kopts, kgo.SASL(plain.Auth{User: o.Username, Pass: o.Password}.AsMechanism()))
	}
	if o.TLS != nil {
		kopts = append(kopts, kgo.DialTLSConfig(o.TLS))
	}
	return kopts
}
