package im

// PageSize reads a client's page-size argument named name: def when omitted (nil), at least
// 1, at most max (ELIMIT above it, so that the client learns the bound).
func PageSize(name string, arg *int, def, max int) (int, error) {
	n := def
	if arg != nil {
		n = *arg
	}
	switch {
	case n > max:
		return 0, Errorf(ELIMIT, "%s is at most %d, got %d", name, max, n)
	case n < 1:
		return 0, Errorf(EINVALID, "%s must be at least 1", name)
	}
	return n, nil
}
