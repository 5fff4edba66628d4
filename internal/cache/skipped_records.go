package cache

import (
	"context"
	"encoding/json"
	"time"

	"github.com/msggate/msggate/internal/im"
)

// A follower of a store msggate does not own (OpenIM mode) reads that store's feed, and moves
// past a record it can never apply (undecodable, or naming what msggate's rules refuse) rather
// than stop every record behind it. What it moved past is kept here, newest first, for an
// operator to find: the place of the record in the feed, why, and the record itself.

// SkippedRecordsLen bounds the skipped records kept; older ones are dropped.
const SkippedRecordsLen = 1000

// MaxSkippedValue bounds the bytes of a skipped record's value kept; the rest is cut
// (Truncated). The feed still holds the whole record until its retention drops it.
const MaxSkippedValue = 16 << 10

// maxSkippedText bounds a skipped record's key and error text.
const maxSkippedText = 1024

// SkippedRecord is one record of the followed feed moved past without being applied.
type SkippedRecord struct {
	Time      int64  `json:"time"` // ms, when it was skipped
	Topic     string `json:"topic"`
	Partition int32  `json:"partition"`
	Offset    int64  `json:"offset"`
	Key       string `json:"key"`
	Reason    string `json:"reason"`
	Error     string `json:"error"`
	Value     []byte `json:"value"` // base64 in the stored JSON
	Truncated bool   `json:"truncated,omitempty"`
}

// KeepSkippedRecord keeps r (Time set to now when zero) at the head of the skipped records,
// dropping those beyond SkippedRecordsLen.
func (c *Cache) KeepSkippedRecord(ctx context.Context, r SkippedRecord) error {
	if r.Time == 0 {
		r.Time = time.Now().UnixMilli()
	}
	if len(r.Value) > MaxSkippedValue {
		r.Value, r.Truncated = r.Value[:MaxSkippedValue], true
	}
	r.Key, r.Error = clipText(r.Key), clipText(r.Error)
	data, err := json.Marshal(r)
	if err != nil {
		return &im.Error{Code: im.EINTERNAL, Message: "encode a skipped record", Cause: err}
	}
	key := c.skippedRecordsKey()
	pipe := c.rdb.TxPipeline()
	pipe.LPush(ctx, key, data)
	pipe.LTrim(ctx, key, 0, SkippedRecordsLen-1)
	_, err = pipe.Exec(ctx)
	return cacheError("keep skipped record", err)
}

// SkippedRecords returns up to n of the skipped records kept, newest first.
func (c *Cache) SkippedRecords(ctx context.Context, n int) ([]SkippedRecord, error) {
	if n <= 0 {
		return nil, nil
	}
	raw, err := c.rdb.LRange(ctx, c.skippedRecordsKey(), 0, int64(n-1)).Result()
	if err != nil {
		return nil, cacheError("read skipped records", err)
	}
	out := make([]SkippedRecord, 0, len(raw))
	for _, s := range raw {
		var r SkippedRecord
		if err := json.Unmarshal([]byte(s), &r); err != nil {
			return nil, &im.Error{Code: im.EINTERNAL, Message: "decode a skipped record", Cause: err}
		}
		out = append(out, r)
	}
	return out, nil
}

func clipText(s string) string {
	if len(s) <= maxSkippedText {
		return s
	}
	return s[:maxSkippedText]
}
