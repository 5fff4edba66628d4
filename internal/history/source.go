package history

import (
	"context"

	"github.com/msggate/msggate/internal/im"
)

// ChunkRef names a chunk and the chunks version of its conversation the reader holds
// (im.SeqState.ChunksVersion; "" when unknown).
type ChunkRef struct {
	DocID   string
	Version string
}

// ChunkSource is where the read path's chunks come from: the one interface every chunk
// source of the read path implements (Chunks over a store, ChunkFunc, the GraphQL layer's
// per-request loaders), so that a reader never asks what kind of source it holds.
//
// A source answers in im's terms whatever its store keeps: a message its store has removed
// for everyone comes back as a tombstone (a Message whose Status is im.DeletedMessageStatus),
// which the per-user view reads as DELETED.
type ChunkSource interface {
	// LoadChunks returns the chunks refs name, aligned with them: nil where no chunk exists.
	// A store failure is an error, never a nil chunk. Each ref carries the version the reader
	// read with its state before asking: a source that keeps copies may serve one read under
	// the same version; one that keeps none, or a ref without a version, reads through.
	LoadChunks(ctx context.Context, refs []ChunkRef) ([]*im.Chunk, error)
	// Remembered returns the chunks the source holds in process under refs' versions,
	// aligned with refs, and true only when it holds every one of them: then they cost no
	// round trip, and no batch is worth waiting for. A source that keeps nothing in process
	// answers nil, false.
	Remembered(refs []ChunkRef) ([]*im.Chunk, bool)
}

// ChunkFinder reads chunks from a store, aligned with docIDs, nil where none exists; a store
// failure is an error. msggate's MongoDB (chunkstore.Store), the same behind its Redis tier
// (cache.ReadThrough) and an OpenIM deployment's (openim.Store) are ChunkFinders; Chunks makes
// one a ChunkSource. cache.ReadThrough declares the same contract under the same name for what
// it reads through: neither package may import the other.
type ChunkFinder interface {
	FindChunks(ctx context.Context, docIDs []string) ([]*im.Chunk, error)
}

// ChunkFunc lets a function that reads chunks by doc ID be a ChunkSource that keeps nothing:
// versions are not looked at and nothing is remembered.
type ChunkFunc func(ctx context.Context, docIDs []string) ([]*im.Chunk, error)

// LoadChunks calls f with refs' doc IDs.
func (f ChunkFunc) LoadChunks(ctx context.Context, refs []ChunkRef) ([]*im.Chunk, error) {
	return f(ctx, docIDsOf(refs))
}

// Remembered answers nil, false: a ChunkFunc keeps nothing.
func (ChunkFunc) Remembered([]ChunkRef) ([]*im.Chunk, bool) { return nil, false }

func docIDsOf(refs []ChunkRef) []string {
	out := make([]string, len(refs))
	for i, r := range refs {
		out[i] = r.DocID
	}
	return out
}

// StateLoader is where one viewer's seq state comes from.
type StateLoader interface {
	// LoadState returns the viewer's seq state in the conversation.
	LoadState(ctx context.Context, conversationID string) (im.SeqState, error)
}
