// Package bleveindex is the embedded search engine: a Bleve index in a directory of its
// own under the data directory, for a gateway that runs alone (the default). It is the only
// importer of Bleve.
//
// Text is indexed by Bleve's CJK analysis (see textAnalyzer): Unicode word segmentation, lower
// case, and overlapping character bigrams for CJK and Hangul runs, so that a query of two or
// more CJK characters is its bigrams one after another and finds exactly the messages holding
// that substring, with no dictionary. Words in other scripts are whole lower-cased tokens.
package bleveindex

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/blevesearch/bleve/v2"
	"github.com/blevesearch/bleve/v2/analysis/analyzer/keyword"
	"github.com/blevesearch/bleve/v2/mapping"
	"github.com/blevesearch/bleve/v2/search"
	"github.com/blevesearch/bleve/v2/search/highlight/highlighter/html"
	"github.com/blevesearch/bleve/v2/search/query"

	msearch "github.com/msggate/msggate/internal/search"
	bolterrors "go.etcd.io/bbolt/errors"
)

// Options configures an Index. The zero value is usable.
type Options struct {
	// CountLimit is the count up to which results are counted exactly. Default
	// search.CountLimit; tests lower it.
	CountLimit int
	// FirstWindow (ms) and DirectScan tune how a page is looked for (see Search); the zero
	// values are the defaults. Tests narrow them to page through windows on small data. A
	// FirstWindow given is the first window's span; by default it is the span the matches'
	// density says a full page needs, twice over, and at least an hour.
	FirstWindow int64
	DirectScan  int
	// Bulk is for loading many messages at once (a bench, a rebuild from nothing): Apply
	// returns once its changes are searchable, without waiting for them to be on disk, so
	// Bleve writes many batches' segments at once instead of one per batch. Sync (and Close)
	// wait for everything applied to be on disk. A gateway's live writes never use it: the
	// outbox drops an intent only once its change is durable.
	Bulk bool
}

// Index is a Bleve index of messages. It is safe for concurrent use.
type Index struct {
	opts Options
	// estimate says the first page window is estimated from the matches' density.
	estimate bool
	// mu serialises Apply: a Hide reads a document and writes it back. It is the open
	// index's, shared by every handle on it.
	mu  *sync.Mutex
	idx bleve.Index
	dir string
	// closed is set once Close ran: the index then answers ErrUnavailable.
	closeMu sync.RWMutex
	closed  bool
	// created is set when Open made a new index.
	created bool
	shared  *sharedIndex
}

// Field names in the index.
const (
	fConv   = "conv"
	fSeq    = "seq"
	fSender = "sender"
	fType   = "ctype"
	fTime   = "time"
	fText   = "text"
	fHidden = "hidden"
	// fSource keeps the document as given (stored, not indexed), so a Hide can write it back.
	fSource = "src"
)

// lockWait is how long Open waits for another holder of the index to let go.
const lockWait = 3 * time.Second

// ErrInUse is returned by Open when another process or gateway holds the index.
var ErrInUse = errors.New("search index in use")

// Open opens the index in dir, creating it when dir holds none. Opens of one directory within
// a process share one index (it is the same index); another process that holds it makes Open
// fail with ErrInUse.
func Open(dir string, opts Options) (*Index, error) {
	if opts.CountLimit <= 0 {
		opts.CountLimit = msearch.CountLimit
	}
	estimate := opts.FirstWindow <= 0
	if estimate {
		opts.FirstWindow = firstWindow
	}
	if opts.DirectScan <= 0 {
		opts.DirectScan = directScan
	}
	abs, err := filepath.Abs(dir)
	if err != nil {
		return nil, fmt.Errorf("bleveindex: open %s: %w", dir, err)
	}
	opened.Lock()
	defer opened.Unlock()
	if sh := opened.byDir[abs]; sh != nil {
		if sh.bulk != opts.Bulk {
			return nil, fmt.Errorf("bleveindex: %s is open in this process with bulk loading %v: %w", dir, sh.bulk, ErrInUse)
		}
		sh.refs++
		return &Index{opts: opts, estimate: estimate, idx: sh.idx, mu: sh.mu, dir: abs, shared: sh}, nil
	}
	// Another process's lock is waited for a bounded time, and said, rather than a start
	// that hangs.
	config := map[string]any{"bolt_timeout": lockWait.String()}
	if opts.Bulk {
		config["unsafe_batch"] = true
	}
	idx, err := bleve.OpenUsing(abs, config)
	if errors.Is(err, bolterrors.ErrTimeout) {
		return nil, fmt.Errorf("bleveindex: %s is in use by another process (an embedded index serves one gateway; several share -search-postgres): %w", dir, ErrInUse)
	}
	created := false
	if errors.Is(err, bleve.ErrorIndexPathDoesNotExist) {
		delete(config, "bolt_timeout")
		idx, err = bleve.NewUsing(abs, indexMapping(), bleve.Config.DefaultIndexType, bleve.Config.DefaultKVStore, config)
		created = true
	}
	if err != nil {
		return nil, fmt.Errorf("bleveindex: open %s: %w", dir, err)
	}
	sh := &sharedIndex{idx: idx, mu: new(sync.Mutex), refs: 1, bulk: opts.Bulk}
	sh.unsynced.cond = sync.NewCond(&sh.unsynced.mu)
	if err := sh.loadTimes(); err != nil {
		_ = idx.Close()
		return nil, fmt.Errorf("bleveindex: open %s: %w", dir, err)
	}
	if opened.byDir == nil {
		opened.byDir = map[string]*sharedIndex{}
	}
	opened.byDir[abs] = sh
	return &Index{opts: opts, estimate: estimate, idx: idx, mu: sh.mu, dir: abs, created: created, shared: sh}, nil
}

