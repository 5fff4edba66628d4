// Package docs holds no code: its tests check the repository's Markdown against the tree it
// describes. They live here, beside the pages they read, rather than in package main, so that
// checking a page compiles nothing but the standard library (package main pulls in the whole
// gateway, FerretDB included) and a reader looking for what keeps docs/ honest finds it in
// docs/.
package docs

import (
	"bufio"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"unicode"
)

// TestRelativeLinksResolve follows every relative link in every Markdown file of the
// repository (README.md, docs/, the RECORDS.md beside its package; not node_modules): the
// file must exist, and a #fragment must name a heading of the target as GitHub spells its
// anchor.
func TestRelativeLinksResolve(t *testing.T) {
	root := repoRoot(t)
	pages := markdownFiles(t, root)
	if len(pages) < 2 {
		t.Fatalf("found %d Markdown files under %s; expected README.md and docs/", len(pages), root)
	}
	anchors := map[string]map[string]bool{} // file -> its heading anchors, read once
	anchorsOf := func(path string) map[string]bool {
		if a, ok := anchors[path]; ok {
			return a
		}
		a := headingAnchors(t, path)
		anchors[path] = a
		return a
	}
	checked := 0
	for _, page := range pages {
		for _, l := range pageLinks(t, page) {
			target, fragment, _ := strings.Cut(l.target, "#")
			dest := page
			if target != "" {
				dest = filepath.Join(filepath.Dir(page), filepath.FromSlash(target))
			}
			where := fmt.Sprintf("%s:%d: link %q", rel(root, page), l.line, l.target)
			checked++
			info, err := os.Stat(dest)
			if err != nil {
				t.Errorf("%s: %s does not exist", where, rel(root, dest))
				continue
			}
			if fragment == "" {
				continue
			}
			if info.IsDir() || !strings.EqualFold(filepath.Ext(dest), ".md") {
				t.Errorf("%s: a #fragment on %s, which is not a Markdown page", where, rel(root, dest))
				continue
			}
			if !anchorsOf(dest)[fragment] {
				t.Errorf("%s: %s has no heading with anchor #%s", where, rel(root, dest), fragment)
			}
		}
	}
	if checked == 0 {
		t.Fatal("no relative links found; the link reader is broken")
	}
}

// TestGitHubAnchor pins the slug rules the link check relies on.
func TestGitHubAnchor(t *testing.T) {
	seen := map[string]int{}
	for _, c := range []struct{ heading, want string }{
		{"Read path", "read-path"},
		{"Errors and limits", "errors-and-limits"},
		{"GraphiQL's assets", "graphiqls-assets"},
		{"Jumping into history (issue 32)", "jumping-into-history-issue-32"},
		{"`seqAtTime` and [the page](x.md) **around** a seq", "seqattime-and-the-page-around-a-seq"},
		{"snake_case and a-dash: done.", "snake_case-and-a-dash-done"},
		{"Fan-out to a big group", "fan-out-to-a-big-group"},
		{"Overload", "overload"},
		{"Overload", "overload-1"},
		{"Overload", "overload-2"},
	} {
		if got := anchorFor(c.heading, seen); got != c.want {
			t.Errorf("anchor of %q = %q, want %q", c.heading, got, c.want)
		}
	}
}

type link struct {
	line   int
	target string
}

var (
	// [text](target) and ![alt](target), with an optional "title" after the target.
	inlineLink = regexp.MustCompile(`!?\[[^\]]*\]\(\s*<?([^)\s>]+)>?(?:\s+"[^"]*")?\s*\)`)
	// [label]: target
	referenceLink = regexp.MustCompile(`^\s{0,3}\[[^\]]+\]:\s*<?(\S+?)>?(?:\s+.*)?$`)
	codeSpan      = regexp.MustCompile("`+[^`]*`+")
	atxHeading    = regexp.MustCompile(`^\s{0,3}(#{1,6})\s+(.*?)\s*#*\s*$`)
	htmlID        = regexp.MustCompile(`<a\s+(?:name|id)="([^"]+)"`)
	scheme        = regexp.MustCompile(`^[a-zA-Z][a-zA-Z0-9+.-]*:`)
)

