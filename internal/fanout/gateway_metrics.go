package fanout

import (
	"context"
	"fmt"
	"net/http"

	"github.com/msggate/msggate/internal/ops"
)

// gatewayFigures is what one gateway's /metrics says at a moment.
type gatewayFigures struct {
	Goroutines  float64 // go_goroutines
	HeapBytes   float64 // go_gc_heap_live_bytes: the heap the last GC found live
	StackBytes  float64 // go_memstats_stack_inuse_bytes: goroutine stacks
	Subscribers float64 // msggate_sync_subscribers_live: syncEvents subscriptions streaming live
}

// scrape reads g's figures from its /metrics.
func (g *instance) scrape(ctx context.Context, client *http.Client) (gatewayFigures, error) {
	m, err := ops.ScrapeGauges(ctx, client, g.url, "go_goroutines", "go_gc_heap_live_bytes",
		"go_memstats_stack_inuse_bytes", "msggate_sync_subscribers_live")
	if err != nil {
		return gatewayFigures{}, fmt.Errorf("%s: %w", g.name, err)
	}
	return gatewayFigures{Goroutines: m["go_goroutines"], HeapBytes: m["go_gc_heap_live_bytes"],
		StackBytes: m["go_memstats_stack_inuse_bytes"], Subscribers: m["msggate_sync_subscribers_live"]}, nil
}

// scrapeAll reads every gateway's figures, in the order of gws.
func scrapeAll(ctx context.Context, client *http.Client, gws []*instance) ([]gatewayFigures, error) {
	out := make([]gatewayFigures, len(gws))
	for i, g := range gws {
		f, err := g.scrape(ctx, client)
		if err != nil {
			return nil, err
		}
		out[i] = f
	}
	return out, nil
}