// opened holds the indexes open in this process, by directory: Bleve's lock file admits one
// opener, and a second gateway of the same process on the same data directory shares it.
var opened struct {
	sync.Mutex
	byDir map[string]*sharedIndex
}

type sharedIndex struct {
	idx  bleve.Index
	mu   *sync.Mutex
	refs int
	bulk bool
	// newest and oldest bound the send times of the indexed messages: no message is newer
	// than newest or older than oldest (removals leave them as they were).
	newest, oldest atomic.Int64
	// unsynced counts the bulk batches not yet on disk, and keeps the first error writing one.
	unsynced struct {
		mu   sync.Mutex
		cond *sync.Cond
		n    int
		err  error
	}
}

// loadTimes sets newest and oldest from the index.
func (sh *sharedIndex) loadTimes() error {
	sh.newest.Store(math.MinInt64)
	sh.oldest.Store(math.MaxInt64)
	for _, desc := range []bool{true, false} {
		sr := bleve.NewSearchRequestOptions(query.NewMatchAllQuery(), 1, 0, false)
		sr.SortByCustom(search.SortOrder{&search.SortField{Field: fTime, Type: search.SortFieldAsNumber, Desc: desc}})
		sr.Score = bleve.ScoreNone
		res, err := sh.idx.Search(sr)
		if err != nil {
			return err
		}
		if len(res.Hits) == 0 || len(res.Hits[0].DecodedSort) == 0 {
			return nil
		}
		t, err := strconv.ParseFloat(res.Hits[0].DecodedSort[0], 64)
		if err != nil {
			return err
		}
		sh.sawTime(int64(t))
	}
	return nil
}

// sawTime widens newest and oldest to take in t.
func (sh *sharedIndex) sawTime(t int64) {
	for n := sh.newest.Load(); t > n && !sh.newest.CompareAndSwap(n, t); n = sh.newest.Load() {
	}
	for o := sh.oldest.Load(); t < o && !sh.oldest.CompareAndSwap(o, t); o = sh.oldest.Load() {
	}
}

// track makes b counted until Bleve has written it to disk; the caller calls the returned
// function when Bleve refused the batch (it will never be written).
func (sh *sharedIndex) track(b *bleve.Batch) (refused func()) {
	u := &sh.unsynced
	u.mu.Lock()
	u.n++
	u.mu.Unlock()
	var once sync.Once
	done := func(err error) {
		once.Do(func() {
			u.mu.Lock()
			defer u.mu.Unlock()
			u.n--
			if err != nil && u.err == nil {
				u.err = err
			}
			u.cond.Broadcast()
		})
	}
	b.SetPersistedCallback(done)
	return func() { done(nil) }
}

// sync waits until every tracked batch is on disk.
func (sh *sharedIndex) sync() error {
	u := &sh.unsynced
	u.mu.Lock()
	defer u.mu.Unlock()
	for u.n > 0 {
		u.cond.Wait()
	}
	return u.err
}

// Created reports whether Open made a new, empty index rather than open one.
func (x *Index) Created() bool { return x.created }

// Remove deletes the index in dir (a rebuild from nothing).
func Remove(dir string) error { return os.RemoveAll(dir) }

