// Command bench measures msggate's read path against baseline handlers in one run
// (internal/bench): the gateway runs in this process, on a redis-server and a FerretDB it
// starts, so it needs a source checkout and redis-server, as the tests do.
//
//	go run ./cmd/bench [-duration D] [-rounds N] [-c N] [-cold N] [-only NAME] [-dir D] [-cpuprofile F]
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"runtime/pprof"

	"github.com/msggate/msggate/internal/bench"
	"github.com/msggate/msggate/internal/toolmain"
)

func main() { toolmain.Run("bench", run) }

// run parses the flags in args and runs the bench, its progress and report to stdout.
func run(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	o := bench.Options{Out: stdout}
	fs := flag.NewFlagSet("bench", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.DurationVar(&o.Duration, "duration", bench.DefaultDuration, "how long each handler is driven in each round")
	fs.IntVar(&o.Rounds, "rounds", bench.DefaultRounds, "rounds per handler, gateway and baseline alternately")
	fs.IntVar(&o.Concurrency, "c", bench.DefaultConcurrency, "concurrent clients, each waiting for its answer")
	fs.IntVar(&o.ColdRequests, "cold", bench.DefaultColdRequests, "cold history pages timed one at a time")
	fs.StringVar(&o.Dir, "dir", "", "directory for the run's store and redis-server (default: a new temporary one, removed after)")
	fs.IntVar(&o.BigList, "big", bench.DefaultBigList, "conversations of the second viewer, whose list page is measured against the first's (20)")
	fs.StringVar(&o.Only, "only", "", "measure only the pages whose name contains this (for example \"list\" or \"by seq\")")
	cpuProfile := fs.String("cpuprofile", "", "write a CPU profile of the measured runs (gateway, baselines and load together) to this file")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("unexpected arguments %q", fs.Args())
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
