package bleveindex

import (
	"context"
	"fmt"
	"slices"
	"sort"
	"time"

	"github.com/blevesearch/bleve/v2/numeric"
	"github.com/blevesearch/bleve/v2/search"
	"github.com/blevesearch/bleve/v2/search/query"
	index "github.com/blevesearch/bleve_index_api"

	msearch "github.com/msggate/msggate/internal/search"
)

// Search answers one request.
//
// Everything is read from one snapshot of the index, in one pass over the matches: the
// query (text terms, the viewer's scope, the filters) is built and run once, its matches'
// internal numbers kept; their number is the count, and the page is picked among them. So
// the scope, a disjunction of one term per conversation looked up in every segment, is built
// once per search, and the count, the page and its cursor all see the same documents.
//
// Sorting is what costs: the send time of a match is in its doc values, and reading them
// decompresses a chunk of them, while a viewer's matches are spread over the whole index. So
// the page is looked for among the newest matches first: the matches inside a window of send
// times below the newest possible hit (a range of the time field's terms, which needs no doc
// values) are the only ones whose time is read, and the window is widened until it holds a
// full page (then the page is exactly the newest hits after the cursor: every match outside
// the window is older than every match in it) or covers everything.
func (x *Index) Search(ctx context.Context, req msearch.Request) (msearch.Result, error) {
	var out msearch.Result
	q, phrases := x.query(req)
	if q == nil || req.First <= 0 {
		out.CountIsExact = true
		if q == nil || req.First < 0 {
			return out, nil
		}
	}
	err := x.use(func() error {
		ai, err := x.idx.Advanced()
		if err != nil {
			return err
		}
		r, err := ai.Reader()
		if err != nil {
			return err
		}
		defer r.Close()
		ids, err := x.matches(ctx, r, q, phrases)
		if err != nil {
			return err
		}
		total := len(ids)
		out.Count, out.CountIsExact = total, total <= x.opts.CountLimit
		if !out.CountIsExact {
			out.Count = x.opts.CountLimit
		}
		if total == 0 || req.First == 0 {
			return nil
		}
		hits, err := x.page(ctx, r, req, ids)
		if err != nil {
			return err
		}
		if len(hits) > req.First {
			hits, out.HasMore = hits[:req.First], true
		}
		out.Hits = hits
		return x.highlight(ctx, req, out.Hits)
	})
	return out, err
}

// matches returns the internal numbers of q's matches that hold every phrase, ascending.
func (x *Index) matches(ctx context.Context, r index.IndexReader, q query.Query, phrases []phrase) ([]uint64, error) {
	// Neither scores nor term vectors are asked for: without them Bleve merges the postings
	// of the scope's conversation terms into one bitmap and intersects it with the words'
	// (and a phrase's terms') instead of walking a heap of term searchers per match.
	s, err := q.Searcher(ctx, r, x.idx.Mapping(), search.SearcherOptions{Score: "none"})
	if err != nil {
		return nil, err
	}
	defer s.Close()
	var v *verifier
	if len(phrases) > 0 {
		if v, err = newVerifier(ctx, r, phrases); err != nil {
			return nil, err
		}
		defer v.close()
	}
	sctx := &search.SearchContext{DocumentMatchPool: search.NewDocumentMatchPool(s.DocumentMatchPoolSize(), 0)}
	var ids []uint64
	for n := 0; ; n++ {
		if n%1024 == 0 && ctx.Err() != nil {
			return nil, ctx.Err()
		}
		dm, err := s.Next(sctx)
		if err != nil {
			return nil, err
		}
		if dm == nil {
			return ids, nil
		}
		id := dm.IndexInternalID.Value()
		ok := true
		if v != nil {
			ok, err = v.holds(dm.IndexInternalID)
		}
		sctx.DocumentMatchPool.Put(dm)
		if err != nil {
			return nil, err
		}
		if ok {
			ids = append(ids, id)
		}
	}
}

// phrase is a part of the query of several tokens: its terms must be at these positions
// relative to one another (a CJK substring's bigrams, one after another).
type phrase struct {
	terms []string
	rel   []uint64
}

