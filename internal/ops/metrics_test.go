package ops

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"sort"
	"strings"
	"sync/atomic"
	"testing"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	"github.com/redis/go-redis/v9"
	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/event"

	"github.com/msggate/msggate/internal/testenv"
)

// samples flattens metric families into `name{k="v",...}` -> value, labels sorted; a
// histogram gives its _count and _sum.
func samples(families []*dto.MetricFamily) map[string]float64 {
	out := map[string]float64{}
	for _, f := range families {
		for _, m := range f.GetMetric() {
			var labels []string
			for _, l := range m.GetLabel() {
				labels = append(labels, fmt.Sprintf("%s=%q", l.GetName(), l.GetValue()))
			}
			sort.Strings(labels)
			suffix := ""
			if len(labels) > 0 {
				suffix = "{" + strings.Join(labels, ",") + "}"
			}
			switch {
			case m.Counter != nil:
				out[f.GetName()+suffix] = m.GetCounter().GetValue()
			case m.Gauge != nil:
				out[f.GetName()+suffix] = m.GetGauge().GetValue()
			case m.Histogram != nil:
				out[f.GetName()+"_count"+suffix] = float64(m.GetHistogram().GetSampleCount())
				out[f.GetName()+"_sum"+suffix] = m.GetHistogram().GetSampleSum()
			}
		}
	}
	return out
}