func indexMapping() mapping.IndexMapping {
	kw := func() *mapping.FieldMapping {
		f := bleve.NewKeywordFieldMapping()
		f.Analyzer = keyword.Name
		f.Store = false
		f.IncludeInAll = false
		return f
	}
	num := func() *mapping.FieldMapping {
		f := bleve.NewNumericFieldMapping()
		f.Store = false
		f.IncludeInAll = false
		return f
	}
	text := bleve.NewTextFieldMapping()
	text.Analyzer = textAnalyzer
	text.Store = true // the highlighter reads it
	text.IncludeTermVectors = true
	text.IncludeInAll = false
	text.DocValues = false
	src := bleve.NewTextFieldMapping()
	src.Index = false
	src.Store = true
	src.IncludeInAll = false
	src.DocValues = false

	doc := bleve.NewDocumentStaticMapping()
	doc.AddFieldMappingsAt(fConv, kw())
	doc.AddFieldMappingsAt(fSeq, num())
	doc.AddFieldMappingsAt(fSender, kw())
	doc.AddFieldMappingsAt(fType, kw())
	doc.AddFieldMappingsAt(fTime, num())
	doc.AddFieldMappingsAt(fHidden, kw())
	doc.AddFieldMappingsAt(fText, text)
	doc.AddFieldMappingsAt(fSource, src)

	m := bleve.NewIndexMapping()
	if err := addTextAnalyzer(m); err != nil {
		panic(err) // a constant definition: it fails in every test or never
	}
	m.DefaultMapping = doc
	m.DefaultAnalyzer = keyword.Name
	m.StoreDynamic = false
	m.IndexDynamic = false
	m.DocValuesDynamic = false
	return m
}

// docID names a message in the index. Conversation IDs hold no control characters.
func docID(k msearch.Key) string { return k.ConversationID + "\x1f" + strconv.FormatInt(k.Seq, 10) }

func parseDocID(id string) (msearch.Key, bool) {
	conv, seq, ok := strings.Cut(id, "\x1f")
	if !ok {
		return msearch.Key{}, false
	}
	n, err := strconv.ParseInt(seq, 10, 64)
	return msearch.Key{ConversationID: conv, Seq: n}, err == nil
}

// fields is what Bleve indexes of a document.
func fields(d *msearch.Doc) (map[string]any, error) {
	src, err := json.Marshal(d)
	if err != nil {
		return nil, err
	}
	hidden := d.HiddenFor
	if hidden == nil {
		hidden = []string{}
	}
	return map[string]any{
		fConv:   d.ConversationID,
		fSeq:    float64(d.Seq),
		fSender: d.SenderID,
		fType:   strconv.FormatInt(int64(d.ContentType), 10),
		fTime:   float64(d.SendTime),
		fText:   d.Text,
		fHidden: hidden,
		fSource: string(src),
	}, nil
}

// CountLimit is the count up to which results are counted exactly.
func (x *Index) CountLimit() int { return x.opts.CountLimit }

// use runs f unless the index is closed.
func (x *Index) use(f func() error) error {
	x.closeMu.RLock()
	defer x.closeMu.RUnlock()
	if x.closed {
		return fmt.Errorf("bleveindex: closed: %w", msearch.ErrUnavailable)
	}
	if err := f(); err != nil {
		return fmt.Errorf("bleveindex: %w: %w", msearch.ErrUnavailable, err)
	}
	return nil
}

// Apply applies changes in order, as one Bleve batch.
func (x *Index) Apply(ctx context.Context, changes []msearch.Change) error {
	if len(changes) == 0 {
		return nil
	}
	x.mu.Lock()
	defer x.mu.Unlock()
	return x.use(func() error {
		// pending holds what this batch leaves of each document it touches (nil: removed),
		// so a Hide after a Put in the same batch sees the Put.
		pending := map[string]*msearch.Doc{}
		var order []string
		touch := func(id string, d *msearch.Doc) {
			if _, ok := pending[id]; !ok {
				order = append(order, id)
			}
			pending[id] = d
		}
		for _, c := range changes {
			switch {
			case c.Put != nil:
				d := *c.Put
				d.HiddenFor = append([]string(nil), d.HiddenFor...)
				touch(docID(d.Key), &d)
			case c.Remove != nil:
				touch(docID(*c.Remove), nil)
			case c.Hide != nil:
				id := docID(c.Hide.Key)
				d, ok := pending[id]
				if !ok {
					var err error
					if d, err = x.load(ctx, id); err != nil {
						return err
					}
					if d == nil {
						continue // not indexed: nothing to hide
					}
				}
				if d == nil {
					continue
				}
				if !contains(d.HiddenFor, c.Hide.UserID) {
					d.HiddenFor = append(d.HiddenFor, c.Hide.UserID)
				}
				touch(id, d)
			}
		}
		b := x.idx.NewBatch()
		for _, id := range order {
			d := pending[id]
			if d == nil {
				b.Delete(id)
				continue
			}
			f, err := fields(d)
			if err != nil {
				return err
			}
			// Before the batch is searchable, so that a search never sees a message outside
			// the bounds.
			x.shared.sawTime(d.SendTime)
			if err := b.Index(id, f); err != nil {
				return err
			}
		}
		if !x.opts.Bulk {
			return x.idx.Batch(b)
		}
		refused := x.shared.track(b)
		err := x.idx.Batch(b)
		if err != nil {
			refused()
		}
		return err
	})
}

