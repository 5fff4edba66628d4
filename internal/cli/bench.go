package cli

import (
	"context"
	"flag"
	"io"
	"os"
	"runtime/pprof"

	"github.com/msggate/msggate/internal/bench"
)

// Bench: msggate bench [-duration D] [-rounds N] [-c N] [-cold N] [-only NAME] [-cpuprofile F]
// It measures the read path against baseline handlers in one run (internal/bench).
func Bench(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	o := bench.Options{Out: stdout}
	fs := flag.NewFlagSet("bench", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.DurationVar(&o.Duration, "duration", 5e9, "how long each handler is driven in each round")
	fs.IntVar(&o.Rounds, "rounds", 2, "rounds per handler, gateway and baseline alternately")
	fs.IntVar(&o.Concurrency, "c", 32, "concurrent clients, each waiting for its answer")
	fs.IntVar(&o.ColdRequests, "cold", 50, "cold history pages timed one at a time")
	fs.StringVar(&o.Dir, "dir", "", "directory for the run's store and redis-server (default: a new temporary one, removed after)")
	fs.StringVar(&o.Only, "only", "", "measure only the pages whose name contains this (for example \"list\" or \"by seq\")")
	cpuProfile := fs.String("cpuprofile", "", "write a CPU profile of the measured runs (gateway, baselines and load together) to this file")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *cpuProfile != "" {
		f, err := os.Create(*cpuProfile)
		if err != nil {
			return err
		}
		defer f.Close()
		o.Profile = func(start bool) {
			if start {
				_ = pprof.StartCPUProfile(f)
			} else {
				pprof.StopCPUProfile()
			}
		}
	}
	_, err := bench.Run(ctx, o)
	return err
}