// scrape reads the metrics as Prometheus would: over HTTP, in the text format.
func scrape(t *testing.T, m *Metrics) map[string]float64 {
	t.Helper()
	srv := httptest.NewServer(m.Handler())
	defer srv.Close()
	resp, err := http.Get(srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if ct := resp.Header.Get("Content-Type"); !strings.HasPrefix(ct, "text/plain") {
		t.Fatalf("Content-Type %q, want the text exposition format", ct)
	}
	p := expfmt.NewTextParser(model.UTF8Validation)
	byName, err := p.TextToMetricFamilies(resp.Body)
	if err != nil {
		t.Fatalf("parse the exposition: %v", err)
	}
	var families []*dto.MetricFamily
	for _, f := range byName {
		families = append(families, f)
	}
	return samples(families)
}

// Ensure two Metrics (two gateways in one process) register without colliding and keep
// separate counts.
func TestMetricsRegistriesAreSeparate(t *testing.T) {
	a, b := NewMetrics(), NewMetrics()
	a.ObserveChunkCache(3, 1)
	b.ObserveChunkCache(0, 2)
	a.ObserveBatch("chunks", 7)
	sa, sb := scrape(t, a), scrape(t, b)
	if sa["msggate_chunk_cache_hits_total"] != 3 || sa["msggate_chunk_cache_misses_total"] != 1 {
		t.Errorf("first registry: hits %v misses %v, want 3 and 1", sa["msggate_chunk_cache_hits_total"], sa["msggate_chunk_cache_misses_total"])
	}
	if sb["msggate_chunk_cache_hits_total"] != 0 || sb["msggate_chunk_cache_misses_total"] != 2 {
		t.Errorf("second registry: hits %v misses %v, want 0 and 2", sb["msggate_chunk_cache_hits_total"], sb["msggate_chunk_cache_misses_total"])
	}
	if got := sa[`msggate_dataloader_batch_size_sum{loader="chunks"}`]; got != 7 {
		t.Errorf("batch size sum %v, want 7", got)
	}
	if _, ok := sb[`msggate_dataloader_batch_size_count{loader="chunks"}`]; ok {
		t.Error("a batch observed on one registry shows on the other")
	}
	if sa["go_goroutines"] == 0 {
		t.Error("the Go runtime collector is missing")
	}
}

// Ensure client-chosen operation names cannot grow the registry without bound.
func TestOperationLabelsAreBounded(t *testing.T) {
	var names operationNames
	for i := range maxOperationNames {
		if got := names.label(fmt.Sprintf("Op%d", i)); got != fmt.Sprintf("Op%d", i) {
			t.Fatalf("name %d labelled %q", i, got)
		}
	}
	if got := names.label("OneTooMany"); got != otherOperation {
		t.Errorf("a name past the bound is labelled %q, want %q", got, otherOperation)
	}
	if got := names.label("Op7"); got != "Op7" {
		t.Errorf("a name seen before the bound is labelled %q, want its own", got)
	}
	if got := names.label(strings.Repeat("x", maxOperationNameLen+1)); got != otherOperation {
		t.Errorf("an overlong name is labelled %q", got)
	}
	if got := names.label(""); got != anonymousOperation {
		t.Errorf("no name is labelled %q", got)
	}
}

// Ensure the Redis hook times single commands by name, pipelines as one, a new connection's
// handshake apart from both, and counts failures but not the errors go-redis expects (a
// missing key, NOSCRIPT, a handshake command an older server lacks).
func TestRedisHookTimesCalls(t *testing.T) {
	rs := testenv.Redis(t)
	m := NewMetrics()
	opts, err := redis.ParseURL(rs.URL())
	if err != nil {
		t.Fatal(err)
	}
	rdb := redis.NewClient(opts)
	defer rdb.Close()
	rdb.AddHook(m.RedisHook())
	ctx := context.Background()
	if err := rdb.Set(ctx, "k", "v", 0).Err(); err != nil {
		t.Fatal(err)
	}
	if err := rdb.Get(ctx, "absent").Err(); err != redis.Nil {
		t.Fatalf("get of an absent key: %v", err)
	}
	if _, err := rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
		p.Get(ctx, "k")
		p.Get(ctx, "k")
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if err := rdb.Do(ctx, "nosuchcommand").Err(); err == nil {
		t.Fatal("an unknown command succeeded")
	}
	// The first run of a script is an EVALSHA answered NOSCRIPT, then an EVAL.
	if err := redis.NewScript("return 1").Run(ctx, rdb, nil).Err(); err != nil {
		t.Fatal(err)
	}
	s := scrape(t, m)
	for series, want := range map[string]float64{
		`msggate_redis_call_duration_seconds_count{command="set"}`:           1,
		`msggate_redis_call_duration_seconds_count{command="get"}`:           1,
		`msggate_redis_call_duration_seconds_count{command="pipeline"}`:      1,
		`msggate_redis_call_duration_seconds_count{command="nosuchcommand"}`: 1,
		`msggate_redis_call_failures_total{command="nosuchcommand"}`:         1,
	} {
		if s[series] != want {
			t.Errorf("%s = %v, want %v", series, s[series], want)
		}
	}
	// go-redis dials a connection for commands and another for pipelines.
	if s[`msggate_redis_call_duration_seconds_count{command="connect"}`] < 1 {
		t.Error("no connection handshake was timed")
	}
	if s[`msggate_redis_call_duration_seconds_sum{command="set"}`] <= 0 {
		t.Error("set took no time")
	}
	for _, command := range []string{"get", "evalsha", "connect"} {
		if _, ok := s[`msggate_redis_call_failures_total{command="`+command+`"}`]; ok {
			t.Errorf("an answer go-redis expects counted as a failure of %s", command)
		}
	}
	if s[`msggate_redis_call_duration_seconds_count{command="evalsha"}`] != 1 || s[`msggate_redis_call_duration_seconds_count{command="eval"}`] != 1 {
		t.Error("a script's first run is not timed as one evalsha and one eval")
	}
}

// Ensure the MongoDB monitor times commands by name, counts failed ones, and still calls the
// monitor it wraps.
func TestMongoMonitorTimesCommandsAndComposes(t *testing.T) {
	m := NewMetrics()
	var seen testenv.MongoCommands
	var failedToo atomic.Int32
	inner := seen.Monitor()
	inner.Failed = func(context.Context, *event.CommandFailedEvent) { failedToo.Add(1) }
	db := testenv.Mongo(t).Connect(t, m.MongoMonitor(inner))
	ctx := context.Background()
	if _, err := db.Collection("c").InsertOne(ctx, bson.M{"_id": 1}); err != nil {
		t.Fatal(err)
	}
	if err := db.Collection("c").FindOne(ctx, bson.M{"_id": 1}).Err(); err != nil {
		t.Fatal(err)
	}
	if err := db.RunCommand(ctx, bson.D{{Key: "nosuchcommand", Value: 1}}).Err(); err == nil {
		t.Fatal("an unknown command succeeded")
	}
	if n := seen.Count("c", "insert", "find"); n != 2 {
		t.Errorf("the wrapped monitor saw %d commands on c, want 2", n)
	}
	if n := failedToo.Load(); n != 1 {
		t.Errorf("the wrapped monitor saw %d failures, want 1", n)
	}
	s := scrape(t, m)
	for series, want := range map[string]float64{
		`msggate_mongodb_command_duration_seconds_count{command="insert"}`:        1,
		`msggate_mongodb_command_duration_seconds_count{command="find"}`:          1,
		`msggate_mongodb_command_duration_seconds_count{command="nosuchcommand"}`: 1,
		`msggate_mongodb_command_failures_total{command="nosuchcommand"}`:         1,
	} {
		if s[series] != want {
			t.Errorf("%s = %v, want %v", series, s[series], want)
		}
	}
	if s[`msggate_mongodb_command_duration_seconds_sum{command="find"}`] <= 0 {
		t.Error("find took no time")
	}
	if _, ok := s[`msggate_mongodb_command_failures_total{command="find"}`]; ok {
		t.Error("a successful find counted as a failure")
	}
}
