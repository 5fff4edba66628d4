package im

import "testing"

func TestSearchText(t *testing.T) {
	for _, c := range []struct{ content, want string }{
		{"plain words 北京", "plain words 北京"},
		{`{"content":"hello 北京"}`, "hello 北京"},
		{`{"text":"@bob look","atUserList":["bob"]}`, "@bob look"},
		{`{"text":"reply","quoteMessage":{"content":"{}","textElem":{"content":"quoted"}}}`, "reply\nquoted"},
		{`{"fileName":"report.pdf","url":"http://x"}`, "report.pdf"},
		{"{not json", "{not json"},
	} {
		if got := SearchText(&Message{Content: c.content}); got != c.want {
			t.Errorf("SearchText(%q) = %q, want %q", c.content, got, c.want)
		}
	}
}