// pageLinks returns the relative links of a page, outside fenced code and code spans.
func pageLinks(t *testing.T, path string) []link {
	var links []link
	eachProseLine(t, path, func(n int, line string) {
		line = codeSpan.ReplaceAllString(line, "")
		var targets []string
		for _, m := range inlineLink.FindAllStringSubmatch(line, -1) {
			targets = append(targets, m[1])
		}
		if m := referenceLink.FindStringSubmatch(line); m != nil {
			targets = append(targets, m[1])
		}
		for _, target := range targets {
			if scheme.MatchString(target) || strings.HasPrefix(target, "//") {
				continue // absolute: http, https, mailto
			}
			links = append(links, link{line: n, target: target})
		}
	})
	return links
}

// headingAnchors returns the anchors GitHub gives the headings of a page (and any explicit
// <a name> or id), duplicates numbered in order.
func headingAnchors(t *testing.T, path string) map[string]bool {
	anchors := map[string]bool{}
	seen := map[string]int{}
	eachProseLine(t, path, func(_ int, line string) {
		if m := atxHeading.FindStringSubmatch(line); m != nil {
			anchors[anchorFor(m[2], seen)] = true
		}
		for _, m := range htmlID.FindAllStringSubmatch(line, -1) {
			anchors[m[1]] = true
		}
	})
	return anchors
}

var markdownLinkText = regexp.MustCompile(`!?\[([^\]]*)\]\([^)]*\)`)

// anchorFor spells a heading's anchor as GitHub does: the rendered text (code spans keep
// their content, links their text, emphasis marks go), lower-cased, every character but
// letters, digits, spaces, '-' and '_' dropped, spaces turned to '-'; the second heading with
// the same anchor gets "-1", the third "-2".
func anchorFor(heading string, seen map[string]int) string {
	text := markdownLinkText.ReplaceAllString(heading, "$1")
	text = strings.NewReplacer("`", "", "*", "").Replace(text)
	var b strings.Builder
	for _, r := range strings.ToLower(text) {
		switch {
		case unicode.IsLetter(r) || unicode.IsDigit(r) || r == '-' || r == '_':
			b.WriteRune(r)
		case r == ' ':
			b.WriteByte('-')
		}
	}
	slug := b.String()
	n := seen[slug]
	seen[slug] = n + 1
	if n > 0 {
		return fmt.Sprintf("%s-%d", slug, n)
	}
	return slug
}

// eachProseLine calls fn with every line of a Markdown file that is not inside a fenced code
// block (``` or ~~~), numbered from 1.
func eachProseLine(t *testing.T, path string, fn func(n int, line string)) {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 0, 64*1024), 4*1024*1024)
	fence := ""
	for n := 1; sc.Scan(); n++ {
		line := sc.Text()
		trimmed := strings.TrimLeft(line, " ")
		if fence != "" {
			if strings.HasPrefix(trimmed, fence) && strings.Trim(trimmed, fence[:1]+" ") == "" {
				fence = ""
			}
			continue
		}
		if strings.HasPrefix(trimmed, "```") || strings.HasPrefix(trimmed, "~~~") {
			fence = trimmed[:3]
			for _, r := range trimmed[3:] { // a longer opening fence needs as long a close
				if r != rune(fence[0]) {
					break
				}
				fence += fence[:1]
			}
			continue
		}
		fn(n, line)
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
}

// markdownFiles lists the repository's Markdown files, leaving out dependencies
// (node_modules) and hidden directories.
func markdownFiles(t *testing.T, root string) []string {
	t.Helper()
	var files []string
	err := filepath.WalkDir(root, func(path string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		name := d.Name()
		if d.IsDir() {
			if path != root && (name == "node_modules" || strings.HasPrefix(name, ".")) {
				return filepath.SkipDir
			}
			return nil
		}
		if strings.EqualFold(filepath.Ext(name), ".md") {
			files = append(files, path)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return files
}

// repoRoot is the directory holding go.mod, one up from this package.
func repoRoot(t *testing.T) string {
	t.Helper()
	root, err := filepath.Abs("..")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(root, "go.mod")); err != nil {
		t.Fatalf("repository root not found: %v", err)
	}
	return root
}

func rel(root, path string) string {
	if r, err := filepath.Rel(root, path); err == nil {
		return filepath.ToSlash(r)
	}
	return path
}
