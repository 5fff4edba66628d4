package embedded

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io/fs"
	"net/url"
	"os"
	"path/filepath"
	"strings"

	_ "modernc.org/sqlite" // the SQLite driver FerretDB itself uses, so both agree on the file format and locks
)

// The index on _id that FerretDB 1.24 does not make.
//
// FerretDB's SQLite backend keeps a collection as a table of one JSON text column,
// _ferretdb_sjson, and answers a filter that is exactly {_id: <string or ObjectID>} (a find, and
// the per-document UPDATE and DELETE behind every update and delete) with
// WHERE _ferretdb_sjson->'$._id' = ?. The unique index it creates for _id is on
// _ferretdb_sjson->"_id", which SQLite does not recognise as the same expression, so every such
// lookup is a SCAN of the whole table: the fuller the store, the slower each read. An index on
// exactly _ferretdb_sjson->'$._id' turns it into a SEARCH.
//
// The index is plain SQLite, beside FerretDB's own: FerretDB lists, sizes and drops only the
// indexes recorded in its metadata (_ferretdb_collections.settings), so it never shows this one
// to clients, and SQLite drops it with its table when the collection is dropped. Its name,
// idIndexPrefix and the table name, cannot be one of FerretDB's (theirs are
// "<table>_<index name>", and its table names end in a hash, never begin with '_' unless the
// collection name does) nor a table.
const idIndexPrefix = "_msggate_id_"

// idExpr is FerretDB's metadata.IDColumn: what its SQL compares an _id filter with.
const idExpr = `_ferretdb_sjson->'$._id'`

// sqliteExt is how FerretDB names a database's file: <database>.sqlite.
const sqliteExt = ".sqlite"

// busyTimeoutMS is how long a statement here waits for FerretDB's writes to let go of the
// database: FerretDB's own default, so neither side gives up sooner than the other.
const busyTimeoutMS = 10_000

// IndexIDs gives every collection of the named FerretDB databases (none named: every database)
// stored under dataDir, as StartFerretDB stores them, the SQLite index FerretDB's lookups by
// _id can use. It is safe while FerretDB runs, in this process or another: each table is
// indexed in a write transaction of its own that first checks the collection still exists,
// waiting for FerretDB's writes as FerretDB waits for others'. A database that does not exist
// (yet) is skipped, and an index that exists is left as it is, so calling it again after more
// collections were created indexes just those. Building the index on a large existing
// collection holds the database's write lock for as long as SQLite takes to read it once.
func IndexIDs(ctx context.Context, dataDir string, databases ...string) error {
	dir, err := ferretDBDir(dataDir)
	if err != nil {
		return err
	}
	var files []string
	for _, name := range databases {
		files = append(files, filepath.Join(dir, name+sqliteExt))
	}
	if len(databases) == 0 {
		if files, err = filepath.Glob(filepath.Join(dir, "*"+sqliteExt)); err != nil {
			return err
		}
	}
	for _, f := range files {
		if err := indexDatabase(ctx, f); err != nil {
			return fmt.Errorf("index _id in %s: %w", f, err)
		}
	}
	return nil
}

// ferretDBDir is where StartFerretDB keeps the SQLite files of a data dir.
func ferretDBDir(dataDir string) (string, error) {
	return filepath.Abs(filepath.Join(dataDir, "ferretdb"))
}

func indexDatabase(ctx context.Context, file string) error {
	if _, err := os.Stat(file); errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	// mode=rw: never create a file FerretDB would take for a database at its next start, should
	// the database be dropped meanwhile. _txlock=immediate: a transaction takes the write lock
	// at BEGIN, so its check of the collection and its CREATE INDEX see the same schema.
	u := url.URL{Scheme: "file", Path: file, RawQuery: fmt.Sprintf("mode=rw&_txlock=immediate&_pragma=busy_timeout(%d)", busyTimeoutMS)}
	db, err := sql.Open("sqlite", u.String())
	if err != nil {
		return err
	}
	defer db.Close()
	db.SetMaxOpenConns(1)

	tables, err := collectionTables(ctx, db)
	if err != nil {
		return err
	}
	for _, table := range tables {
		if err := indexTable(ctx, db, table); err != nil {
			return fmt.Errorf("table %s: %w", table, err)
		}
	}
	return nil
}

// collectionTables lists the tables FerretDB keeps collections in, from its metadata table
// (metadata/registry.go: name, table_name, settings). A database FerretDB has only just
// created may not have it yet: no collections.
func collectionTables(ctx context.Context, db *sql.DB) ([]string, error) {
	rows, err := db.QueryContext(ctx, `SELECT table_name FROM _ferretdb_collections`)
	if err != nil {
		if strings.Contains(err.Error(), "no such table") {
			return nil, nil
		}
		return nil, err
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var t string
		if err := rows.Scan(&t); err != nil {
			return nil, err
		}
		out = append(out, t)
	}
	return out, rows.Err()
}

// indexTable creates the _id index of one collection's table, unless the collection was
// dropped since it was listed.
func indexTable(ctx context.Context, db *sql.DB, table string) error {
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	defer func() { _ = tx.Rollback() }()
	var n int
	if err := tx.QueryRowContext(ctx, `SELECT count(*) FROM _ferretdb_collections WHERE table_name = ?`, table).Scan(&n); err != nil {
		return err
	}
	if n == 0 {
		return nil
	}
	q := fmt.Sprintf(`CREATE INDEX IF NOT EXISTS %s ON %s (%s)`, quoteIdent(idIndexPrefix+table), quoteIdent(table), idExpr)
	if _, err := tx.ExecContext(ctx, q); err != nil {
		return err
	}
	return tx.Commit()
}

// quoteIdent quotes an SQLite identifier.
func quoteIdent(s string) string { return `"` + strings.ReplaceAll(s, `"`, `""`) + `"` }
