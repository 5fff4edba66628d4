package fanout

import (
	"bufio"
	"context"
	"fmt"
	"net/http"
	"strconv"
	"strings"

	"github.com/msggate/msggate/internal/ops"
)

// gatewayFigures is what one gateway's /metrics and the kernel say of it at a moment.
type gatewayFigures struct {
	Goroutines  float64 // go_goroutines
	HeapBytes   float64 // go_gc_heap_live_bytes: the heap the last GC found live
	StackBytes  float64 // go_memstats_stack_inuse_bytes: goroutine stacks
	Subscribers float64 // msggate_sync_subscribers: syncEvents subscriptions open
	Live        float64 // msggate_sync_subscribers_live: syncEvents subscriptions streaming live
	RSS         float64 // the process's VmRSS
	// MongoCommands is the MongoDB commands the gateway has made (the count of
	// msggate_mongodb_command_duration_seconds over every command name).
	MongoCommands float64
}

// scrape reads g's figures from its /metrics and its RSS from the kernel.
func (g *instance) scrape(ctx context.Context, client *http.Client) (gatewayFigures, error) {
	m, err := ops.ScrapeGauges(ctx, client, g.url, "go_goroutines", "go_gc_heap_live_bytes",
		"go_memstats_stack_inuse_bytes", "msggate_sync_subscribers", "msggate_sync_subscribers_live")
	if err != nil {
		return gatewayFigures{}, fmt.Errorf("%s: %w", g.name, err)
	}
	f := gatewayFigures{Goroutines: m["go_goroutines"], HeapBytes: m["go_gc_heap_live_bytes"],
		StackBytes: m["go_memstats_stack_inuse_bytes"], Subscribers: m["msggate_sync_subscribers"],
		Live: m["msggate_sync_subscribers_live"]}
	if f.MongoCommands, err = g.sumSeries(ctx, client, "msggate_mongodb_command_duration_seconds_count"); err != nil {
		return gatewayFigures{}, err
	}
	rss, err := g.rss()
	if err != nil {
		return gatewayFigures{}, err
	}
	f.RSS = float64(rss)
	return f, nil
}

// sumSeries adds up every series of the labelled metric name on g's /metrics (none: 0).
func (g *instance) sumSeries(ctx context.Context, client *http.Client, name string) (float64, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, g.url+"/metrics", nil)
	if err != nil {
		return 0, err
	}
	resp, err := client.Do(req)
	if err != nil {
		return 0, fmt.Errorf("%s: %w", g.name, err)
	}
	defer resp.Body.Close()
	sum := 0.0
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if !strings.HasPrefix(line, name+"{") {
			continue
		}
		if i := strings.LastIndexByte(line, ' '); i > 0 {
			if v, err := strconv.ParseFloat(line[i+1:], 64); err == nil {
				sum += v
			}
		}
	}
	return sum, sc.Err()
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
