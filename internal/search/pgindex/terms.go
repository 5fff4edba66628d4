package pgindex

import (
	"slices"
	"strings"
	"unicode"
)

// maxWordBytes bounds a word put in the tsvector: PostgreSQL refuses lexemes of 2 KiB or more,
// and nobody types a word that long. A longer run is still found as a substring (CJK) or not
// at all (other scripts).
const maxWordBytes = 200

// isCJK reports whether r is written without spaces between words, so that a query in it is a
// substring, not a word: Chinese, Japanese, and Korean, whose words carry particles (서울에서,
// "in Seoul", holds 서울).
func isCJK(r rune) bool {
	return unicode.In(r, unicode.Han, unicode.Hiragana, unicode.Katakana, unicode.Hangul)
}

func isWordRune(r rune) bool { return unicode.IsLetter(r) || unicode.IsNumber(r) }

// runs cuts lower-cased s into runs of letters and numbers: everything else separates.
func runs(s string) []string {
	return strings.FieldsFunc(strings.ToLower(s), func(r rune) bool { return !isWordRune(r) })
}

// docWords is what a message's tsvector holds, once each: its words in lower case, where a
// word is a run of letters and numbers without CJK, and the bigrams (pairs of neighbouring
// characters) of its CJK runs. A run that mixes scripts (iphone手机) gives its non-CJK parts
// as words (iphone) and its CJK parts as bigrams (手机). The bigrams let the GIN index find
// the candidates of a CJK query (pg_trgm would need three characters); the text itself still
// decides (LIKE), so a query matches only where it is a substring. The terms are joined
// by spaces, which the generated column splits again.
func docWords(text string) string {
	seen := map[string]bool{}
	var out []string
	add := func(w string) {
		if len(w) <= maxWordBytes && !seen[w] {
			seen[w] = true
			out = append(out, w)
		}
	}
	for _, run := range runs(text) {
		for _, w := range strings.FieldsFunc(run, isCJK) {
			add(w)
		}
		for _, seg := range cjkSegments(run) {
			for _, b := range bigrams(seg) {
				add(b)
			}
		}
	}
	return strings.Join(out, " ")
}

// cjkSegments returns the runs of CJK characters in s.
func cjkSegments(s string) []string {
	return strings.FieldsFunc(s, func(r rune) bool { return !isCJK(r) })
}

// bigrams returns the pairs of neighbouring characters of s, none for a single character.
func bigrams(s string) []string {
	rs := []rune(s)
	var out []string
	for i := 0; i+1 < len(rs); i++ {
		out = append(out, string(rs[i:i+2]))
	}
	return out
}

// query is a user's search text as the index matches it: every word must be a word of the
// message, and every substring must occur in its lower-cased text.
type query struct {
	words      []string
	substrings []string
	// bigrams hold the first CJK bigram of each substring (none for a single character): a
	// message holding the substring holds it, so it finds the candidates through the
	// tsvector's index, and LIKE decides. One, not all: the planner takes a substring's
	// bigrams for independent and multiplies their frequencies, so that 服务 & 务器 looked
	// 80 times rarer than it is and the planner then skipped narrowing by the viewer's
	// conversations.
	bigrams []string
}

// parseQuery cuts text into runs of letters and numbers; a run holding a CJK character is a
// substring, any other run a word. Runs repeated in the query count once.
func parseQuery(text string) query {
	var q query
	seen := map[string]bool{}
	for _, run := range runs(text) {
		if seen[run] {
			continue
		}
		seen[run] = true
		if strings.ContainsFunc(run, isCJK) {
			q.substrings = append(q.substrings, run)
			for _, seg := range cjkSegments(run) {
				if bs := bigrams(seg); len(bs) > 0 {
					q.bigrams = append(q.bigrams, bs[0])
					break
				}
			}
		} else {
			q.words = append(q.words, run)
		}
	}
	return q
}

func (q query) empty() bool { return len(q.words) == 0 && len(q.substrings) == 0 }

// tsquery is the words and bigrams as a tsquery that needs all of them, or "" when there are
// none. They hold only letters and numbers, so quoting each is enough to keep tsquery syntax
// out.
func (q query) tsquery() string {
	var b strings.Builder
	for i, w := range append(slices.Clip(q.words), q.bigrams...) {
		if i > 0 {
			b.WriteString(" & ")
		}
		b.WriteByte('\'')
		b.WriteString(w)
		b.WriteByte('\'')
	}
	return b.String()
}

// likePattern is the LIKE pattern finding sub anywhere; sub holds only letters and numbers, so
// none of LIKE's special characters needs escaping.
func likePattern(sub string) string { return "%" + sub + "%" }

// lowerWithOffsets lower-cases s rune by rune, as strings.ToLower does, and maps each byte
// offset of the result back to the offset of the rune it came from in s, so that matches
// found in the lower-cased text can be marked in the original.
func lowerWithOffsets(s string) (string, []int) {
	var b strings.Builder
	offsets := make([]int, 0, len(s)+1)
	for i, r := range s {
		l := unicode.ToLower(r)
		n, _ := b.WriteRune(l)
		for range n {
			offsets = append(offsets, i)
		}
	}
	offsets = append(offsets, len(s))
	return b.String(), offsets
}
