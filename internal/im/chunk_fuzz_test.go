package im

import (
	"encoding/json"
	"reflect"
	"testing"
)

// FuzzDecodeChunk: whatever bytes a chunk key holds (a damaged value, another writer's, an
// attacker's with access to Redis), reading them never panics and yields a miss or a chunk of
// the right document and shape that encodes and decodes to itself.
func FuzzDecodeChunk(f *testing.F) {
	full := NewChunk("si_a_b:0")
	full.Slots[0] = Slot{Msg: &Message{SendID: "a", RecvID: "b", Content: "hi", Seq: 1}, DelList: []string{"b"}}
	full.Slots[1] = Slot{Msg: &Message{SendID: "b", Seq: 2}, Revoke: &Revoke{UserID: "b", Time: 3}, IsRead: true}
	good, _ := json.Marshal(full)
	for _, b := range [][]byte{good, good[:len(good)/2], []byte(`{}`), []byte(`{"doc_id":"si_a_b:0","msgs":[]}`),
		[]byte(`{"doc_id":"si_a_b:0","msgs":null}`), []byte(`null`), []byte(`[]`), []byte("\xff\xfe"), []byte(`{"doc_id":"si_a_b:1"}`)} {
		f.Add(b)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		c := DecodeChunk(data, "si_a_b:0")
		if c == nil {
			return
		}
		if c.DocID != "si_a_b:0" || len(c.Slots) != ChunkSize {
			t.Fatalf("decoded %q as a chunk of %q with %d slots", data, c.DocID, len(c.Slots))
		}
		enc, err := json.Marshal(c)
		if err != nil {
			t.Fatalf("a decoded chunk does not encode: %v", err)
		}
		again := DecodeChunk(enc, "si_a_b:0")
		if again == nil || !reflect.DeepEqual(again, c) {
			t.Fatalf("a decoded chunk does not survive encoding:\n%+v\n%+v", c, again)
		}
	})
}
