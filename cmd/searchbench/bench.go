package main

import (
	"context"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"runtime"
	"runtime/pprof"
	"slices"
	"sort"
	"sync"
	"time"

	"github.com/msggate/msggate/internal/search"
)

type options struct {
	engine        string
	messages      int
	conversations int
	scopes        int
	queries       int
	batch         int
	writers       int
	seed          uint64
	dir           string
	hold          bool
	// cpuProfile, when set, is where a CPU profile of the timed queries goes.
	cpuProfile string
	// reuseIndex says the index (-dir's, or -pg-url's table) already holds this corpus (same
	// -messages, -conversations, -seed), so the bench generates the messages (for the viewer
	// and the words) without indexing them again.
	reuseIndex bool
	// bleveBulk opens the bleve index for bulk loading.
	bleveBulk bool
	// pgSharedBuffers is the PostgreSQL server's shared_buffers.
	pgSharedBuffers string
	// pgURL is a database to use instead of a server of the bench's own.
	pgURL string
}

func bench(ctx context.Context, o options, out io.Writer) error {
	e, err := openEngine(ctx, o)
	if err != nil {
		return err
	}
	defer e.close()

	c := newCorpus(o.seed, o.conversations)
	fmt.Fprintf(out, "searchbench: engine %s, %d messages over %d conversations (seed %d), %d CPUs, batches of %d, %d writers\n",
		o.engine, o.messages, o.conversations, o.seed, runtime.NumCPU(), o.batch, o.writers)
	if o.reuseIndex {
		for range o.messages {
			c.next()
		}
		fmt.Fprintf(out, "reusing the index at %s: not indexed again\n", e.where)
	} else {
		took, err := index(ctx, e, c, o, out)
		if err != nil {
			return err
		}
		fmt.Fprintf(out, "indexed %d messages in %s: %.0f messages/s\n", o.messages, took.Round(time.Millisecond), float64(o.messages)/took.Seconds())
		start := time.Now()
		if err := e.settle(ctx); err != nil {
			return err
		}
		fmt.Fprintf(out, "settled (pg: VACUUM ANALYZE; bleve: waited for every batch to be on disk) in %s\n", time.Since(start).Round(time.Millisecond))
	}
	if size, err := e.size(); err != nil {
		return err
	} else {
		fmt.Fprintf(out, "index size: %s\n", size)
	}

	u := newViewer(c, o)
	fmt.Fprintf(out, "the user is in %d conversations (%d busy groups) holding %d messages\n\n", len(u.scopes), u.busy, u.messages)
	kinds := queryKinds(c, u)
	// Warm up: the first queries pay for loading what the later ones find in memory.
	for _, k := range kinds {
		for i := range 3 {
			if _, err := e.Search(ctx, k.request(i)); err != nil {
				return fmt.Errorf("%s: %w", k.name, err)
			}
		}
	}
	if o.cpuProfile != "" {
		f, err := os.Create(o.cpuProfile)
		if err != nil {
			return err
		}
		defer f.Close()
		if err := pprof.StartCPUProfile(f); err != nil {
			return err
		}
		defer pprof.StopCPUProfile()
	}
	fmt.Fprintf(out, "| query (%d each, first 20) | p50 | p95 | p99 | hits/page | count (exact up to 10,000) |\n|---|---|---|---|---|---|\n", o.queries)
	for _, k := range kinds {
		var times []time.Duration
		var hits, count, exact int
		for i := range o.queries {
			req := k.request(i)
			t0 := time.Now()
			r, err := e.Search(ctx, req)
			if err != nil {
				return fmt.Errorf("%s: %w", k.name, err)
			}
			times = append(times, time.Since(t0))
			hits += len(r.Hits)
			count += r.Count
			if r.CountIsExact {
				exact++
			}
		}
		slices.Sort(times)
		fmt.Fprintf(out, "| %s | %s | %s | %s | %.1f | %.0f (%d%% exact) |\n", k.name,
			ms(percentile(times, 50)), ms(percentile(times, 95)), ms(percentile(times, 99)),
			float64(hits)/float64(o.queries), float64(count)/float64(o.queries), 100*exact/o.queries)
	}
	if o.hold {
		fmt.Fprintf(out, "\nholding the engine (%s) until interrupted\n", e.where)
		<-ctx.Done()
	}
	return nil
}

func ms(d time.Duration) string { return fmt.Sprintf("%.1f ms", float64(d.Microseconds())/1000) }

func percentile(sorted []time.Duration, p int) time.Duration {
	return sorted[min(len(sorted)-1, (len(sorted)*p+99)/100-1)]
}

