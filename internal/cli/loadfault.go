package cli

import (
	"context"
	"flag"
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/msggate/msggate/internal/loadfault"
)

// LoadFault: msggate loadfault [-duration D] [-users N] [-think D] [-faults N] [-seed N] [-dir D]
// [-levels 1,2,4,8]
// It runs two gateway processes under load while faults are injected, then checks and
// reports (internal/loadfault). With -levels it runs the scenario once per level, at that
// multiple of the load -think gives (the pause divided by it), and prints goodput against
// offered load and writes goodput.svg into -dir (a kept temporary directory when not given).
// It fails when a check fails.
func LoadFault(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	o := loadfault.Options{Out: stdout}
	fs := flag.NewFlagSet("loadfault", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.DurationVar(&o.Duration, "duration", 60e9, "how long the load runs (with -levels: at each level)")
	fs.IntVar(&o.Users, "users", 200, "users, each with two live devices")
	fs.DurationVar(&o.Think, "think", 60e9, "mean pause of each user between two operations (with -levels: the pause of level 1)")
	fs.IntVar(&o.FaultRounds, "faults", 1, "rounds of faults (each round: redis-server killed, a gateway killed, the store restarted); negative: none")
	fs.Int64Var(&o.Seed, "seed", 0, "seed of the run's choices (default: from the clock; the report prints it)")
	fs.StringVar(&o.Dir, "dir", "", "directory for the run's processes and logs (default: a new temporary one, removed after; with -levels kept, with the chart)")
	levels := fs.String("levels", "", "comma-separated multiples of the load to run in turn, e.g. 1,2,4,8: goodput against offered load, and "+loadfault.ChartFile)
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *levels == "" {
		_, err := loadfault.Run(ctx, o)
		return err
	}
	factors, err := parseLevels(*levels)
	if err != nil {
		return err
	}
	_, err = loadfault.RunLevels(ctx, o, factors)
	return err
}

// parseLevels reads "1,2,4,8" into factors, each above zero.
func parseLevels(s string) ([]float64, error) {
	var out []float64
	for _, f := range strings.Split(s, ",") {
		v, err := strconv.ParseFloat(strings.TrimSuffix(strings.TrimSpace(f), "x"), 64)
		if err != nil || v <= 0 {
			return nil, fmt.Errorf("loadfault: -levels %q: %q is not a multiple above zero", s, f)
		}
		out = append(out, v)
	}
	return out, nil
}
