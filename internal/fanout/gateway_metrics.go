package fanout

import (
	"bufio"
	"context"
	"fmt"
	"net/http"
	"strconv"
	"strings"
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
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, g.url+"/metrics", nil)
	if err != nil {
		return gatewayFigures{}, err
	}
	resp, err := client.Do(req)
	if err != nil {
		return gatewayFigures{}, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return gatewayFigures{}, fmt.Errorf("%s /metrics: %s", g.name, resp.Status)
	}
	var f gatewayFigures
	found := 0
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		name, value, ok := strings.Cut(sc.Text(), " ")
		if !ok {
			continue
		}
		var dst *float64
		switch name {
		case "go_goroutines":
			dst = &f.Goroutines
		case "go_gc_heap_live_bytes":
			dst = &f.HeapBytes
		case "go_memstats_stack_inuse_bytes":
			dst = &f.StackBytes
		case "msggate_sync_subscribers_live":
			dst = &f.Subscribers
		default:
			continue
		}
		if v, err := strconv.ParseFloat(strings.TrimSpace(value), 64); err == nil {
			*dst = v
			found++
		}
	}
	if err := sc.Err(); err != nil {
		return f, err
	}
	if found < 4 {
		return f, fmt.Errorf("%s /metrics lacks go_goroutines, go_gc_heap_live_bytes, go_memstats_stack_inuse_bytes or msggate_sync_subscribers_live", g.name)
	}
	return f, nil
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
