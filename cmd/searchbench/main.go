// Command searchbench measures a search engine on generated messages: it indexes -messages
// messages over -conversations conversations (English and CJK text from a generator with a
// fixed seed), then times queries for a user in -scope conversations: a common word, a rare
// word, a CJK substring, and the common word with each filter. It prints indexing throughput,
// the index's size on disk and p50/p95/p99 per query kind.
//
//	go run ./cmd/searchbench -engine bleve -messages 1000000
package main

import (
	"context"
	"flag"
	"fmt"
	"io/fs"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/msggate/msggate/internal/search"
	"github.com/msggate/msggate/internal/search/bleveindex"
)

func main() {
	engine := flag.String("engine", "bleve", "engine to measure: bleve")
	messages := flag.Int("messages", 1_000_000, "messages to index")
	convs := flag.Int("conversations", 10_000, "conversations they are spread over")
	scope := flag.Int("scope", 200, "conversations the searching user is in")
	runs := flag.Int("runs", 200, "runs of each query kind")
	dir := flag.String("dir", "", "where the index goes (default: a temporary directory, removed after)")
	flag.Parse()
	if err := run(*engine, *messages, *convs, *scope, *runs, *dir); err != nil {
		fmt.Fprintln(os.Stderr, "searchbench:", err)
		os.Exit(1)
	}
}

// Generated text: words drawn from a Zipf distribution over a fixed vocabulary, and in about a
// third of the messages a CJK sentence of phrases drawn the same way.
var (
	syllables = strings.Fields("ka lo mi ra tu ne so vi da pe ru lin mor tas gen bel")
	cjkWords  = strings.Fields("我们 明天 北京 开会 上海 天气 工作 时间 问题 项目 朋友 晚饭 周末 电影 东京 会议 报告 客户 数据 系统 手机 照片 地址 价格 计划")
)

const vocabSize = 5000

func vocabulary() []string {
	out := make([]string, 0, vocabSize)
	for i := 0; len(out) < vocabSize; i++ {
		var b strings.Builder
		n := i
		for j := 0; j < 2 || n > 0; j++ {
			b.WriteString(syllables[n%len(syllables)])
			n /= len(syllables)
		}
		out = append(out, b.String())
	}
	return out
}

type generator struct {
	r     *rand.Rand
	words *rand.Zipf
	cjk   *rand.Zipf
	vocab []string
}

func newGenerator() *generator {
	r := rand.New(rand.NewPCG(1, 2))
	return &generator{r: r, vocab: vocabulary(),
		words: rand.NewZipf(r, 1.1, 1, vocabSize-1), cjk: rand.NewZipf(r, 1.2, 1, uint64(len(cjkWords)-1))}
}

func (g *generator) text() string {
	var parts []string
	for range 4 + g.r.IntN(12) {
		parts = append(parts, g.vocab[g.words.Uint64()])
	}
	if g.r.IntN(3) == 0 {
		var b strings.Builder
		for range 2 + g.r.IntN(5) {
			b.WriteString(cjkWords[g.cjk.Uint64()])
		}
		parts = append(parts, b.String())
	}
	return strings.Join(parts, " ")
}

func open(engine, dir string) (search.Engine, error) {
	switch engine {
	case "bleve":
		return bleveindex.Open(filepath.Join(dir, "search"), bleveindex.Options{})
	}
	return nil, fmt.Errorf("unknown engine %q", engine)
}

func run(engine string, messages, convs, scope, runs int, dir string) error {
	ctx := context.Background()
	if dir == "" {
		tmp, err := os.MkdirTemp("", "searchbench-")
		if err != nil {
			return err
		}
		defer os.RemoveAll(tmp)
		dir = tmp
	}
	e, err := open(engine, dir)
	if err != nil {
		return err
	}
	defer e.Close()

	g := newGenerator()
	base := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC).UnixMilli()
	seqs := make([]int64, convs)
	senders := []string{"alice", "bob", "carol", "dave", "erin", "frank"}
	start := time.Now()
	batch := make([]search.Change, 0, 5000)
	for i := range messages {
		c := g.r.IntN(convs)
		seqs[c]++
		ct := int32(101)
		if g.r.IntN(10) == 0 {
			ct = 102
		}
		d := search.Doc{Key: search.Key{ConversationID: fmt.Sprintf("sg_g%05d", c), Seq: seqs[c]},
			SenderID: senders[g.r.IntN(len(senders))], ContentType: ct, SendTime: base + int64(i)*1000, Text: g.text()}
		batch = append(batch, search.Change{Put: &d})
		if len(batch) == cap(batch) || i == messages-1 {
			if err := e.Apply(ctx, batch); err != nil {
				return err
			}
			batch = batch[:0]
		}
		if (i+1)%100_000 == 0 {
			fmt.Fprintf(os.Stderr, "indexed %d (%.0f/s)\n", i+1, float64(i+1)/time.Since(start).Seconds())
		}
	}
	took := time.Since(start)
	fmt.Printf("engine %s: indexed %d messages over %d conversations in %s: %.0f messages/s\n",
		engine, messages, convs, took.Round(time.Millisecond), float64(messages)/took.Seconds())
	if size, err := dirSize(dir); err == nil {
		fmt.Printf("index size on disk: %.1f MB\n", float64(size)/1e6)
	}

	var scopes []search.Scope
	for _, c := range g.r.Perm(convs)[:min(scope, convs)] {
		scopes = append(scopes, search.Scope{ConversationID: fmt.Sprintf("sg_g%05d", c)})
	}
	common, rare := g.vocab[0], g.vocab[vocabSize/2]
	mid := base + int64(messages/2)*1000
	kinds := []struct {
		name string
		req  search.Request
	}{
		{"common word", search.Request{Text: common}},
		{"rare word", search.Request{Text: rare}},
		{"CJK substring", search.Request{Text: "北京"}},
		{"two words", search.Request{Text: common + " " + g.vocab[1]}},
		{"common + sender", search.Request{Text: common, SenderID: "bob"}},
		{"common + content type", search.Request{Text: common, ContentTypes: []int32{102}}},
		{"common + sent after", search.Request{Text: common, SentAfter: mid}},
	}
	fmt.Printf("queries for a user in %d conversations, %d runs each (first 20):\n", len(scopes), runs)
	for _, k := range kinds {
		req := k.req
		req.Viewer, req.Scopes, req.First = "zed", scopes, 20
		var ds []time.Duration
		var res search.Result
		for range runs {
			t := time.Now()
			if res, err = e.Search(ctx, req); err != nil {
				return err
			}
			ds = append(ds, time.Since(t))
		}
		slices.Sort(ds)
		pc := func(p int) time.Duration { return ds[min(len(ds)-1, len(ds)*p/100)].Round(10 * time.Microsecond) }
		fmt.Printf("  %-22s p50 %8s  p95 %8s  p99 %8s   count %d (exact %v)\n", k.name, pc(50), pc(95), pc(99), res.Count, res.CountIsExact)
	}
	return nil
}

func dirSize(dir string) (int64, error) {
	var n int64
	err := filepath.WalkDir(dir, func(_ string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			if info, err := d.Info(); err == nil {
				n += info.Size()
			}
		}
		return err
	})
	return n, err
}