// Sync waits until every change applied so far is on disk (with Options.Bulk; without it,
// Apply already waited).
func (x *Index) Sync() error {
	return x.use(x.shared.sync)
}

func contains(s []string, v string) bool {
	for _, x := range s {
		if x == v {
			return true
		}
	}
	return false
}

// load returns the indexed document id, or nil when the index holds none.
func (x *Index) load(ctx context.Context, id string) (*msearch.Doc, error) {
	req := bleve.NewSearchRequestOptions(query.NewDocIDQuery([]string{id}), 1, 0, false)
	req.Fields = []string{fSource}
	res, err := x.idx.SearchInContext(ctx, req)
	if err != nil {
		return nil, err
	}
	if len(res.Hits) == 0 {
		return nil, nil
	}
	return sourceOf(res.Hits[0])
}

func sourceOf(h *search.DocumentMatch) (*msearch.Doc, error) {
	s, _ := h.Fields[fSource].(string)
	var d msearch.Doc
	if err := json.Unmarshal([]byte(s), &d); err != nil {
		return nil, fmt.Errorf("document %q: %w", h.ID, err)
	}
	return &d, nil
}

// highlight fills the hits' highlights: the text query again, narrowed to the page's
// documents, with term vectors for the highlighter. A hit gone since the first query keeps
// none.
func (x *Index) highlight(ctx context.Context, req msearch.Request, hits []msearch.Hit) error {
	if len(hits) == 0 {
		return nil
	}
	ids := make([]string, len(hits))
	for i, h := range hits {
		ids[i] = docID(h.Key)
	}
	q := query.NewConjunctionQuery(append(x.textQueries(req.Text), query.NewDocIDQuery(ids)))
	sr := bleve.NewSearchRequestOptions(q, len(ids), 0, false)
	sr.Score = bleve.ScoreNone
	sr.Highlight = bleve.NewHighlightWithStyle(html.Name)
	sr.Highlight.AddField(fText)
	res, err := x.idx.SearchInContext(ctx, sr)
	if err != nil {
		return err
	}
	byID := make(map[string]string, len(res.Hits))
	for _, h := range res.Hits {
		if fr := h.Fragments[fText]; len(fr) > 0 {
			byID[h.ID] = fr[0]
		}
	}
	for i := range hits {
		hits[i].Highlight = byID[ids[i]]
	}
	return nil
}

// textQueries are the queries of the words of text: every part must match, and a part is a
// phrase of its tokens, so a CJK substring is its bigrams next to each other. A part of one
// token (a word, two CJK characters) is a term query: a phrase would read every match's
// token positions, and a term lets Bleve intersect postings as bitmaps.
func (x *Index) textQueries(text string) []query.Query {
	an := x.idx.Mapping().AnalyzerNamed(textAnalyzer)
	var qs []query.Query
	for _, p := range strings.Fields(text) {
		if an != nil {
			if toks := an.Analyze([]byte(p)); len(toks) == 1 {
				qs = append(qs, term(fText, string(toks[0].Term)))
				continue
			}
		}
		m := query.NewMatchPhraseQuery(p)
		m.SetField(fText)
		m.Analyzer = textAnalyzer
		qs = append(qs, m)
	}
	return qs
}

