package graph

import "github.com/msggate/msggate/internal/im"

// pageSize reads a client's page-size argument: def when omitted, at least 1, at most max
// (LIMIT_EXCEEDED above it, so the client learns the bound).
func pageSize(name string, arg *int, def, max int) (int, error) {
	n := def
	if arg != nil {
		n = *arg
	}
	switch {
	case n > max:
		return 0, im.Errorf(im.ELIMIT, "%s is at most %d, got %d", name, max, n)
	case n < 1:
		return 0, im.Errorf(im.EINVALID, "%s must be at least 1", name)
	}
	return n, nil
}
