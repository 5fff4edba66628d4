package searchtest

import (
	"context"
	"slices"
	"strings"
	"sync"
	"testing"
	"unicode"

	"github.com/msggate/msggate/internal/search"
)

// TestSuiteOnScan runs the suite on the plainest engine there is, a scan of
// a map, so a failing engine test points at the engine and not at the suite.
func TestSuiteOnScan(t *testing.T) {
	Run(t, func(t *testing.T) search.Engine { return &scan{docs: map[search.Key]search.Doc{}, limit: 300} })
}

type scan struct {
	mu    sync.Mutex
	docs  map[search.Key]search.Doc
	limit int
}

func (s *scan) CountLimit() int { return s.limit }
func (s *scan) Close() error    { return nil }

func (s *scan) Apply(_ context.Context, cs []search.Change) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, c := range cs {
		switch {
		case c.Put != nil:
			d := *c.Put
			d.HiddenFor = slices.Clone(d.HiddenFor)
			s.docs[d.Key] = d
		case c.Remove != nil:
			delete(s.docs, *c.Remove)
		case c.Hide != nil:
			if d, ok := s.docs[c.Hide.Key]; ok && !slices.Contains(d.HiddenFor, c.Hide.UserID) {
				d.HiddenFor = append(d.HiddenFor, c.Hide.UserID)
				s.docs[d.Key] = d
			}
		}
	}
	return nil
}

func words(s string) []string {
	return strings.FieldsFunc(strings.ToLower(s), func(r rune) bool { return !unicode.IsLetter(r) && !unicode.IsNumber(r) })
}

func cjk(w string) bool {
	for _, r := range w {
		if unicode.In(r, unicode.Han, unicode.Hiragana, unicode.Katakana, unicode.Hangul) {
			return true
		}
	}
	return false
}

func matches(text, query string) bool {
	tw := words(text)
	for _, q := range words(query) {
		if cjk(q) {
			if !strings.Contains(strings.ToLower(text), q) {
				return false
			}
		} else if !slices.Contains(tw, q) {
			return false
		}
	}
	return true
}

func (s *scan) Search(_ context.Context, req search.Request) (search.Result, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	var hits []search.Cursor
	for _, d := range s.docs {
		i := slices.IndexFunc(req.Scopes, func(sc search.Scope) bool { return sc.ConversationID == d.ConversationID })
		if i < 0 || d.Seq < req.Scopes[i].MinSeq || slices.Contains(d.HiddenFor, req.Viewer) ||
			(req.SenderID != "" && d.SenderID != req.SenderID) ||
			(len(req.ContentTypes) > 0 && !slices.Contains(req.ContentTypes, d.ContentType)) ||
			(req.SentAfter != 0 && d.SendTime <= req.SentAfter) ||
			(req.SentBefore != 0 && d.SendTime >= req.SentBefore) ||
			!matches(d.Text, req.Text) {
			continue
		}
		hits = append(hits, search.Cursor{SendTime: d.SendTime, Key: d.Key})
	}
	slices.SortFunc(hits, func(a, b search.Cursor) int {
		if search.Before(a, b) {
			return -1
		}
		return 1
	})
	var r search.Result
	r.Count, r.CountIsExact = len(hits), len(hits) <= s.limit
	if !r.CountIsExact {
		r.Count = s.limit
	}
	if req.After != nil {
		i, _ := slices.BinarySearchFunc(hits, *req.After, func(a, b search.Cursor) int {
			if search.Before(a, b) {
				return -1
			}
			if search.Before(b, a) {
				return 1
			}
			return 0
		})
		for i < len(hits) && !search.Before(*req.After, hits[i]) {
			i++
		}
		hits = hits[i:]
	}
	for _, h := range hits {
		if len(r.Hits) == req.First {
			r.HasMore = true
			break
		}
		r.Hits = append(r.Hits, search.Hit{Key: h.Key, SendTime: h.SendTime})
	}
	return r, nil
}
