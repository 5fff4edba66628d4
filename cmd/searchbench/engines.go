package main

import (
	"context"
	"fmt"
	"io/fs"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/msggate/msggate/internal/devtools/testenv"
	"github.com/msggate/msggate/internal/search"
	"github.com/msggate/msggate/internal/search/bleveindex"
	"github.com/msggate/msggate/internal/search/pgindex"
)

// engine is an engine under measurement, with what the bench needs beyond search.Engine.
type engine struct {
	search.Engine
	// settle runs after indexing, before the queries: what a deployment's background work
	// would have done by then (PostgreSQL's autovacuum: VACUUM ANALYZE).
	settle func(ctx context.Context) error
	// size describes the index's size on disk.
	size func() (string, error)
	// close releases everything the engine started.
	close func()
	// where says where the index is: a database URL or a directory.
	where string
}

func openEngine(ctx context.Context, o options) (*engine, error) {
	switch o.engine {
	case "pg":
		return openPostgres(ctx, o.pgURL, o.pgSharedBuffers)
	case "bleve":
		return openBleve(o.dir, o.bleveBulk)
	}
	return nil, fmt.Errorf("unknown -engine %q: want pg or bleve", o.engine)
}

// openPostgres opens the engine on the database at url, or on a server of its own when url is
// empty.
func openPostgres(ctx context.Context, url, sharedBuffers string) (*engine, error) {
	stop := func() {}
	var query func(sql string) (string, error)
	if url == "" {
		srv, err := testenv.StartPostgresServer("shared_buffers=" + sharedBuffers)
		if err != nil {
			return nil, err
		}
		const db = "search"
		if err := srv.CreateDatabase(db); err != nil {
			srv.Close()
			return nil, err
		}
		url, stop = srv.URL(db), srv.Close
		query = func(sql string) (string, error) { return srv.Query(db, sql) }
	} else {
		query = func(sql string) (string, error) { return psql(ctx, url, sql) }
	}
	x, err := pgindex.Open(ctx, url, pgindex.Options{})
	if err != nil {
		stop()
		return nil, err
	}
	const table = "msggate_search_messages"
	return &engine{
		Engine: x,
		where:  url,
		settle: func(context.Context) error {
			_, err := query("VACUUM ANALYZE " + table)
			return err
		},
		size: func() (string, error) {
			out, err := query(`SELECT pg_relation_size('` + table + `'), pg_total_relation_size('` + table + `'),
				pg_relation_size('` + table + `_pkey'), pg_relation_size('` + table + `_tsv'),
				pg_relation_size('` + table + `_scope')`)
			if err != nil {
				return "", err
			}
			f := strings.Split(out, "|")
			if len(f) != 5 {
				return "", fmt.Errorf("sizes: %q", out)
			}
			mb := make([]string, len(f))
			for i, s := range f {
				n, _ := strconv.ParseInt(s, 10, 64)
				mb[i] = fmt.Sprintf("%.0f MB", float64(n)/1e6)
			}
			return fmt.Sprintf("%s in all: rows %s, primary key %s, tsvector GIN %s, scope index %s (the rest: TOAST, free space and visibility maps)",
				mb[1], mb[0], mb[2], mb[3], mb[4]), nil
		},
		close: func() {
			_ = x.Close()
			stop()
		},
	}, nil
}

// psql runs one statement on the database at url and returns its unaligned output.
func psql(ctx context.Context, url, sql string) (string, error) {
	out, err := exec.CommandContext(ctx, "psql", "-X", "-q", "-t", "-A", "-v", "ON_ERROR_STOP=1", "-d", url, "-c", sql).CombinedOutput()
	if err != nil {
		return "", fmt.Errorf("psql %q: %w: %s", sql, err, strings.TrimSpace(string(out)))
	}
	return strings.TrimSpace(string(out)), nil
}

func openBleve(dir string, bulk bool) (*engine, error) {
	path := filepath.Join(dir, "bleve")
	x, err := bleveindex.Open(path, bleveindex.Options{Bulk: bulk})
	if err != nil {
		return nil, err
	}
	return &engine{
		Engine: x,
		where:  path,
		settle: func(context.Context) error { return x.Sync() },
		size: func() (string, error) {
			var total int64
			err := filepath.WalkDir(path, func(_ string, d fs.DirEntry, err error) error {
				if err != nil || d.IsDir() {
					return err
				}
				info, err := d.Info()
				if err == nil {
					total += info.Size()
				}
				return err
			})
			return fmt.Sprintf("%.0f MB on disk", float64(total)/1e6), err
		},
		close: func() { _ = x.Close() },
	}, nil
}