// index generates the messages and applies them in batches from o.writers goroutines.
func index(ctx context.Context, e search.Engine, c *corpus, o options, out io.Writer) (time.Duration, error) {
	batches := make(chan []search.Change, o.writers)
	errs := make(chan error, o.writers)
	var wg sync.WaitGroup
	for range o.writers {
		wg.Go(func() {
			for b := range batches {
				if err := e.Apply(ctx, b); err != nil {
					errs <- err
					for range batches {
					}
					return
				}
			}
		})
	}
	start := time.Now()
	step := max(o.messages/10, 1)
	var b []search.Change
	for i := range o.messages {
		d := c.next()
		b = append(b, search.Change{Put: &d})
		if len(b) == o.batch || i == o.messages-1 {
			select {
			case batches <- b:
			case err := <-errs:
				close(batches)
				wg.Wait()
				return 0, err
			}
			b = nil
		}
		if (i+1)%step == 0 {
			el := time.Since(start)
			fmt.Fprintf(out, "  generated %d (%d%%) in %s, %.0f/s\n", i+1, 100*(i+1)/o.messages, el.Round(time.Second), float64(i+1)/el.Seconds())
		}
	}
	close(batches)
	wg.Wait()
	select {
	case err := <-errs:
		return 0, err
	default:
	}
	return time.Since(start), nil
}

// viewer is the user whose queries are timed: a member of a few busy groups and of many
// quieter conversations, chosen from the seed.
type viewer struct {
	scopes   []search.Scope
	busy     int
	messages int64
	// sender is a member of the viewer's busiest conversation, for the sender filter.
	sender string
}

func newViewer(c *corpus, o options) viewer {
	rng := rand.New(rand.NewPCG(o.seed, 0x7e3))
	var v viewer
	v.busy = min(max(o.scopes/20, 1), c.busyGroups)
	picked := map[int]bool{}
	for _, i := range rng.Perm(c.busyGroups)[:v.busy] {
		picked[i] = true
	}
	for len(picked) < o.scopes {
		picked[c.busyGroups+rng.IntN(c.conversations-c.busyGroups)] = true
	}
	convs := make([]int, 0, len(picked))
	for i := range picked {
		convs = append(convs, i)
	}
	sort.Ints(convs)
	for _, i := range convs {
		v.scopes = append(v.scopes, search.Scope{ConversationID: convID(i)})
		v.messages += c.nextSeq[i]
	}
	v.sender = c.member(convs[0], 3)
	return v
}

type queryKind struct {
	name    string
	request func(i int) search.Request
}

// queryKinds are the timed queries; each kind cycles through several words so that one
// word's luck does not decide its figures.
func queryKinds(c *corpus, u viewer) []queryKind {
	common := commonEnglish[:10]
	rare := c.wordsWithCount(3, 30, 50)
	if len(rare) == 0 {
		rare = []string{"zzzunfound"}
	}
	var cjk2, cjk3 []string
	for _, w := range commonChinese {
		switch n := len([]rune(w)); {
		case n == 2 && len(cjk2) < 20:
			cjk2 = append(cjk2, w)
		case n == 3 && len(cjk3) < 10:
			cjk3 = append(cjk3, w)
		}
	}
	pairs := commonEnglish[20:40]
	lastTime := baseTime + int64(c.n)*stepMillis
	base := func(text string) search.Request {
		return search.Request{Viewer: "viewer", Text: text, Scopes: u.scopes, First: 20}
	}
	pick := func(words []string, i int) string { return words[i%len(words)] }
	return []queryKind{
		{"common word (top 10)", func(i int) search.Request { return base(pick(common, i)) }},
		{"rare word (in 3-30 of all messages)", func(i int) search.Request { return base(pick(rare, i)) }},
		{"CJK, 2 characters", func(i int) search.Request { return base(pick(cjk2, i)) }},
		{"CJK, 3 characters", func(i int) search.Request { return base(pick(cjk3, i)) }},
		{"two words", func(i int) search.Request {
			return base(pick(pairs, i) + " " + pick(pairs, i*7+3))
		}},
		{"common word + sender", func(i int) search.Request {
			r := base(pick(common, i))
			r.SenderID = u.sender
			return r
		}},
		{"common word + content type (picture)", func(i int) search.Request {
			r := base(pick(common, i))
			r.ContentTypes = []int32{102}
			return r
		}},
		{"common word + last 7 days", func(i int) search.Request {
			r := base(pick(common, i))
			r.SentAfter = lastTime - 7*24*3600*1000
			return r
		}},
		{"common word, 2nd page (cursor)", func(i int) search.Request {
			r := base(pick(common, i))
			// A cursor in the middle of the newest hits: messages hold the word from the
			// start of the corpus on, so the page after it is full.
			r.After = &search.Cursor{SendTime: lastTime - 3600*1000, Key: search.Key{ConversationID: "c", Seq: 1}}
			return r
		}},
		{"CJK, 2 characters + sender", func(i int) search.Request {
			r := base(pick(cjk2, i))
			r.SenderID = u.sender
			return r
		}},
	}
}
