package e2e

import (
	"bufio"
	"bytes"
	"encoding/json"
	"testing"

	"github.com/msggate/msggate/internal/gateway/gatewaytest"
)

// auditResult is one line of audit.mjs's output.
type auditResult struct {
	ID          string `json:"id"`
	Name        string `json:"name"`
	Status      string `json:"status"` // ok, notice, warn or error
	Reason      string `json:"reason"`
	HTTPStatus  int    `json:"httpStatus"`
	ContentType string `json:"contentType"`
	Body        string `json:"body"`
}

// Ensure the gateway's /query passes every MUST of the GraphQL-over-HTTP spec as graphql-http's
// auditServer checks it (zero error results); its warnings and notices are logged, since they
// are SHOULDs the gateway may have decided against.
func TestGraphQLOverHTTPAudit(t *testing.T) {
	g := gatewaytest.Start(t)
	out := runE2E(t, "audit.mjs", g.URL+"/query")

	var results []auditResult
	sc := bufio.NewScanner(bytes.NewReader(out))
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		var r auditResult
		if err := json.Unmarshal(sc.Bytes(), &r); err != nil {
			t.Fatalf("audit printed a line that is not a result: %q", sc.Text())
		}
		results = append(results, r)
	}
	// graphql-http 1.23 runs several dozen audits; far fewer means the run broke off.
	if len(results) < 30 {
		t.Fatalf("the audit reported %d results:\n%s", len(results), out)
	}
	counts := map[string]int{}
	for _, r := range results {
		counts[r.Status]++
		switch r.Status {
		case "ok":
		case "error":
			t.Errorf("audit error %s %q: %s (HTTP %d, %s): %s", r.ID, r.Name, r.Reason, r.HTTPStatus, r.ContentType, r.Body)
		default:
			t.Logf("audit %s %s %q: %s (HTTP %d, %s)", r.Status, r.ID, r.Name, r.Reason, r.HTTPStatus, r.ContentType)
		}
	}
	t.Logf("audit: %d results, %v", len(results), counts)
}
