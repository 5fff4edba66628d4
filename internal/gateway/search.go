package gateway

import (
	"context"
	"fmt"
	"path/filepath"

	"github.com/msggate/msggate/internal/search"
	"github.com/msggate/msggate/internal/search/bleveindex"
	"github.com/msggate/msggate/internal/search/finder"
	"github.com/msggate/msggate/internal/search/pgindex"
)

// The search indexes Config.Search names.
const (
	SearchBleve = "bleve"
	SearchOff   = "off"
)

// SearchDir is where the embedded search index lives under a data directory.
func SearchDir(dataDir string) string { return filepath.Join(dataDir, "search") }

// openSearch opens the search index the config names; nil when search is off.
func (g *Gateway) openSearch() (search.Engine, error) {
	if g.Config.Search == SearchOff {
		return nil, nil
	}
	if g.Config.SearchPostgres != "" {
		// A shared index is filled by msggate reindex, not by each instance's start: a new
		// instance cannot tell whether the others are indexing the same store right now.
		x, err := pgindex.Open(context.Background(), g.Config.SearchPostgres, pgindex.Options{})
		if err != nil {
			return nil, err
		}
		g.closers = append(g.closers, x.Close)
		return x, nil
	}
	switch g.Config.Search {
	case "":
		if g.Config.DataDir == "" {
			return nil, nil // a gateway configured in code, with no place for an index
		}
		fallthrough
	case SearchBleve:
		x, err := bleveindex.Open(SearchDir(g.Config.DataDir), bleveindex.Options{})
		if err != nil {
			return nil, err
		}
		g.closers = append(g.closers, x.Close)
		g.SearchIsNew = x.Created()
		return x, nil
	}
	return nil, fmt.Errorf("gateway: unknown search index %q (want %s or %s)", g.Config.Search, SearchBleve, SearchOff)
}

// OpenSearch opens the search index the config names into Search, when none is open: for
// msggate reindex in OpenIM mode, which does not follow OpenIM's feed.
func (g *Gateway) OpenSearch() (err error) {
	if g.Search == nil {
		g.Search, err = g.openSearch()
	}
	return err
}

// finder answers searches over convs with the gateway's index; nil without one.
func (g *Gateway) finder(convs finder.Conversations) *finder.Finder {
	if g.Search == nil {
		return nil
	}
	return finder.New(g.Search, convs)
}
