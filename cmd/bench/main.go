// Command bench measures msggate's read path against baseline handlers in one run
// (internal/devtools/bench): the gateway runs in this process, on a redis-server and a FerretDB it
// starts, so it needs a source checkout and redis-server, as the tests do.
//
//	go run ./cmd/bench [-duration D] [-rounds N] [-c N] [-cold N] [-big N] [-time-length N] [-only NAME] [-dir D] [-cpuprofile F]
//
// With -write-import FILE it only writes a file for `msggate import` (bench.WriteImportFile)
// and exits:
//
//	go run ./cmd/bench -write-import FILE [-import-messages N] [-import-conversations N] [-import-grouped]
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"runtime/pprof"

	"github.com/msggate/msggate/internal/devtools/bench"
	"github.com/msggate/msggate/internal/devtools/toolmain"
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
	fs.IntVar(&o.TimeLength, "time-length", bench.DefaultTimeLength, "messages of the conversation the seqAtTime rows search (stored only when -only lets them run)")
	fs.StringVar(&o.Only, "only", "", "measure only the pages whose name contains this (for example \"list\" or \"by seq\")")
	cpuProfile := fs.String("cpuprofile", "", "write a CPU profile of the measured runs (gateway, baselines and load together) to this file")
	importFile := fs.String("write-import", "", "only write a JSON Lines file for `msggate import` to this path, and exit")
	var imp bench.ImportFileOptions
	fs.IntVar(&imp.Messages, "import-messages", 1_000_000, "messages in the -write-import file")
	fs.IntVar(&imp.Conversations, "import-conversations", 10_000, "single chats in the -write-import file")
	fs.BoolVar(&imp.Grouped, "import-grouped", false, "write each chat's messages together (default: message i in chat i mod N, so every import batch touches many chats)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("unexpected arguments %q", fs.Args())
	}
	if *importFile != "" {
		return writeImportFile(*importFile, imp, stdout)
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

// writeImportFile writes the file -write-import asks for.
func writeImportFile(path string, o bench.ImportFileOptions, stdout io.Writer) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if err := bench.WriteImportFile(f, o); err != nil {
		_ = f.Close()
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	fmt.Fprintf(stdout, "%s: %d messages over %d chats\n", path, o.Messages, o.Conversations)
	return nil
}
