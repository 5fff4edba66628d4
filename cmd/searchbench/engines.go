package main

import (
	"context"
	"fmt"
	"io/fs"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/msggate/msggate/internal/search"
	"github.com/msggate/msggate/internal/search/bleveindex"
	"github.com/msggate/msggate/internal/search/pgindex"
	"github.com/msggate/msggate/internal/testenv"
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
		return openPostgres(ctx, o.pgSharedBuffers)
	case "bleve":
		return openBleve(o.dir, o.bleveBulk)
	}
	return nil, fmt.Errorf("unknown -engine %q: want pg or bleve", o.engine)
}

func openPostgres(ctx context.Context, sharedBuffers string) (*engine, error) {
	srv, err := testenv.StartPostgresServer("shared_buffers=" + sharedBuffers)
	if err != nil {
		return nil, err
	}
	const db = "search"
	if err := srv.CreateDatabase(db); err != nil {
		srv.Close()
		return nil, err
	}
	x, err := pgindex.Open(ctx, srv.URL(db), pgindex.Options{})
	if err != nil {
		srv.Close()
		return nil, err
	}
	const table = "msggate_search_messages"
	return &engine{
		Engine: x,
		where:  srv.URL(db),
		settle: func(context.Context) error {
			_, err := srv.Query(db, "VACUUM ANALYZE "+table)
			return err
		},
		size: func() (string, error) {
			out, err := srv.Query(db, `SELECT pg_relation_size('`+table+`'), pg_total_relation_size('`+table+`'),
				pg_relation_size('`+table+`_pkey'), pg_relation_size('`+table+`_tsv'), pg_relation_size('`+table+`_trgm')`)
			if err != nil {
				return "", err
			}
			f := strings.Split(out, "|")
			if len(f) != 5 {
				return "", fmt.Errorf("sizes: %q", out)
			}
			mb := make([]string, 5)
			for i, s := range f {
				n, _ := strconv.ParseInt(s, 10, 64)
				mb[i] = fmt.Sprintf("%.0f MB", float64(n)/1e6)
			}
			return fmt.Sprintf("%s in all: rows %s, primary key %s, tsvector GIN %s, trigram GIN %s (the rest: TOAST, free space and visibility maps)",
				mb[1], mb[0], mb[2], mb[3], mb[4]), nil
		},
		close: func() {
			_ = x.Close()
			srv.Close()
		},
	}, nil
}

func openBleve(dir string, bulk bool) (*engine, error) {
	path := filepath.Join(dir, "bleve")
	x, err := bleveindex.Open(path, bleveindex.Options{Bulk: bulk})
	if err != nil {
		return nil, err
	}
	return &engine{
		Engine: x,
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
