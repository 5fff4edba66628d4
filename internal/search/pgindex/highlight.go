package pgindex

import (
	"html"
	"slices"
	"strings"
	"unicode/utf8"
)

// Highlights are HTML, as the embedded engine's are: the text escaped, each match in <mark>.
const (
	markOpen  = "<mark>"
	markClose = "</mark>"
	// fragmentBytes is about how much text a highlight shows; a longer message is cut around
	// its first match, with an ellipsis where it was cut.
	fragmentBytes = 300
	// leadRunes is how much text before the first match a cut fragment keeps, for context.
	leadRunes = 40
)

// highlight returns text, or a fragment of it around the first match, with the query's words
// and substrings marked; "" when nothing in text matches (a query of filters only). Matching
// is done here, not by ts_headline, so that CJK substrings are marked too and both kinds are
// marked by one rule, the one the index matched by.
func highlight(text string, q query) string {
	spans := matchSpans(text, q)
	if len(spans) == 0 {
		return ""
	}
	start, end := 0, len(text)
	if len(text) > fragmentBytes {
		start = spans[0][0]
		for n := 0; n < leadRunes && start > 0; n++ {
			_, size := utf8.DecodeLastRuneInString(text[:start])
			start -= size
		}
		end = min(start+fragmentBytes, len(text))
		for end < len(text) && !utf8.RuneStart(text[end]) {
			end--
		}
		// Never cut a match in two.
		for _, s := range spans {
			if s[0] < end && s[1] > end {
				end = s[1]
			}
		}
	}
	var b strings.Builder
	if start > 0 {
		b.WriteString("…")
	}
	pos := start
	for _, s := range spans {
		if s[1] <= start || s[0] >= end {
			continue
		}
		b.WriteString(html.EscapeString(text[pos:s[0]]))
		b.WriteString(markOpen)
		b.WriteString(html.EscapeString(text[s[0]:s[1]]))
		b.WriteString(markClose)
		pos = s[1]
	}
	b.WriteString(html.EscapeString(text[pos:end]))
	if end < len(text) {
		b.WriteString("…")
	}
	return b.String()
}

// matchSpans finds, as sorted and disjoint byte ranges of text, every word of text equal to
// a query word and every occurrence of a query substring, comparing in lower case.
func matchSpans(text string, q query) [][2]int {
	lower, offsets := lowerWithOffsets(text)
	var spans [][2]int
	add := func(from, to int) { spans = append(spans, [2]int{offsets[from], offsets[to]}) }

	if len(q.words) > 0 {
		// Words as docWords cuts them: letters and numbers without CJK.
		wordStart := -1
		for i, r := range lower + " " {
			if isWordRune(r) && !isCJK(r) {
				if wordStart < 0 {
					wordStart = i
				}
				continue
			}
			if wordStart >= 0 && slices.Contains(q.words, lower[wordStart:i]) {
				add(wordStart, i)
			}
			wordStart = -1
		}
	}
	for _, sub := range q.substrings {
		for from := 0; ; {
			i := strings.Index(lower[from:], sub)
			if i < 0 {
				break
			}
			add(from+i, from+i+len(sub))
			from += i + len(sub)
		}
	}

	slices.SortFunc(spans, func(a, b [2]int) int { return a[0] - b[0] })
	merged := spans[:0]
	for _, s := range spans {
		if n := len(merged); n > 0 && s[0] <= merged[n-1][1] {
			merged[n-1][1] = max(merged[n-1][1], s[1])
			continue
		}
		merged = append(merged, s)
	}
	return merged
}
