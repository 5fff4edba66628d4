package model

import (
	"encoding/json"
	"testing"
)

// Ensure every string a store may hold, valid UTF-8 or not, is written as valid JSON that reads
// back as the same text (bytes that are not UTF-8 as U+FFFD, as encoding/json does).
func TestAppendStringIsValidJSON(t *testing.T) {
	for _, s := range []string{"", "plain", "say \"hi\"\n\t\\", "\x00\x01\x1f\x7f", "é 😀 中", "bad \xff\xfe end", "\xe2\x82", "<script>&"} {
		b := appendString(nil, s)
		if !json.Valid(b) {
			t.Errorf("%q: invalid JSON %s", s, b)
			continue
		}
		var back string
		if err := json.Unmarshal(b, &back); err != nil {
			t.Fatal(err)
		}
		want, _ := json.Marshal(s)
		var wantBack string
		_ = json.Unmarshal(want, &wantBack)
		if back != wantBack {
			t.Errorf("%q: reads back as %q, want %q", s, back, wantBack)
		}
	}
}
