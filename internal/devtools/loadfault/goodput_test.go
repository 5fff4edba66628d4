package loadfault

import (
	"bytes"
	"encoding/xml"
	"errors"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"
)

var testLevels = []LevelFigures{
	{Factor: 1, Think: 5 * time.Second, Load: LoadFigures{Offered: 40, Answered: 40, P99: 300 * time.Millisecond}},
	{Factor: 2, Think: 2500 * time.Millisecond, Load: LoadFigures{Offered: 80, Answered: 78, Refused: 2, P99: 600 * time.Millisecond}},
	{Factor: 4, Think: 1250 * time.Millisecond, Load: LoadFigures{Offered: 160, Answered: 95, Refused: 60, Failed: 1, P99: 1200 * time.Millisecond}},
	{Factor: 8, Think: 625 * time.Millisecond, Load: LoadFigures{Offered: 300, Answered: 90, Refused: 200, Failed: 3, P99: 1800 * time.Millisecond}},
}

// Ensure the chart is well-formed XML with each series: the offered and answered lines and
// the p99 line with a point per level, a refused and a failed bar per level, a p99 label
// per level, and names that need escaping escaped.
func TestGoodputChartIsWellFormedWithEverySeries(t *testing.T) {
	var b bytes.Buffer
	if err := writeGoodputChart(&b, testLevels); err != nil {
		t.Fatal(err)
	}
	dec := xml.NewDecoder(bytes.NewReader(b.Bytes()))
	lines := map[string]int{} // polyline id → points
	bars := map[string]int{}  // rect class → count
	var texts []string        // every text's content
	var root string
	var inText bool
	for {
		tok, err := dec.Token()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatalf("the chart is not well-formed XML: %v\n%s", err, b.String())
		}
		switch el := tok.(type) {
		case xml.StartElement:
			if root == "" {
				root = el.Name.Local
			}
			attr := func(name string) string {
				for _, a := range el.Attr {
					if a.Name.Local == name {
						return a.Value
					}
				}
				return ""
			}
			switch el.Name.Local {
			case "polyline":
				lines[attr("id")] = len(strings.Fields(attr("points")))
			case "rect":
				if c := attr("class"); c != "" {
					bars[c]++
				}
			case "text":
				inText = true
			}
		case xml.CharData:
			if inText {
				texts = append(texts, string(el))
			}
		case xml.EndElement:
			if el.Name.Local == "text" {
				inText = false
			}
		}
	}
	if root != "svg" {
		t.Errorf("root element %q, want svg", root)
	}
	for _, id := range []string{"offered", "answered", "p99"} {
		if lines[id] != len(testLevels) {
			t.Errorf("line %q has %d points, want %d (lines: %v)", id, lines[id], len(testLevels), lines)
		}
	}
	for _, class := range []string{"refused", "failed"} {
		if bars[class] != len(testLevels) {
			t.Errorf("%d %s bars, want %d", bars[class], class, len(testLevels))
		}
	}
	joined := strings.Join(texts, "|")
	for _, want := range []string{"1x", "8x", "1800.0 ms", "answered (goodput)", "refused", "p99 of answered"} {
		if !strings.Contains(joined, want) {
			t.Errorf("no text %q in the chart: %s", want, joined)
		}
	}
}

// Ensure the levels' checks fail on a goodput below 80% of the peak at the highest level, on
// a p99 of 2 s or more there, and on a level's own failed check; and pass otherwise.
func TestJudgeLevels(t *testing.T) {
	if f := judgeLevels(testLevels); len(f) != 0 {
		t.Errorf("a run that holds fails: %v", f)
	}
	collapsed := append([]LevelFigures(nil), testLevels...)
	collapsed[3].Load.Answered = 70 // below 0.8 × 95
	collapsed[3].Load.P99 = 2 * time.Second
	collapsed[1].Failed = []string{"1 acknowledged sends lost"}
	f := strings.Join(judgeLevels(collapsed), "\n")
	for _, want := range []string{"goodput at 8x is 70.0 req/s, below 80% of the peak's 95.0 req/s (at 4x)", "p99 of the answered requests at 8x", "at 2x: 1 acknowledged sends lost"} {
		if !strings.Contains(f, want) {
			t.Errorf("checks say:\n%s\nwant %q", f, want)
		}
	}
}

// Ensure a refusal (503 or 429, or UNAVAILABLE or LIMIT_EXCEEDED with a hint) is told from a
// failure (UNAVAILABLE without a hint: a store down; INTERNAL; no answer).
func TestReplyRefused(t *testing.T) {
	for _, tc := range []struct {
		r    reply
		want bool
	}{
		{reply{code: "UNAVAILABLE", status: http.StatusServiceUnavailable, retryAfter: time.Second}, true},
		{reply{code: "LIMIT_EXCEEDED", status: http.StatusTooManyRequests, retryAfter: 50 * time.Millisecond}, true},
		{reply{code: "HTTP_503", status: http.StatusServiceUnavailable}, true},
		{reply{code: "UNAVAILABLE", status: http.StatusOK, retryAfter: 200 * time.Millisecond}, true},
		{reply{code: "UNAVAILABLE", status: http.StatusOK}, false},
		{reply{code: "INTERNAL", status: http.StatusOK}, false},
		{reply{code: codeTransport}, false},
		{reply{status: http.StatusOK}, false},
	} {
		if got := tc.r.refused(); got != tc.want {
			t.Errorf("%+v refused: %v, want %v", tc.r, got, tc.want)
		}
	}
}

// Ensure the load window counts first attempts as offered, and answers, refusals and failures
// by when they came, with the p99 of the answered ones only.
func TestRecorderWindow(t *testing.T) {
	r := newRecorder()
	t0 := time.Now()
	r.requests = []request{
		{began: t0.Add(-time.Second), at: t0.Add(100 * time.Millisecond), first: true, outcome: answered}, // offered before
		{began: t0, at: t0.Add(200 * time.Millisecond), first: true, outcome: refused},
		{began: t0.Add(time.Second), at: t0.Add(1100 * time.Millisecond), outcome: answered}, // a retry
		{began: t0.Add(time.Second), at: t0.Add(3 * time.Second), first: true, outcome: answered},
		{began: t0.Add(1500 * time.Millisecond), at: t0.Add(1600 * time.Millisecond), first: true, outcome: failed},
		{began: t0.Add(1900 * time.Millisecond), at: t0.Add(2500 * time.Millisecond), first: true, outcome: answered}, // after
	}
	got := r.window(t0, t0.Add(2*time.Second))
	want := LoadFigures{Offered: 2, Retries: 0.5, Answered: 1, Refused: 0.5, Failed: 0.5, P99: 1100 * time.Millisecond}
	if got != want {
		t.Errorf("window %+v, want %+v", got, want)
	}
}
