// Command searchbench measures a message-search engine (issue 33, item 5): it indexes
// messages generated from a fixed seed (mixed English and CJK text, over 10,000
// conversations by default), then times queries of one user in 200 of them: a common word, a
// rare word, CJK substrings, two words, and a common word under each filter and on a second
// page. It reports indexing throughput, the index's size, and p50/p95/p99 per query kind.
//
//	go run ./cmd/searchbench [-engine pg|bleve] [-messages N] [-conversations N] [-queries N] [-seed N] [-dir D]
//	    [-bleve-bulk] [-reuse-index] [-cpuprofile F]
//
// With -engine pg it starts a PostgreSQL server of its own (internal/devtools/testenv, as the tests
// do: initdb and postgres must be installed; ./scripts/need-postgres installs them); with
// -engine bleve it builds the embedded index under the scratch directory. With -engine pg
// -hold it keeps that server once done; -pg-url URL -reuse-index then times the queries again on
// its database without indexing the messages again.
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"

	"github.com/msggate/msggate/internal/devtools/toolmain"
)

func main() { toolmain.Run("searchbench", run) }

func run(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	var o options
	fs := flag.NewFlagSet("searchbench", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.StringVar(&o.engine, "engine", "pg", "the engine to measure: pg (PostgreSQL, a server of its own) or bleve (embedded)")
	fs.IntVar(&o.messages, "messages", 100_000, "messages to index")
	fs.IntVar(&o.conversations, "conversations", 10_000, "conversations the messages are spread over")
	fs.IntVar(&o.scopes, "scopes", 200, "conversations of the user whose queries are timed")
	fs.IntVar(&o.queries, "queries", 200, "timed queries of each kind")
	fs.IntVar(&o.batch, "batch", 1000, "messages per Apply while indexing")
	fs.IntVar(&o.writers, "writers", 2, "concurrent Apply calls while indexing")
	fs.Uint64Var(&o.seed, "seed", 1, "seed of the generated messages")
	fs.StringVar(&o.pgSharedBuffers, "pg-shared-buffers", "1GB", "shared_buffers of the PostgreSQL server (the tests' 64MB would measure the kernel's page cache, not PostgreSQL's)")
	fs.StringVar(&o.pgURL, "pg-url", "", "with -engine pg: a database to use (its search table is created if missing) instead of a server of the bench's own; psql must be on PATH")
	fs.BoolVar(&o.hold, "hold", false, "after the queries, keep the engine (and its PostgreSQL server) until interrupted, to look at it")
	fs.BoolVar(&o.reuseIndex, "reuse-index", false, "with -dir (bleve) or -pg-url (pg) holding the index of an earlier run with the same -messages, -conversations and -seed (e.g. kept with -hold): generate the messages without indexing them again and time the queries")
	fs.BoolVar(&o.bleveBulk, "bleve-bulk", false, "index with the bleve engine's bulk loading (batches not waited on to be on disk, one wait at the end, counted as settling) instead of a durable wait per batch as the gateway's writes")
	fs.StringVar(&o.cpuProfile, "cpuprofile", "", "write a CPU profile of the timed queries (not the indexing) to this file")
	fs.StringVar(&o.dir, "dir", "", "scratch directory for the bleve index (default: a new temporary one, removed after)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if o.reuseIndex && (o.engine == "pg" && o.pgURL == "" || o.engine == "bleve" && o.dir == "") {
		return fmt.Errorf("-reuse-index needs -pg-url (engine pg) or -dir (engine bleve): the index to reuse")
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("unexpected arguments %q", fs.Args())
	}
	if o.conversations < 2*o.scopes || o.messages < 1 || o.batch < 1 || o.writers < 1 || o.queries < 1 {
		return fmt.Errorf("need -messages, -batch, -writers, -queries >= 1 and -conversations >= 2 x -scopes")
	}
	if o.dir == "" {
		dir, err := os.MkdirTemp("", "msggate-searchbench-")
		if err != nil {
			return err
		}
		defer os.RemoveAll(dir)
		o.dir = dir
	}
	return bench(ctx, o, stdout)
}
