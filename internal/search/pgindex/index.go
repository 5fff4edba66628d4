// Package pgindex is the message-search engine for several gateways: PostgreSQL full-text
// search that every instance shares, as Synapse and Mattermost search their database. Each
// message is a row; its words, and the bigrams of its CJK text, are a generated tsvector under
// a GIN index, so that a query in a script written without spaces (Chinese, Japanese, Korean)
// finds the messages holding it.
//
// A query is cut into runs of letters and numbers. A run holding a CJK character must occur
// as a substring of the message's lower-cased text (LIKE); the index finds its candidates
// through the run's first CJK bigram. Any other run must be one of the message's
// words (the tsvector: exact words in lower case, no stemming and no stop words, so that
// "the" and "was" find what they say, as in the embedded engine). Every run must match. A
// query with no runs matches every message the filters keep.
//
// It is the only importer of the PostgreSQL driver (pgx).
package pgindex

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/msggate/msggate/internal/search"
)

// Options configure an Index; the zero value is the default.
type Options struct {
	// Table is the name of the table of messages (a plain lower-case identifier), for several
	// indexes in one database; default "msggate_search_messages".
	Table string
	// CountLimit is how far Result.Count is exact; default (and at most) search.CountLimit.
	CountLimit int
	// Timeout bounds each Apply and Search, connecting included: a server that does not answer
	// within it is unavailable. Default 10s.
	Timeout time.Duration
	// MaxConns is the pool's size; default pgx's (the greater of 4 and the number of CPUs),
	// or pool_max_conns in the URL.
	MaxConns int32
}

const defaultTable = "msggate_search_messages"

var tableName = regexp.MustCompile(`^[a-z_][a-z0-9_]{0,40}$`)

// Index is a search.Engine on a PostgreSQL database. It is safe for concurrent use.
type Index struct {
	pool       *pgxpool.Pool
	table      string
	countLimit int
	timeout    time.Duration

	// migrated says the schema is known to be current; until then every call tries to
	// migrate first, so a gateway started while the server is down gets going when it comes
	// back.
	migrateMu sync.Mutex
	migrated  bool
	closed    atomic.Bool
}

var _ search.Engine = (*Index)(nil)

// Open connects to the database at url (a postgres:// URL or a key=value string, as libpq
// takes) and brings the schema up to date, creating the pg_trgm extension if it is missing
// (it is a trusted extension: the database's owner may create it). A server that cannot be
// reached does not fail Open: the index then migrates on first use, and answers
// search.ErrUnavailable until the server answers. Other failures (a bad URL, no right to
// create the table) do.
func Open(ctx context.Context, url string, opts Options) (*Index, error) {
	x := &Index{table: opts.Table, countLimit: opts.CountLimit, timeout: opts.Timeout}
	if x.table == "" {
		x.table = defaultTable
	}
	if !tableName.MatchString(x.table) {
		return nil, fmt.Errorf("pgindex: table name %q: want a lower-case identifier", x.table)
	}
	if x.countLimit <= 0 || x.countLimit > search.CountLimit {
		x.countLimit = search.CountLimit
	}
	if x.timeout <= 0 {
		x.timeout = 10 * time.Second
	}
	cfg, err := pgxpool.ParseConfig(url)
	if err != nil {
		return nil, fmt.Errorf("pgindex: %w", err)
	}
	if opts.MaxConns > 0 {
		cfg.MaxConns = opts.MaxConns
	}
	if cfg.ConnConfig.ConnectTimeout == 0 || cfg.ConnConfig.ConnectTimeout > x.timeout {
		cfg.ConnConfig.ConnectTimeout = x.timeout
	}
	// Each search is planned for its own words and scopes: a generic plan cannot tell a rare
	// word from a common one, and would scan the whole index for both.
	cfg.ConnConfig.RuntimeParams["plan_cache_mode"] = "force_custom_plan"
	if cfg.ConnConfig.RuntimeParams["application_name"] == "" {
		cfg.ConnConfig.RuntimeParams["application_name"] = "msggate search"
	}
	if x.pool, err = pgxpool.NewWithConfig(ctx, cfg); err != nil {
		return nil, fmt.Errorf("pgindex: %w", err)
	}
	if err := x.ready(ctx); err != nil && !errors.Is(err, search.ErrUnavailable) {
		x.pool.Close()
		return nil, err
	}
	return x, nil
}

// CountLimit is how far counts are exact (searchtest.CountLimiter).
func (x *Index) CountLimit() int { return x.countLimit }

// Close closes the pool's connections.
func (x *Index) Close() error {
	x.closed.Store(true)
	x.pool.Close()
	return nil
}

// ready migrates the schema unless that is done.
func (x *Index) ready(ctx context.Context) error {
	if x.closed.Load() {
		return errClosed
	}
	x.migrateMu.Lock()
	defer x.migrateMu.Unlock()
	if x.migrated {
		return nil
	}
	ctx, cancel := context.WithTimeout(ctx, x.timeout)
	defer cancel()
	if err := x.migrate(ctx); err != nil {
		return x.failure(ctx, "migrate", err)
	}
	x.migrated = true
	return nil
}

// do runs f bounded by the index's timeout, after making sure of the schema, and names its
// failure.
func (x *Index) do(ctx context.Context, op string, f func(ctx context.Context) error) error {
	if err := x.ready(ctx); err != nil {
		return err
	}
	tctx, cancel := context.WithTimeout(ctx, x.timeout)
	defer cancel()
	if err := f(tctx); err != nil {
		if ctx.Err() != nil {
			return fmt.Errorf("pgindex: %s: %w", op, ctx.Err())
		}
		return x.failure(tctx, op, err)
	}
	return nil
}
