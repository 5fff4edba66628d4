// Package bleveindex is the embedded search engine: a Bleve index in a directory of its
// own under the data directory, for a gateway that runs alone (the default). It is the only
// importer of Bleve.
//
// Text is indexed by Bleve's CJK analysis (see textAnalyzer): Unicode word segmentation, lower
// case, and overlapping character bigrams for CJK and Hangul runs, so that a query of two or more CJK characters
// is a phrase of bigrams and finds exactly the messages holding that substring, with no
// dictionary. Words in other scripts are whole lower-cased tokens.
package bleveindex

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
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
}

// Index is a Bleve index of messages. It is safe for concurrent use.
type Index struct {
	opts Options
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
	abs, err := filepath.Abs(dir)
	if err != nil {
		return nil, fmt.Errorf("bleveindex: open %s: %w", dir, err)
	}
	opened.Lock()
	defer opened.Unlock()
	if sh := opened.byDir[abs]; sh != nil {
		sh.refs++
		return &Index{opts: opts, idx: sh.idx, mu: sh.mu, dir: abs}, nil
	}
	// Another process's lock is waited for a bounded time, and said, rather than a start
	// that hangs.
	idx, err := bleve.OpenUsing(abs, map[string]any{"bolt_timeout": lockWait.String()})
	if errors.Is(err, bolterrors.ErrTimeout) {
		return nil, fmt.Errorf("bleveindex: %s is in use by another process (an embedded index serves one gateway; several share -search-postgres): %w", dir, ErrInUse)
	}
	created := false
	if errors.Is(err, bleve.ErrorIndexPathDoesNotExist) {
		idx, err = bleve.New(abs, indexMapping())
		created = true
	}
	if err != nil {
		return nil, fmt.Errorf("bleveindex: open %s: %w", dir, err)
	}
	sh := &sharedIndex{idx: idx, mu: new(sync.Mutex), refs: 1}
	if opened.byDir == nil {
		opened.byDir = map[string]*sharedIndex{}
	}
	opened.byDir[abs] = sh
	return &Index{opts: opts, idx: idx, mu: sh.mu, dir: abs, created: created}, nil
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
			if err := b.Index(id, f); err != nil {
				return err
			}
		}
		return x.idx.Batch(b)
	})
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

// Search answers one request.
func (x *Index) Search(ctx context.Context, req msearch.Request) (msearch.Result, error) {
	var out msearch.Result
	q := x.query(req)
	if q == nil || req.First <= 0 {
		out.CountIsExact = true
		if q == nil || req.First < 0 {
			return out, nil
		}
	}
	err := x.use(func() error {
		// One more hit than asked says whether there is a next page.
		sr := bleve.NewSearchRequestOptions(q, req.First+1, 0, false)
		sr.SortByCustom(search.SortOrder{
			&search.SortField{Field: fTime, Type: search.SortFieldAsNumber, Desc: true},
			&search.SortField{Field: fConv, Type: search.SortFieldAsString},
			&search.SortField{Field: fSeq, Type: search.SortFieldAsNumber, Desc: true},
		})
		if req.After != nil {
			sr.SearchAfter = []string{
				strconv.FormatInt(req.After.SendTime, 10),
				req.After.ConversationID,
				strconv.FormatInt(req.After.Seq, 10),
			}
		}
		sr.Score = bleve.ScoreNone // ordered by time, not relevance
		sr.Fields = []string{fSource}
		sr.Highlight = bleve.NewHighlightWithStyle(html.Name)
		sr.Highlight.AddField(fText)
		res, err := x.idx.SearchInContext(ctx, sr)
		if err != nil {
			return err
		}
		out.Count, out.CountIsExact = int(res.Total), int(res.Total) <= x.opts.CountLimit
		if !out.CountIsExact {
			out.Count = x.opts.CountLimit
		}
		for _, h := range res.Hits {
			if len(out.Hits) == req.First {
				out.HasMore = true
				break
			}
			d, err := sourceOf(h)
			if err != nil {
				return err
			}
			hit := msearch.Hit{Key: d.Key, SendTime: d.SendTime}
			if fr := h.Fragments[fText]; len(fr) > 0 {
				hit.Highlight = fr[0]
			}
			out.Hits = append(out.Hits, hit)
		}
		return nil
	})
	return out, err
}

// query builds the Bleve query of a request, nil when it can match nothing.
func (x *Index) query(req msearch.Request) query.Query {
	if len(req.Scopes) == 0 {
		return nil
	}
	var must []query.Query
	// Every part of the query text must match; a part is a phrase of its tokens, so a CJK
	// substring is its bigrams next to each other.
	parts := strings.Fields(req.Text)
	if len(parts) == 0 {
		return nil
	}
	for _, p := range parts {
		m := query.NewMatchPhraseQuery(p)
		m.SetField(fText)
		m.Analyzer = textAnalyzer
		must = append(must, m)
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
	return b
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
	return x.idx.Close()
}