// verifier checks that a document holding every term of the phrases holds them at the
// phrases' positions, reading the positions of only the documents asked about (ascending),
// where a phrase query reads them for every document holding its terms in the whole index.
type verifier struct {
	phrases []phrase
	readers map[string]index.TermFieldReader
	pos     map[string][]uint64
}

func newVerifier(ctx context.Context, r index.IndexReader, phrases []phrase) (*verifier, error) {
	v := &verifier{phrases: phrases, readers: map[string]index.TermFieldReader{}, pos: map[string][]uint64{}}
	for _, p := range phrases {
		for _, t := range p.terms {
			if v.readers[t] != nil {
				continue
			}
			tfr, err := r.TermFieldReader(ctx, []byte(t), fText, true, false, true)
			if err != nil {
				v.close()
				return nil, err
			}
			v.readers[t] = tfr
		}
	}
	return v, nil
}

// holds reports whether document id holds every phrase. Calls are in ascending id order.
func (v *verifier) holds(id index.IndexInternalID) (bool, error) {
	clear(v.pos)
	for _, p := range v.phrases {
		for _, t := range p.terms {
			if _, ok := v.pos[t]; ok {
				continue
			}
			d, err := v.readers[t].Advance(id, nil)
			if err != nil {
				return false, err
			}
			var ps []uint64
			if d != nil && d.ID.Equals(id) {
				for _, tv := range d.Vectors {
					ps = append(ps, tv.Pos)
				}
			}
			v.pos[t] = ps
		}
		if !p.at(v.pos) {
			return false, nil
		}
	}
	return true, nil
}

// at reports whether the terms are somewhere at their relative positions, given each
// term's positions in a document.
func (p phrase) at(pos map[string][]uint64) bool {
next:
	for _, start := range pos[p.terms[0]] {
		for i := 1; i < len(p.terms); i++ {
			if !slices.Contains(pos[p.terms[i]], start+p.rel[i]) {
				continue next
			}
		}
		return true
	}
	return false
}

func (v *verifier) close() {
	for _, tfr := range v.readers {
		_ = tfr.Close()
	}
}

// Page windows: the first spans what the matches' density over the index's send times says
// a full page needs, twice over (at least firstWindow); each next one is wider by the factor
// the last one's hit density says a full page needs, twice over, within [minGrowth,
// maxGrowth]. Up to directScan matches have their send times read at once.
const (
	firstWindow = int64(time.Hour / time.Millisecond)
	minGrowth   = 4
	maxGrowth   = 64
	directScan  = 100
)

// page returns the first req.First+1 hits after req.After, newest first, among the matches
// ids (ascending).
func (x *Index) page(ctx context.Context, r index.IndexReader, req msearch.Request, ids []uint64) ([]msearch.Hit, error) {
	need := req.First + 1
	// hi is the newest send time a hit can have.
	hi := x.shared.newest.Load()
	if req.After != nil {
		hi = min(hi, req.After.SendTime)
	}
	if req.SentBefore != 0 {
		hi = min(hi, req.SentBefore-1)
	}
	oldest := x.shared.oldest.Load()
	dv, err := r.DocValueReader([]string{fTime})
	if err != nil {
		return nil, err
	}
	w := x.opts.FirstWindow
	if x.estimate {
		from := oldest
		if req.SentAfter != 0 {
			from = max(from, req.SentAfter)
		}
		w = max(w, (hi-from)/int64(len(ids))*int64(2*need))
	}
	for len(ids) > x.opts.DirectScan {
		lo := hi - w + 1
		if lo <= oldest || (req.SentAfter != 0 && lo <= req.SentAfter) || w > hi-oldest {
			break // the window holds every match
		}
		in, err := x.inWindow(ctx, r, ids, lo, hi)
		if err != nil {
			return nil, err
		}
		hits, err := newest(r, dv, req, in, need)
		if err != nil || len(hits) >= need {
			return hits, err
		}
		w *= min(max(int64(2*need/(len(hits)+1)), minGrowth), maxGrowth)
	}
	return newest(r, dv, req, ids, need)
}

