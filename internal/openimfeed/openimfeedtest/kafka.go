package openimfeedtest

import (
	"context"
	"crypto/tls"
	"hash/fnv"
	"testing"

	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/sasl/plain"
)

// Topic is OpenIM's toPush topic name (config/kafka.yml toPushTopic).
const Topic = "toPush"

// KafkaOptions configures StartKafka; the zero value is one plaintext broker without SASL
// holding toPush with 4 partitions.
type KafkaOptions struct {
	Partitions int32 // partitions of toPush; default 4
	// Username and Password, when set, make the broker require SASL/PLAIN with them.
	Username, Password string
	TLS                *tls.Config // server side TLS; nil: plaintext
}

// StartKafka starts a Kafka protocol server holding toPush, closed when the test ends, and
// returns its broker addresses.
func StartKafka(t testing.TB, opts KafkaOptions) []string {
	t.Helper()
	return StartCluster(t, opts).ListenAddrs()
}

// StartCluster is StartKafka for a test that needs the server itself, to make it answer a
// request as a real broker would where kfake answers otherwise.
func StartCluster(t testing.TB, opts KafkaOptions) *kfake.Cluster {
	t.Helper()
	if opts.Partitions == 0 {
		opts.Partitions = 4
	}
	kopts := []kfake.Opt{kfake.NumBrokers(1), kfake.SeedTopics(opts.Partitions, Topic)}
	if opts.Username != "" || opts.Password != "" {
		kopts = append(kopts, kfake.EnableSASL(), kfake.Superuser("PLAIN", opts.Username, opts.Password))
	}
	if opts.TLS != nil {
		kopts = append(kopts, kfake.TLS(opts.TLS))
	}
	cluster, err := kfake.NewCluster(kopts...)
	if err != nil {
		t.Fatalf("openimfeedtest: start kfake: %v", err)
	}
	t.Cleanup(cluster.Close)
	return cluster
}

// ProducerOptions configures NewProducer; Brokers is required.
type ProducerOptions struct {
	Brokers            []string
	Topic              string // default Topic
	Username, Password string // SASL/PLAIN
	TLS                *tls.Config
}

// Producer writes toPush records as OpenIM's msgtransfer does.
type Producer struct {
	client *kgo.Client
	t      testing.TB
}

// NewProducer makes a Producer, closed when the test ends.
//
// It is franz-go configured to behave as OpenIM's sarama SyncProducer, not OpenIM's producer
// itself: importing tools' mq/kafka would bring sarama and tools' dependency tree into msggate
// for tests only. What a consumer can observe is the same: the partition (SaramaCompatHasher
// over FNV-1a is sarama v1.43.0 NewHashPartitioner: int32(fnv32a(key)) % n, negated when
// negative; kafka_test.go checks the formula), the key, the value, the headers, acks from all
// in-sync replicas (kafka.yml producerAck empty → WaitForAll) and no compression (compressType
// none). Idempotent writes are off because sarama's are by default; it changes nothing a
// consumer sees.
func NewProducer(t testing.TB, opts ProducerOptions) *Producer {
	t.Helper()
	if opts.Topic == "" {
		opts.Topic = Topic
	}
	kopts := []kgo.Opt{
		kgo.SeedBrokers(opts.Brokers...),
		kgo.DefaultProduceTopic(opts.Topic),
		kgo.RecordPartitioner(kgo.StickyKeyPartitioner(kgo.SaramaCompatHasher(FNV32a))),
		kgo.RequiredAcks(kgo.AllISRAcks()),
		kgo.DisableIdempotentWrite(),
		kgo.ProducerBatchCompression(kgo.NoCompression()),
	}
	if opts.Username != "" || opts.Password != "" {
		kopts = append(kopts, kgo.SASL(plain.Auth{User: opts.Username, Pass: opts.Password}.AsMechanism()))
	}
	if opts.TLS != nil {
		kopts = append(kopts, kgo.DialTLSConfig(opts.TLS))
	}
	client, err := kgo.NewClient(kopts...)
	if err != nil {
		t.Fatalf("openimfeedtest: producer: %v", err)
	}
	t.Cleanup(client.Close)
	return &Producer{client: client, t: t}
}

// FNV32a is the hash sarama's default partitioner uses (hash/fnv New32a).
func FNV32a(key []byte) uint32 {
	h := fnv.New32a()
	h.Write(key)
	return h.Sum32()
}

// SaramaHashPartition is sarama v1.43.0 hashPartitioner.Partition for a non-nil key
// (partitioner.go, referenceAbs and hashUnsigned false as NewHashPartitioner sets them),
// written out so tests can check that Producer puts each key where OpenIM's producer would.
func SaramaHashPartition(key string, partitions int32) int32 {
	p := int32(FNV32a([]byte(key))) % partitions
	if p < 0 {
		p = -p
	}
	return p
}

// Headers are the headers OpenIM's producer puts on every record, from the request context
// (tools mq/kafka/util.go GetMQHeaderWithContext; protocol constant OperationID, OpUserID,
// OpUserPlatform, ConnID).
type Headers struct {
	OperationID string // required by OpenIM: SendMessage fails without it
	OpUserID    string
	Platform    string // the platform's name, e.g. "Android"
	ConnID      string
}

func (h Headers) records() []kgo.RecordHeader {
	return []kgo.RecordHeader{
		{Key: "operationID", Value: []byte(h.OperationID)},
		{Key: "opUserID", Value: []byte(h.OpUserID)},
		{Key: "platform", Value: []byte(h.Platform)},
		{Key: "connID", Value: []byte(h.ConnID)},
	}
}

// Produced is where a record went.
type Produced struct {
	Key       string
	Partition int32
	Offset    int64
}

// ProduceRaw writes one record with the given key and value and OpenIM's headers, as
// tools Producer.SendMessage does after marshalling; a test uses it for values OpenIM would
// not write (a record msggate cannot decode).
func (p *Producer) ProduceRaw(ctx context.Context, key string, value []byte, h Headers) Produced {
	p.t.Helper()
	r := &kgo.Record{Key: []byte(key), Value: value, Headers: h.records()}
	if err := p.client.ProduceSync(ctx, r).FirstErr(); err != nil {
		p.t.Fatalf("openimfeedtest: produce: %v", err)
	}
	return Produced{Key: key, Partition: r.Partition, Offset: r.Offset}
}
