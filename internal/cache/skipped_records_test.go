package cache_test

import (
	"bytes"
	"fmt"
	"strings"
	"testing"

	"github.com/msggate/msggate/internal/cache"
)

// Ensure the skipped records of a followed feed are kept newest first, no more than
// SkippedRecordsLen of them, each with a value of at most MaxSkippedValue bytes.
func TestSkippedRecordsAreBounded(t *testing.T) {
	eachTopology(t, func(t *testing.T, e *env) {
		big := bytes.Repeat([]byte{0xff}, cache.MaxSkippedValue+10)
		first := cache.SkippedRecord{Topic: "toPush", Partition: 2, Offset: 7, Key: "bob_eve:x", Reason: "refused",
			Error: strings.Repeat("e", 5000), Value: big}
		if err := e.cache.KeepSkippedRecord(e.ctx, first); err != nil {
			t.Fatal(err)
		}
		got, err := e.cache.SkippedRecords(e.ctx, 10)
		if err != nil {
			t.Fatal(err)
		}
		if len(got) != 1 {
			t.Fatalf("kept %d records, want 1", len(got))
		}
		r := got[0]
		if r.Topic != "toPush" || r.Partition != 2 || r.Offset != 7 || r.Key != "bob_eve:x" || r.Reason != "refused" || r.Time == 0 {
			t.Errorf("kept %+v, want the record's place, key, reason and time", r)
		}
		if !r.Truncated || !bytes.Equal(r.Value, big[:cache.MaxSkippedValue]) || len(r.Error) > 1024 {
			t.Errorf("kept a value of %d bytes (truncated %v) and an error of %d, want %d bytes, truncated, and at most 1024",
				len(r.Value), r.Truncated, len(r.Error), cache.MaxSkippedValue)
		}

		for i := range cache.SkippedRecordsLen {
			if err := e.cache.KeepSkippedRecord(e.ctx, cache.SkippedRecord{Topic: "toPush", Offset: int64(100 + i), Reason: "undecodable"}); err != nil {
				t.Fatal(err)
			}
		}
		got, err = e.cache.SkippedRecords(e.ctx, 2*cache.SkippedRecordsLen)
		if err != nil {
			t.Fatal(err)
		}
		if len(got) != cache.SkippedRecordsLen {
			t.Fatalf("kept %d records, want %d", len(got), cache.SkippedRecordsLen)
		}
		if newest, oldest := got[0].Offset, got[len(got)-1].Offset; newest != int64(100+cache.SkippedRecordsLen-1) || oldest != 100 {
			t.Errorf("kept offsets %d (newest) .. %d (oldest), want %s", newest, oldest, fmt.Sprint(100+cache.SkippedRecordsLen-1, " .. 100"))
		}
	})
}
