package cli

import (
	"context"
	"flag"
	"io"

	"github.com/msggate/msggate/internal/loadfault"
)

// LoadFault: msggate loadfault [-duration D] [-users N] [-think D] [-faults N] [-seed N] [-dir D]
// It runs two gateway processes under load while faults are injected, then checks and
// reports (internal/loadfault). It fails when a check fails.
func LoadFault(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	o := loadfault.Options{Out: stdout}
	fs := flag.NewFlagSet("loadfault", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.DurationVar(&o.Duration, "duration", 60e9, "how long the load runs")
	fs.IntVar(&o.Users, "users", 200, "users, each with two live devices")
	fs.DurationVar(&o.Think, "think", 60e9, "mean pause of each user between two operations")
	fs.IntVar(&o.FaultRounds, "faults", 1, "rounds of faults (each round: redis-server killed, a gateway killed, the store restarted); negative: none")
	fs.Int64Var(&o.Seed, "seed", 0, "seed of the run's choices (default: from the clock; the report prints it)")
	fs.StringVar(&o.Dir, "dir", "", "directory for the run's processes and logs (default: a new temporary one, removed after)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	_, err := loadfault.Run(ctx, o)
	return err
}
