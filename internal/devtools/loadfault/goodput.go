package loadfault

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"
)

// The levels mode runs the same scenario (same seed, same users, same faults, fresh stores)
// at several multiples of one load, to show goodput against offered load: a gateway that
// sheds what it cannot do keeps answering about as much as at its peak, quickly, however
// much more is offered; one that does not collapses (Google SRE book, "Handling Overload").

// Checks of the levels mode, at the highest level: goodput at least this share of the best
// level's, and the answered requests' p99 below this.
const (
	minGoodputShare = 0.8
	maxAnsweredP99  = 2 * time.Second
)

// LevelFigures is one level of a goodput run.
type LevelFigures struct {
	// Factor multiplies the base load: the users' pause is Think, the base pause / Factor.
	Factor float64
	Think  time.Duration
	Load   LoadFigures
	// Failed names the level's own checks that failed (lost sends, replicas, INTERNAL, ...).
	Failed []string
}

// GoodputReport is what a levels run measured.
type GoodputReport struct {
	Seed   int64
	Levels []LevelFigures
	// Dir holds each level's files (level-<factor>x/: the gateways' logs) and Chart.
	Dir   string
	Chart string
	// Failed names each check that failed; empty when the run passed.
	Failed []string
}

// ChartFile is the name of the chart a levels run writes into its directory.
const ChartFile = "goodput.svg"

// RunLevels runs the scenario of o at each factor of its load in turn (o.Think / factor), each
// in a directory of its own under o.Dir with fresh stores, then prints the goodput table,
// writes the chart into o.Dir and checks the levels: every level's own checks, and at the
// highest level goodput of at least 80% of the best level's with the answered requests' p99
// under 2 s. o.Dir is kept (a new temporary directory when empty, printed); the stores' data
// of each level is removed once it is done, its logs stay. The error is ErrChecksFailed when
// a check failed.
func RunLevels(ctx context.Context, o Options, factors []float64) (*GoodputReport, error) {
	if len(factors) == 0 {
		return nil, errors.New("loadfault: no levels")
	}
	for _, f := range factors {
		if f <= 0 {
			return nil, fmt.Errorf("loadfault: level %v is not above zero", f)
		}
	}
	o = o.withDefaults() // one seed for every level
	out := o.Out
	if o.Dir == "" {
		dir, err := os.MkdirTemp("", "msggate-goodput-")
		if err != nil {
			return nil, err
		}
		o.Dir = dir
	}
	// Built once, for every level.
	o, err := o.withGateway()
	if err != nil {
		return nil, err
	}
	g := &GoodputReport{Seed: o.Seed, Dir: o.Dir, Chart: filepath.Join(o.Dir, ChartFile)}
	fmt.Fprintf(out, "goodput run: levels %s of a %s pause, %s each, seed %d, files under %s\n",
		levelNames(factors), o.Think, o.Duration, o.Seed, o.Dir)
	for i, f := range factors {
		lo := o
		lo.Think = time.Duration(float64(o.Think) / f)
		lo.Dir = filepath.Join(o.Dir, fmt.Sprintf("level-%gx", f))
		if err := os.MkdirAll(lo.Dir, 0o700); err != nil {
			return nil, err
		}
		fmt.Fprintf(out, "\n=== level %d of %d: %gx, pause %s ===\n", i+1, len(factors), f, lo.Think)
		began := time.Now()
		r, err := Run(ctx, lo)
		if err != nil && !errors.Is(err, ErrChecksFailed) {
			return nil, fmt.Errorf("level %gx: %w", f, err)
		}
		// The stores' data is large and says nothing the report does not; the logs stay.
		for _, sub := range []string{"store", "redis"} {
			_ = os.RemoveAll(filepath.Join(lo.Dir, sub))
		}
		g.Levels = append(g.Levels, LevelFigures{Factor: f, Think: lo.Think, Load: r.Load, Failed: r.Failed})
		fmt.Fprintf(out, "=== level %gx done in %s ===\n", f, time.Since(began).Round(time.Second))
	}
	g.Failed = judgeLevels(g.Levels)
	chart, err := os.Create(g.Chart)
	if err != nil {
		return nil, err
	}
	if err := writeGoodputChart(chart, g.Levels); err != nil {
		chart.Close()
		return nil, err
	}
	if err := chart.Close(); err != nil {
		return nil, err
	}
	g.Print(out)
	if len(g.Failed) > 0 {
		return g, ErrChecksFailed
	}
	return g, nil
}

// judgeLevels lists the checks a levels run fails.
func judgeLevels(levels []LevelFigures) []string {
	var failed []string
	for _, l := range levels {
		for _, f := range l.Failed {
			failed = append(failed, fmt.Sprintf("at %gx: %s", l.Factor, f))
		}
	}
	if len(levels) == 0 {
		return failed
	}
	top, peak := levels[0], levels[0]
	for _, l := range levels {
		if l.Factor > top.Factor {
			top = l
		}
		if l.Load.Answered > peak.Load.Answered {
			peak = l
		}
	}
	if top.Load.Answered < minGoodputShare*peak.Load.Answered {
		failed = append(failed, fmt.Sprintf("goodput at %gx is %.1f req/s, below %.0f%% of the peak's %.1f req/s (at %gx)",
			top.Factor, top.Load.Answered, 100*minGoodputShare, peak.Load.Answered, peak.Factor))
	}
	if top.Load.P99 >= maxAnsweredP99 {
		failed = append(failed, fmt.Sprintf("p99 of the answered requests at %gx is %s, not below %s", top.Factor, ms(top.Load.P99), maxAnsweredP99))
	}
	return failed
}

// Print writes the goodput table, where the chart is, and the checks.
func (g *GoodputReport) Print(w io.Writer) {
	fmt.Fprintf(w, "\nmsggate goodput against offered load, seed %d (requests of the users a second; p99 of the answered)\n\n", g.Seed)
	fmt.Fprintf(w, "%6s %9s %9s %9s %9s %9s %9s %11s  %s\n", "level", "pause", "offered", "retries", "answered", "refused", "failed", "p99", "checks")
	for _, l := range g.Levels {
		checks := "passed"
		if len(l.Failed) > 0 {
			checks = strings.Join(l.Failed, "; ")
		}
		fmt.Fprintf(w, "%5gx %9s %9.1f %9.1f %9.1f %9.1f %9.1f %11s  %s\n", l.Factor, l.Think.Round(time.Millisecond),
			l.Load.Offered, l.Load.Retries, l.Load.Answered, l.Load.Refused, l.Load.Failed, ms(l.Load.P99), checks)
	}
	fmt.Fprintf(w, "\nchart: %s\n", g.Chart)
	if len(g.Failed) == 0 {
		fmt.Fprintln(w, "every check passed")
	} else {
		fmt.Fprintln(w, "FAILED:", strings.Join(g.Failed, "; "))
	}
}

func levelNames(factors []float64) string {
	names := make([]string, len(factors))
	for i, f := range factors {
		names[i] = fmt.Sprintf("%gx", f)
	}
	return strings.Join(names, ", ")
}
