package im

import (
	"encoding/json"
	"slices"
	"strings"
)

// searchTextFields are the fields of a JSON message content that hold what its reader reads:
// OpenIM's text ("content"), @-text and quote ("text"), file ("fileName"), card and link
// ("title", "description", "nickname").
var searchTextFields = []string{"content", "text", "fileName", "title", "description", "nickname"}

// SearchText is the text of a message a search looks in: the content itself when it is plain
// text (msggate's own sends), or, when it is a JSON object (OpenIM's clients), the strings of
// searchTextFields, nested objects included (a quote holds the quoted message).
func SearchText(m *Message) string {
	c := strings.TrimSpace(m.Content)
	if !strings.HasPrefix(c, "{") {
		return m.Content
	}
	var obj map[string]any
	if json.Unmarshal([]byte(c), &obj) != nil {
		return m.Content
	}
	var parts []string
	collectText(obj, &parts, 0)
	return strings.Join(parts, "\n")
}

func collectText(obj map[string]any, parts *[]string, depth int) {
	if depth > 4 {
		return
	}
	for _, f := range searchTextFields {
		s, ok := obj[f].(string)
		var inner map[string]any
		switch {
		case !ok || strings.TrimSpace(s) == "":
		case strings.HasPrefix(s, "{") && json.Unmarshal([]byte(s), &inner) == nil:
			collectText(inner, parts, depth+1) // content that is itself JSON
		default:
			*parts = append(*parts, s)
		}
	}
	keys := make([]string, 0, len(obj))
	for k, v := range obj {
		if _, ok := v.(map[string]any); ok {
			keys = append(keys, k)
		}
	}
	slices.Sort(keys)
	for _, k := range keys {
		collectText(obj[k].(map[string]any), parts, depth+1)
	}
}

// Searchable reports whether a slot's message may be found by a search at all: it is stored,
// neither revoked nor deleted for everyone.
func (s *Slot) Searchable() bool {
	return s != nil && s.Msg != nil && s.Revoke == nil && s.Msg.Status != DeletedMessageStatus
}
