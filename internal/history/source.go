package history

import (
	"context"

	"github.com/msggate/msggate/internal/im"
)

// ChunkSource is where chunks come from.
//
// A source answers in im's terms whatever its store keeps: a message its store has removed
// for everyone comes back as a tombstone (a Message whose Status is im.DeletedMessageStatus),
// which the per-user view reads as DELETED.
type ChunkSource interface {
	// LoadChunks returns the chunks named by docIDs, aligned with them: nil where no chunk
	// exists. A store failure is an error, never a nil chunk.
	LoadChunks(ctx context.Context, docIDs []string) ([]*im.Chunk, error)
}

// ChunkFunc lets a function be a ChunkSource.
type ChunkFunc func(ctx context.Context, docIDs []string) ([]*im.Chunk, error)

// LoadChunks calls f.
func (f ChunkFunc) LoadChunks(ctx context.Context, docIDs []string) ([]*im.Chunk, error) {
	return f(ctx, docIDs)
}

// ChunkRef names a chunk and the chunks version of its conversation the reader holds
// (im.SeqState.ChunksVersion; "" when unknown).
type ChunkRef struct {
	DocID   string
	Version string
}

// VersionedChunkSource is a ChunkSource that may answer from copies it keeps, when the version
// a reader names proves them current.
type VersionedChunkSource interface {
	ChunkSource
	// LoadChunkRefs is LoadChunks, each chunk named with the version the reader read with its
	// state before asking. A copy read under the same version is current; without a version,
	// the chunk is read through.
	LoadChunkRefs(ctx context.Context, refs []ChunkRef) ([]*im.Chunk, error)
}

// RememberingChunkSource is a VersionedChunkSource that can say at once, without asking
// anything, which chunks it holds under the versions named.
type RememberingChunkSource interface {
	VersionedChunkSource
	// Remembered returns the chunks held under refs' versions, aligned with refs, and
	// whether it holds every one of them.
	Remembered(refs []ChunkRef) ([]*im.Chunk, bool)
}

// StateSource is where one viewer's seq state comes from.
type StateSource interface {
	// LoadState returns the viewer's seq state in the conversation.
	LoadState(ctx context.Context, conversationID string) (im.SeqState, error)
}
