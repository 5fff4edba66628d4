package graph

import (
	"context"
	"net/http"
	gosync "sync"
	"time"

	"github.com/msggate/msggate/internal/history"
	"github.com/msggate/msggate/internal/im"
)

// Loaders are one request's dataloaders. Every resolver that needs chunks, seq state or a
// membership answer asks through them, so that all resolvers at one depth of the query share
// one batch: one Redis round trip and at most one MongoDB query per kind of data, however many
// conversations and seqs the request touches. They live for one request only, so their
// memoised answers never go stale and one caller's context never leaks into another's batch.
type Loaders struct {
	chunks *batcher[history.ChunkRef, *im.Chunk]
	states *batcher[string, im.SeqState]
	access *batcher[string, bool]

	// convs answers for the conversations: their ID rules, and the viewer's conversation list
	// with states, read at most once per request however many fields (totalUnread,
	// conversations, syncState) need it.
	source   history.ChunkSource
	convs    ConversationSource
	viewer   string
	listOnce gosync.Once
	list     []im.SeqState
	listErr  error
}

// viewerConversations returns the viewer's conversations, newest activity first, and primes
// the state loader with them so that each conversation's fields need no further reads.
func (l *Loaders) viewerConversations(ctx context.Context) ([]im.SeqState, error) {
	l.listOnce.Do(func() {
		l.list, l.listErr = l.convs.UserConversations(ctx, l.viewer)
		for _, st := range l.list {
			l.states.Prime(st.ConversationID, st)
		}
	})
	return l.list, l.listErr
}

// LoadChunks reads chunks through the request's chunk loader, so that the reads of every
// resolver at one depth share one batch (Loaders are the request's history.ChunkSource).
func (l *Loaders) LoadChunks(ctx context.Context, docIDs []string) ([]*im.Chunk, error) {
	refs := make([]history.ChunkRef, len(docIDs))
	for i, id := range docIDs {
		refs[i] = history.ChunkRef{DocID: id}
	}
	return l.LoadChunkRefs(ctx, refs)
}

// LoadChunkRefs is LoadChunks with the chunks version each reader read with its state, so
// that the source beneath may answer from its copies (history.VersionedChunkSource).
func (l *Loaders) LoadChunkRefs(ctx context.Context, refs []history.ChunkRef) ([]*im.Chunk, error) {
	// Chunks the source holds in memory under the versions named need no round trip, so they
	// need not wait for sibling resolvers to fill a batch either.
	if m, ok := l.source.(history.RememberingChunkSource); ok {
		if chunks, all := m.Remembered(refs); all {
			return chunks, nil
		}
	}
	return l.chunks.LoadMany(ctx, refs)
}

// LoadState reads the viewer's seq state in a conversation through the request's state
// loader (Loaders are the request's history.StateSource).
func (l *Loaders) LoadState(ctx context.Context, conversationID string) (im.SeqState, error) {
	return l.states.Load(ctx, conversationID)
}

// LoaderOptions tunes the loaders. The zero value is usable.
type LoaderOptions struct {
	// Wait is the longest a loader keeps a batch open after its first key, for sibling
	// resolvers, which gqlgen runs concurrently, to join it. Default 2ms.
	Wait time.Duration
	// Quiet sends a batch early, once no key has joined it for this long: by then every
	// sibling that was going to ask has asked. Default 250µs: well above the time gqlgen takes
	// from one sibling's resolver to the next, far below Wait.
	Quiet time.Duration
	// MaxBatch bounds the keys of one batch (one $in query). Default 1000.
	MaxBatch int
	// ObserveBatch, when set, is told each batch's loader ("chunks", "states", "access") and
	// number of keys; the server feeds it to metrics.
	ObserveBatch func(loader string, keys int)
}

func (o LoaderOptions) withDefaults() LoaderOptions {
	if o.Wait == 0 {
		o.Wait = 2 * time.Millisecond
	}
	if o.Quiet == 0 {
		o.Quiet = 250 * time.Microsecond
	}
	o.Quiet = min(o.Quiet, o.Wait)
	if o.MaxBatch == 0 {
		o.MaxBatch = 1000
	}
	return o
}

// NewLoaders builds the loaders for one request of viewer.
func NewLoaders(chunks history.ChunkSource, convs ConversationSource, viewer string, o LoaderOptions) *Loaders {
	o = o.withDefaults()
	return &Loaders{
		source: chunks,
		convs:  convs,
		viewer: viewer,
		chunks: newBatcher(o, "chunks", chunkBatch(chunks)),
		states: newBatcher(o, "states", func(ctx context.Context, ids []string) ([]im.SeqState, error) {
			return convs.States(ctx, viewer, ids)
		}),
		access: newBatcher(o, "access", func(ctx context.Context, ids []string) ([]bool, error) {
			return convs.CanRead(ctx, viewer, ids)
		}),
	}
}

// chunkBatch loads one batch of chunks from source: by version when it keeps versioned copies.
func chunkBatch(source history.ChunkSource) func(context.Context, []history.ChunkRef) ([]*im.Chunk, error) {
	if vs, ok := source.(history.VersionedChunkSource); ok {
		return vs.LoadChunkRefs
	}
	return func(ctx context.Context, refs []history.ChunkRef) ([]*im.Chunk, error) {
		docIDs := make([]string, len(refs))
		for i, r := range refs {
			docIDs[i] = r.DocID
		}
		return source.LoadChunks(ctx, docIDs)
	}
}

type loadersKey struct{}

func loadersFrom(ctx context.Context) *Loaders {
	l, _ := ctx.Value(loadersKey{}).(*Loaders)
	return l
}

// newLoaders builds the loaders for one request (or one WebSocket operation) of viewer.
func (r *Resolver) newLoaders(viewer string, o LoaderOptions) *Loaders {
	return NewLoaders(r.Chunks, r.conversations(), viewer, o)
}

// withLoaders is the HTTP middleware that authenticates the request (authenticateRequest) and
// gives it fresh loaders. A request without a token still runs (introspection needs no user),
// but every resolver that needs a viewer answers UNAUTHENTICATED.
func withLoaders(r *Resolver, o HandlerOptions, next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		ctx, viewer := authenticateRequest(req, o)
		// A WebSocket upgrade gets none: its context lasts as long as the connection, and each
		// operation on it gets loaders of its own (connectionOperations).
		if req.Header.Get("Upgrade") == "" {
			ctx = context.WithValue(ctx, loadersKey{}, r.newLoaders(viewer.UserID, o.Loaders))
		}
		next.ServeHTTP(w, req.WithContext(ctx))
	})
}
