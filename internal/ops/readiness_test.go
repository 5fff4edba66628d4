package ops

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/msggate/msggate/internal/devtools/testenv"
)

func readiness(t *testing.T, h http.Handler) (int, Readiness, string) {
	t.Helper()
	srv := httptest.NewServer(h)
	defer srv.Close()
	resp, err := http.Get(srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var body Readiness
	var raw json.RawMessage
	if err := json.NewDecoder(resp.Body).Decode(&raw); err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(raw, &body); err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, body, string(raw)
}

func ok(context.Context) error { return nil }

// Ensure readiness is 200 when every dependency answers and 503 naming the one that does not,
// without the failure's details, which go to the log instead.
func TestReadiness(t *testing.T) {
	var buf testenv.LogBuffer
	logger := slog.New(slog.NewJSONHandler(&buf, nil))
	code, body, _ := readiness(t, ReadinessHandler(logger, 0, Check{"mongodb", ok}, Check{"redis", ok}))
	if code != http.StatusOK || body.Status != "ready" || body.Checks["mongodb"] != "ok" || body.Checks["redis"] != "ok" || body.Failing != nil {
		t.Errorf("all up: %d %+v", code, body)
	}

	down := func(context.Context) error { return errors.New("dial tcp 10.1.2.3:6379: connection refused") }
	code, body, raw := readiness(t, ReadinessHandler(logger, 0, Check{"mongodb", ok}, Check{"redis", down}))
	if code != http.StatusServiceUnavailable || body.Status != "unavailable" || !slices.Equal(body.Failing, []string{"redis"}) ||
		body.Checks["redis"] != "unreachable" || body.Checks["mongodb"] != "ok" {
		t.Errorf("redis down: %d %+v", code, body)
	}
	if strings.Contains(raw, "10.1.2.3") {
		t.Errorf("the answer leaks the cause: %s", raw)
	}
	if !strings.Contains(buf.String(), "10.1.2.3") {
		t.Errorf("the cause was not logged: %s", buf.String())
	}
}

// Ensure a dependency that hangs, even one that ignores its context, makes readiness answer
// 503 "timeout" rather than hang with it, while the others' answers still count.
func TestReadinessTimesOut(t *testing.T) {
	release := make(chan struct{})
	defer close(release)
	hang := func(context.Context) error { <-release; return nil }
	refused := func(context.Context) error { return errors.New("refused") }
	code, body, _ := readiness(t, ReadinessHandler(slog.New(slog.DiscardHandler), 50*time.Millisecond,
		Check{"mongodb", hang}, Check{"redis", refused}, Check{"other", ok}))
	if code != http.StatusServiceUnavailable || !slices.Equal(body.Failing, []string{"mongodb", "redis"}) ||
		body.Checks["mongodb"] != "timeout" || body.Checks["redis"] != "unreachable" || body.Checks["other"] != "ok" {
		t.Errorf("hanging mongodb: %d %+v", code, body)
	}
}
