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

// Ensure the eight-bytes-a-step scan stops at every byte that needs escaping or decoding,
// wherever it falls in a step: each byte value at each offset of a longer plain text is
// written as encoding/json reads it back.
func TestAppendStringLongText(t *testing.T) {
	plain := "the quick brown fox jumps over"
	for at := 0; at < 17; at++ {
		for c := 0; c < 256; c++ {
			s := plain[:at] + string([]byte{byte(c)}) + plain[at:]
			b := appendString(nil, s)
			var back, wantBack string
			if err := json.Unmarshal(b, &back); err != nil {
				t.Fatalf("byte %#x at %d: invalid JSON %s", c, at, b)
			}
			want, _ := json.Marshal(s)
			_ = json.Unmarshal(want, &wantBack)
			if back != wantBack {
				t.Fatalf("byte %#x at %d: reads back as %q, want %q", c, at, back, wantBack)
			}
		}
	}
	if n := plainPrefix(plain); n != 24 {
		t.Errorf("plainPrefix of %d plain bytes = %d, want the 24 of its whole steps", len(plain), n)
	}
}