// inWindow returns the ids (ascending) sent within [lo, hi].
func (x *Index) inWindow(ctx context.Context, r index.IndexReader, ids []uint64, lo, hi int64) ([]uint64, error) {
	loF, hiF, incl := float64(lo), float64(hi), true
	rq := query.NewNumericRangeInclusiveQuery(&loF, &hiF, &incl, &incl)
	rq.SetField(fTime)
	s, err := rq.Searcher(ctx, r, x.idx.Mapping(), search.SearcherOptions{Score: "none"})
	if err != nil {
		return nil, err
	}
	defer s.Close()
	sctx := &search.SearchContext{DocumentMatchPool: search.NewDocumentMatchPool(s.DocumentMatchPoolSize(), 0)}
	var in []uint64
	buf := make(index.IndexInternalID, 8)
	for i := 0; i < len(ids); {
		dm, err := s.Advance(sctx, index.NewIndexInternalID(buf, ids[i]))
		if err != nil {
			return nil, err
		}
		if dm == nil {
			break
		}
		at := dm.IndexInternalID.Value()
		sctx.DocumentMatchPool.Put(dm)
		if at == ids[i] {
			in = append(in, at)
			i++
			continue
		}
		// The next time in the window is at; the matches before it are outside.
		i += sort.Search(len(ids)-i, func(j int) bool { return ids[i+j] >= at })
	}
	return in, nil
}

// newest returns the first n hits after req.After among ids (ascending), newest first.
func newest(r index.IndexReader, dv index.DocValueReader, req msearch.Request, ids []uint64, n int) ([]msearch.Hit, error) {
	type timed struct {
		id uint64
		t  int64
	}
	ts := make([]timed, 0, len(ids))
	buf := make(index.IndexInternalID, 8)
	for _, id := range ids {
		t, ok, err := sendTime(dv, index.NewIndexInternalID(buf, id))
		if err != nil {
			return nil, err
		}
		if !ok {
			return nil, fmt.Errorf("document %d: no send time", id)
		}
		if req.After != nil && t > req.After.SendTime {
			continue
		}
		ts = append(ts, timed{id, t})
	}
	slices.SortFunc(ts, func(a, b timed) int {
		switch {
		case a.t > b.t:
			return -1
		case a.t < b.t:
			return 1
		}
		return 0
	})
	// Keys (conversation, seq) order the hits of one send time; they are read only for the
	// send times that make the page.
	var hits []msearch.Hit
	for i := 0; i < len(ts) && len(hits) < n; {
		j := i
		var group []msearch.Hit
		for ; j < len(ts) && ts[j].t == ts[i].t; j++ {
			ext, err := r.ExternalID(index.NewIndexInternalID(buf, ts[j].id))
			if err != nil {
				return nil, err
			}
			k, ok := parseDocID(ext)
			if !ok {
				return nil, fmt.Errorf("hit %q: no key", ext)
			}
			h := msearch.Hit{Key: k, SendTime: ts[j].t}
			if req.After != nil && !msearch.Before(*req.After, msearch.CursorOf(h)) {
				continue
			}
			group = append(group, h)
		}
		slices.SortFunc(group, func(a, b msearch.Hit) int {
			if msearch.Before(msearch.CursorOf(a), msearch.CursorOf(b)) {
				return -1
			}
			return 1
		})
		hits = append(hits, group...)
		i = j
	}
	if len(hits) > n {
		hits = hits[:n]
	}
	return hits, nil
}

// sendTime reads a document's send time from its doc values: the numeric field's term of
// full precision.
func sendTime(dv index.DocValueReader, id index.IndexInternalID) (int64, bool, error) {
	var t int64
	found := false
	err := dv.VisitDocValues(id, func(field string, term []byte) {
		if found || field != fTime {
			return
		}
		if valid, shift := numeric.ValidPrefixCodedTermBytes(term); valid && shift == 0 {
			if i, err := numeric.PrefixCoded(term).Int64(); err == nil {
				t, found = int64(numeric.Int64ToFloat64(i)), true
			}
		}
	})
	return t, found, err
}