// matchQueries are the queries of the words of text for finding matches, with the phrases
// the matches must also hold: a part of several tokens (a CJK substring of three or more
// characters) is its terms, which Bleve intersects as bitmaps, and a phrase whose positions
// are checked on those matches only (a phrase query reads the positions of every document in
// the index holding its terms). ok is false when a part has no token: nothing matches it.
func (x *Index) matchQueries(text string) (qs []query.Query, phrases []phrase, ok bool) {
	an := x.idx.Mapping().AnalyzerNamed(textAnalyzer)
	for _, p := range strings.Fields(text) {
		if an == nil {
			m := query.NewMatchPhraseQuery(p)
			m.SetField(fText)
			m.Analyzer = textAnalyzer
			qs = append(qs, m)
			continue
		}
		toks := an.Analyze([]byte(p))
		if len(toks) == 0 {
			return nil, nil, false
		}
		ph := phrase{}
		seen := map[string]bool{}
		for i, t := range toks {
			if i > 0 && t.Position <= toks[i-1].Position {
				// Tokens sharing a position are alternatives, which a conjunction of
				// terms would not express; the analyzer makes none today.
				m := query.NewMatchPhraseQuery(p)
				m.SetField(fText)
				m.Analyzer = textAnalyzer
				qs = append(qs, m)
				ph = phrase{}
				break
			}
			ph.terms = append(ph.terms, string(t.Term))
			ph.rel = append(ph.rel, uint64(t.Position-toks[0].Position))
			if !seen[string(t.Term)] {
				seen[string(t.Term)] = true
				qs = append(qs, term(fText, string(t.Term)))
			}
		}
		if len(ph.terms) > 1 {
			phrases = append(phrases, ph)
		}
	}
	return qs, phrases, len(qs) > 0
}

// query builds the Bleve query of a request and the phrases its matches must hold, nil when
// it can match nothing.
func (x *Index) query(req msearch.Request) (query.Query, []phrase) {
	if len(req.Scopes) == 0 {
		return nil, nil
	}
	must, phrases, ok := x.matchQueries(req.Text)
	if !ok {
		return nil, nil
	}
	// Scopes: whole conversations by one disjunction of terms, the rest from their min seq.
	var whole []string
	var scoped []query.Query
	for _, s := range req.Scopes {
		if s.MinSeq <= 1 {
			whole = append(whole, s.ConversationID)
			continue
		}
		scoped = append(scoped, query.NewConjunctionQuery([]query.Query{term(fConv, s.ConversationID), numRange(float64(s.MinSeq), true, 0, false, true)}))
	}
	if len(whole) > 0 {
		scoped = append(scoped, terms(fConv, whole))
	}
	must = append(must, query.NewDisjunctionQuery(scoped))
	if req.SenderID != "" {
		must = append(must, term(fSender, req.SenderID))
	}
	if len(req.ContentTypes) > 0 {
		ts := make([]string, len(req.ContentTypes))
		for i, t := range req.ContentTypes {
			ts[i] = strconv.FormatInt(int64(t), 10)
		}
		must = append(must, terms(fType, ts))
	}
	if req.SentAfter != 0 || req.SentBefore != 0 {
		r := query.NewNumericRangeInclusiveQuery(nil, nil, nil, nil)
		f := false
		if req.SentAfter != 0 {
			v := float64(req.SentAfter)
			r.Min, r.InclusiveMin = &v, &f
		}
		if req.SentBefore != 0 {
			v := float64(req.SentBefore)
			r.Max, r.InclusiveMax = &v, &f
		}
		r.SetField(fTime)
		must = append(must, r)
	}
	b := query.NewBooleanQuery(must, nil, nil)
	if req.Viewer != "" {
		b.AddMustNot(term(fHidden, req.Viewer))
	}
	return b, phrases
}

func term(field, v string) query.Query {
	t := query.NewTermQuery(v)
	t.SetField(field)
	return t
}

func terms(field string, vs []string) query.Query {
	qs := make([]query.Query, len(vs))
	for i, v := range vs {
		qs[i] = term(field, v)
	}
	return query.NewDisjunctionQuery(qs)
}

// numRange is a seq range: from min (inclusive or not), to max when hasMax.
func numRange(min float64, minIncl bool, max float64, maxIncl, noMax bool) query.Query {
	var r *query.NumericRangeQuery
	if noMax {
		r = query.NewNumericRangeInclusiveQuery(&min, nil, &minIncl, nil)
	} else {
		r = query.NewNumericRangeInclusiveQuery(&min, &max, &minIncl, &maxIncl)
	}
	r.SetField(fSeq)
	return r
}

// Close closes the index; later calls answer ErrUnavailable.
func (x *Index) Close() error {
	x.closeMu.Lock()
	defer x.closeMu.Unlock()
	if x.closed {
		return nil
	}
	x.closed = true
	opened.Lock()
	defer opened.Unlock()
	sh := opened.byDir[x.dir]
	if sh == nil || sh.idx != x.idx {
		return nil
	}
	if sh.refs--; sh.refs > 0 {
		return nil
	}
	delete(opened.byDir, x.dir)
	return errors.Join(sh.sync(), x.idx.Close())
}
