package pgindex

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/jackc/pgx/v5/pgconn"

	"github.com/msggate/msggate/internal/search"
)

// errClosed is returned by an Index used after Close.
var errClosed = errors.New("pgindex: index closed")

// failure names err, and marks it search.ErrUnavailable when the server could not be reached
// or could not answer now (down, restarting, out of connections, too slow for the timeout in
// ctx), as opposed to having answered that the request itself is wrong.
func (x *Index) failure(ctx context.Context, op string, err error) error {
	if errors.Is(err, errClosed) {
		return err
	}
	if errors.Is(ctx.Err(), context.Canceled) {
		return fmt.Errorf("pgindex: %s: %w", op, err)
	}
	if errors.Is(ctx.Err(), context.DeadlineExceeded) {
		return fmt.Errorf("%w: pgindex: %s: no answer within %s: %w", search.ErrUnavailable, op, x.timeout, err)
	}
	if unavailable(err) {
		return fmt.Errorf("%w: pgindex: %s: %w", search.ErrUnavailable, op, err)
	}
	return fmt.Errorf("pgindex: %s: %w", op, err)
}

// unavailable reports whether err says the server is not there or cannot serve now. Every
// error that is not an answer from the server (refused or reset connections, EOF, a failed
// connect) is one; of the server's answers, only the SQLSTATE classes that mean the same:
// connection exceptions (08), insufficient resources (53, e.g. too many connections), system
// errors (58), and shutting down, starting up or cancelled by a statement timeout (57).
func unavailable(err error) bool {
	var pgErr *pgconn.PgError
	if !errors.As(err, &pgErr) {
		return true
	}
	for _, class := range []string{"08", "53", "57", "58"} {
		if strings.HasPrefix(pgErr.Code, class) {
			return true
		}
	}
	return false
}
