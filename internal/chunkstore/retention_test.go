package chunkstore_test

import (
	"fmt"
	"testing"

	"github.com/msggate/msggate/internal/chunkstore"
	"github.com/msggate/msggate/internal/im"
)

// Ensure a pass over the seq collection in small pages sees every conversation once, in
// conversation ID order, one find per page.
func TestListConversationSeqsPages(t *testing.T) {
	t.Parallel()
	e := open(t)
	want := []string{"sg_a", "sg_b", "si_alice_bob", "si_alice_carol", "si_bob_carol"}
	raised := map[string]chunkstore.StoredMax{}
	for i, c := range want {
		raised[c] = chunkstore.StoredMax{Seq: int64(i + 1), Time: 1000}
	}
	if err := e.store.RaiseMaxSeqs(e.ctx, raised); err != nil {
		t.Fatal(err)
	}
	e.cmds.Reset()
	var got []string
	after, pages := "", 0
	for {
		page, err := e.store.ListConversationSeqs(e.ctx, after, 2)
		if err != nil {
			t.Fatal(err)
		}
		pages++
		if len(page) > 2 {
			t.Fatalf("page of %d, want at most 2", len(page))
		}
		if len(page) == 0 {
			break
		}
		for _, d := range page {
			got = append(got, d.ConversationID)
			if d.MaxSeq != raised[d.ConversationID].Seq {
				t.Errorf("%s: max seq %d, want %d", d.ConversationID, d.MaxSeq, raised[d.ConversationID].Seq)
			}
		}
		after = page[len(page)-1].ConversationID
	}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("listed %v, want %v", got, want)
	}
	if n := e.cmds.Count(chunkstore.CollectionSeqs, "find"); n != pages {
		t.Errorf("%d finds for %d pages", n, pages)
	}
	// A limit below 1 still makes progress.
	if page, err := e.store.ListConversationSeqs(e.ctx, "", 0); err != nil || len(page) != 1 || page[0].ConversationID != "sg_a" {
		t.Fatalf("limit 0: %v, %v", page, err)
	}
}

// Ensure a chunk range comes back aligned with its indexes, absent chunks as nil, in one find.
func TestFindChunkRange(t *testing.T) {
	t.Parallel()
	e := open(t)
	allStored(t, e.write(t, conv, append(msgs(1, 2, "a"), msgs(201, 201, "a")...)))
	e.cmds.Reset()
	cs, err := e.store.FindChunkRange(e.ctx, conv, 0, 3)
	if err != nil {
		t.Fatal(err)
	}
	if n := e.cmds.Count(chunkstore.CollectionChunks, "find"); n != 4 {
		t.Errorf("%d finds, want 4 (one by _id per chunk on FerretDB)", n)
	}
	if len(cs) != 4 || cs[0] == nil || cs[1] != nil || cs[2] == nil || cs[3] != nil {
		t.Fatalf("range 0..3: %v", cs)
	}
	if cs[2].DocID != conv+":2" || cs[2].Slot(201).Msg == nil {
		t.Fatalf("chunk 2: %+v", cs[2])
	}
	if _, err := e.store.FindChunkRange(e.ctx, conv, 0, chunkstore.MaxChunkRange); err == nil {
		t.Fatal("a range longer than MaxChunkRange was read")
	}
}

// Ensure DeleteChunks removes exactly the named chunks, and DeleteChunkIfEmptyAbove deletes a
// chunk only while nothing is stored above the given seq: a message that lands in the upper
// slots first keeps the chunk.
func TestDeleteChunks(t *testing.T) {
	t.Parallel()
	e := open(t)
	allStored(t, e.write(t, conv, msgs(1, 250, "a")))
	n, err := e.store.DeleteChunks(e.ctx, []string{conv + ":0", conv + ":1", conv + ":7"})
	if err != nil || n != 2 {
		t.Fatalf("DeleteChunks = %d, %v; want 2", n, err)
	}
	if got := e.countChunks(t); got != 1 {
		t.Fatalf("%d chunks left, want 1", got)
	}
	if n, err := e.store.DeleteChunks(e.ctx, nil); err != nil || n != 0 {
		t.Fatalf("DeleteChunks(nil) = %d, %v", n, err)
	}

	// Chunk 2 holds 201..250; a sender then stores 251.
	allStored(t, e.write(t, conv, msgs(251, 251, "late")))
	if ok, err := e.store.DeleteChunkIfEmptyAbove(e.ctx, conv, 250); err != nil || ok {
		t.Fatalf("delete above 250 with 251 stored = %v, %v; want kept", ok, err)
	}
	sameMsg(t, "seq 251 after the refused delete", e.chunk(t, conv+":2").Slot(251), msgs(251, 251, "late")[0])
	if ok, err := e.store.DeleteChunkIfEmptyAbove(e.ctx, conv, 251); err != nil || !ok {
		t.Fatalf("delete above 251 = %v, %v; want deleted", ok, err)
	}
	if got := e.countChunks(t); got != 0 {
		t.Fatalf("%d chunks left, want 0", got)
	}
	if ok, err := e.store.DeleteChunkIfEmptyAbove(e.ctx, conv, 251); err != nil || ok {
		t.Fatalf("deleting an absent chunk = %v, %v", ok, err)
	}
	// The last slot of a chunk has nothing above it.
	allStored(t, e.write(t, conv, msgs(300, 300, "b")))
	if ok, err := e.store.DeleteChunkIfEmptyAbove(e.ctx, conv, 300); err != nil || !ok {
		t.Fatalf("delete above the last slot = %v, %v", ok, err)
	}
	if _, err := e.store.DeleteChunkIfEmptyAbove(e.ctx, conv, 0); im.ErrorCode(err) != im.EINVALID {
		t.Fatalf("seq 0: %v", err)
	}
}
