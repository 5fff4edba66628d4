package graph

import "github.com/msggate/msggate/internal/im"

// pageSize reads a client's page-size argument (see im.PageSize).
func pageSize(name string, arg *int, def, max int) (int, error) {
	return im.PageSize(name, arg, def, max)
}
