package deploy_test

import (
	"bufio"
	"encoding/json"
	"net/http"
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/msggate/msggate/internal/gateway"
	"github.com/msggate/msggate/internal/gateway/gatewaytest"
	"github.com/msggate/msggate/internal/openimfeed/openimfeedtest"
)

// dashboardExprs returns every PromQL expression of the dashboard's panels and variables.
func dashboardExprs(t *testing.T, file string) []string {
	t.Helper()
	raw, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	var doc any
	if err := json.Unmarshal(raw, &doc); err != nil {
		t.Fatalf("%s is not JSON: %v", file, err)
	}
	var exprs []string
	var walk func(v any)
	walk = func(v any) {
		switch v := v.(type) {
		case map[string]any:
			for k, x := range v {
				if s, ok := x.(string); ok && (k == "expr" || k == "definition") {
					exprs = append(exprs, s)
				}
				walk(x)
			}
		case []any:
			for _, x := range v {
				walk(x)
			}
		}
	}
	walk(doc)
	return exprs
}

// seriesNames reads the names of the series a gateway's /metrics exports, as Prometheus
// ingests them (a histogram's _bucket, _sum and _count each).
func seriesNames(t *testing.T, g *gatewaytest.Gateway, into map[string]bool) {
	t.Helper()
	resp, err := http.Get(g.URL + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		if i := strings.IndexAny(line, "{ "); i > 0 {
			into[line[:i]] = true
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
}

var metricName = regexp.MustCompile(`\b(?:msggate|go|process)_[a-z0-9_]+\b`)

// Ensure every metric the Grafana dashboard queries is exported by running gateways, one on
// msggate's own store and one in OpenIM mode following its Kafka, after the requests that
// make the labelled series appear; and that the dashboard shows what an operator watches.
func TestDashboardMetricsExist(t *testing.T) {
	exprs := dashboardExprs(t, "grafana/msggate.json")
	used := map[string]bool{}
	for _, e := range exprs {
		for _, name := range metricName.FindAllString(e, -1) {
			used[name] = true
		}
	}
	for _, must := range []string{
		"msggate_graphql_requests_total", "msggate_graphql_errors_total", "msggate_graphql_request_duration_seconds_bucket",
		"msggate_limit_refusals_total", "msggate_admission_refused_total",
		"msggate_redis_call_duration_seconds_bucket", "msggate_mongodb_command_duration_seconds_bucket",
		"msggate_sync_subscribers_live", "msggate_sync_subscribers_dropped_total",
		"msggate_relay_due_intents", "msggate_openim_feed_lag_records", "msggate_openim_search_backlog_seqs",
	} {
		if !used[must] {
			t.Errorf("the dashboard does not show %s", must)
		}
	}

	exported := map[string]bool{}
	own := gatewaytest.StartWith(t, func(c *gateway.Config) { c.Handler.MaxBodyBytes = 4 << 10 })
	alice := own.Token("alice")
	if r := own.Post(alice, `mutation { sendMessage(input: {recvID: "bob", contentType: 101, content: "hi"}) { seq } }`, nil); len(r.Errors) > 0 {
		t.Fatalf("send: %+v", r.Errors)
	}
	if r := own.Post(alice, `{ conversation(id: "si_alice_bob") { history(limit: 5) { messages { seq } } } }`, nil); len(r.Errors) > 0 {
		t.Fatalf("read: %+v", r.Errors)
	}
	if code := own.ErrorCode(own.Token("carol"), `{ conversation(id: "si_alice_bob") { maxSeq } }`, nil); code != "FORBIDDEN" {
		t.Fatalf("a non-member's read answered %q", code)
	}
	// A body past -max-body-bytes is refused by a limit (msggate_limit_refusals_total).
	if resp, _ := own.PostBody(alice, []byte(`{"query":"{ viewer { userID } }","x":"`+strings.Repeat("x", 8<<10)+`"}`)); resp.StatusCode != http.StatusRequestEntityTooLarge {
		t.Fatalf("an oversized body answered %d", resp.StatusCode)
	}
	seriesNames(t, own, exported)

	brokers := openimfeedtest.StartKafka(t, openimfeedtest.KafkaOptions{})
	im := gatewaytest.StartOpenIM(t, func(c *gateway.Config) {
		c.OpenIM.Feed.Brokers = strings.Join(brokers, ",")
		c.OpenIM.Feed.GapFillInterval = time.Second
	})
	seriesNames(t, im.Gateway, exported)

	var missing []string
	for name := range used {
		if !exported[name] {
			missing = append(missing, name)
		}
	}
	slices.Sort(missing)
	if len(missing) > 0 {
		t.Errorf("the dashboard queries metrics no gateway exports: %s", strings.Join(missing, ", "))
	}
}
