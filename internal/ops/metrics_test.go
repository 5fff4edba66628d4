package ops

import (
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"sort"
	"strings"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
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

// Ensure the relay's looks, the feed's lag and the search backlog are exported as an operator reads them: the
// backlog as of the last look, the finished intents and failed looks summed; and that the
// known reasons of dropped subscriptions and skipped records have series before any happens.
func TestBackgroundWorkMetrics(t *testing.T) {
	m := NewMetrics()
	s := scrape(t, m)
	for _, series := range []string{
		`msggate_sync_subscribers_dropped_total{reason="slow_consumer"}`,
		`msggate_sync_subscribers_dropped_total{reason="shutdown"}`,
		`msggate_openim_feed_records_skipped_total{reason="undecodable"}`,
		`msggate_openim_feed_records_skipped_total{reason="refused"}`,
	} {
		if v, ok := s[series]; !ok || v != 0 {
			t.Errorf("%s = %v (present %v) before anything happened, want 0", series, v, ok)
		}
	}
	look := m.WatchRelay()
	look(7, 90*time.Second, 2, false)
	look(3, 30*time.Second, 4, true)
	var lag int64 = 12
	m.WatchFeedLag(func() int64 { return lag })
	backlog, backlogErr := int64(5), error(nil)
	m.WatchSearchBacklog(func() (int64, error) { return backlog, backlogErr })
	s = scrape(t, m)
	for series, want := range map[string]float64{
		"msggate_relay_due_intents":               3,
		"msggate_relay_oldest_intent_age_seconds": 30,
		"msggate_relay_intents_finished_total":    6,
		"msggate_relay_look_failures_total":       1,
		"msggate_openim_feed_lag_records":         12,
		"msggate_openim_search_backlog_seqs":      5,
	} {
		if s[series] != want {
			t.Errorf("%s = %v, want %v", series, s[series], want)
		}
	}
	// Redis down: no figure rather than a wrong one.
	backlogErr = errors.New("redis down")
	if v, ok := scrape(t, m)["msggate_openim_search_backlog_seqs"]; ok {
		t.Errorf("the backlog unreadable is exported as %v", v)
	}
}
