package graph

import (
	"context"
	"reflect"
	"strings"
	gosync "sync"
	"sync/atomic"
	"time"

	"github.com/99designs/gqlgen/graphql"
	"github.com/graph-gophers/dataloader/v7"
	"github.com/vektah/gqlparser/v2/ast"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"

	"github.com/msggate/msggate/internal/history"
	"github.com/msggate/msggate/internal/im"
)

// Loaders are one request's dataloaders. Every resolver that needs chunks, seq state or a
// membership answer asks through them, so that all resolvers at one depth of the query share
// one batch: one Redis round trip and at most one MongoDB query per kind of data, however many
// conversations and seqs the request touches. They live for one request only, so their
// memoised answers never go stale and one caller's context never leaks into another's batch.
type Loaders struct {
	// The three kinds' loaders, each made on its first use (chunkLoader, stateLoader,
	// accessLoader): a page that needs none of them, like the conversation list, does not pay
	// for making them.
	opts                            LoaderOptions
	chunksOnce, statesOnce, accOnce gosync.Once
	chunks                          *requestLoader[history.ChunkRef, *im.Chunk]
	states                          *requestLoader[string, im.SeqState]
	access                          *requestLoader[string, bool]
	// mentions counts unread mentions (mentionCountLoader); nil: the gateway keeps none.
	mentions      MentionSource
	mentionsOnce  gosync.Once
	mentionCounts *requestLoader[string, int64]

	// convs answers for the conversations: their ID rules, and the viewer's conversation list
	// with states, read at most once per request however many fields (totalUnread,
	// conversations, syncState) need it.
	source   history.ChunkSource
	convs    ConversationSource
	viewer   string
	listOnce gosync.Once
	list     []im.SeqState
	listErr  error
	// listRead: list holds the viewer's list (read without error); listIndex finds a
	// conversation's place in it (listed).
	listRead      atomic.Bool
	listIndexOnce gosync.Once
	listIndex     map[string]int
}

// viewerConversations returns the viewer's conversations, newest activity first. Their states
// answer LoadState from then on (listed), so each conversation's fields need no further reads.
func (l *Loaders) viewerConversations(ctx context.Context) ([]im.SeqState, error) {
	l.listOnce.Do(func() {
		l.list, l.listErr = l.convs.UserConversations(ctx, l.viewer)
		l.listRead.Store(l.listErr == nil)
	})
	return l.list, l.listErr
}

// listed returns the viewer's state in a conversation from the request's read of the list,
// when the list was read and holds it. The index is built on the first ask, not with the
// list: a page that asks for no single state (the list's lastMessage has the states at hand)
// pays nothing for it, however long the list.
func (l *Loaders) listed(conversationID string) (im.SeqState, bool) {
	if !l.listRead.Load() {
		return im.SeqState{}, false
	}
	l.listIndexOnce.Do(func() {
		l.listIndex = make(map[string]int, len(l.list))
		for i, st := range l.list {
			l.listIndex[st.ConversationID] = i
		}
	})
	i, ok := l.listIndex[conversationID]
	if !ok {
		return im.SeqState{}, false
	}
	return l.list[i], true
}

// LoadChunks reads chunks through the request's chunk loader, so that the reads of every
// resolver at one depth share one batch (Loaders are the request's history.ChunkSource). Each
// ref's version lets the source beneath answer from its copies.
func (l *Loaders) LoadChunks(ctx context.Context, refs []history.ChunkRef) ([]*im.Chunk, error) {
	// Chunks the source holds in memory under the versions named need no round trip, so they
	// need not wait for sibling resolvers to fill a batch either.
	if chunks, all := l.source.Remembered(refs); all {
		return chunks, nil
	}
	return l.chunkLoader().LoadMany(ctx, refs)
}

// Remembered is the source's: the loaders keep nothing beyond the request's batches.
func (l *Loaders) Remembered(refs []history.ChunkRef) ([]*im.Chunk, bool) {
	return l.source.Remembered(refs)
}

// LoadState reads the viewer's seq state in a conversation through the request's state
// loader (Loaders are the request's history.StateLoader).
func (l *Loaders) LoadState(ctx context.Context, conversationID string) (im.SeqState, error) {
	// A state the request wrote (Replace) or read on its own comes first: it is at least as
	// new as the list's.
	states := l.stateLoader()
	if thunk, ok := states.cache.Get(ctx, conversationID); ok {
		return thunk()
	}
	if st, ok := l.listed(conversationID); ok {
		return st, nil
	}
	return states.Load(ctx, conversationID)
}

// LoaderOptions tunes the loaders. The zero value is usable.
type LoaderOptions struct {
	// Wait is how long a loader keeps a batch open after its first key, for sibling
	// resolvers, which gqlgen runs concurrently, to join it (dataloader.WithWait). A resolver
	// with no sibling that could join (alone on its path through the query) does not wait.
	// Default 2ms.
	Wait time.Duration
	// MaxBatch bounds the keys of one batch (one $in query; dataloader.WithBatchCapacity).
	// Default 1000.
	MaxBatch int
	// ObserveBatch, when set, is told each batch's loader ("chunks", "states", "access") and
	// number of keys; the server feeds it to metrics (through the loaders' tracer).
	ObserveBatch func(loader string, keys int)
	// tracer, set by the server when tracing is on (WithTracer), spans each batch.
	tracer trace.Tracer
}

// WithTracer returns o with batches spanned by t.
func (o LoaderOptions) WithTracer(t trace.Tracer) LoaderOptions {
	o.tracer = t
	return o
}

func (o LoaderOptions) withDefaults() LoaderOptions {
	if o.Wait == 0 {
		o.Wait = 2 * time.Millisecond
	}
	if o.MaxBatch == 0 {
		o.MaxBatch = 1000
	}
	return o
}

// NewLoaders builds the loaders for one request of viewer.
func NewLoaders(chunks history.ChunkSource, convs ConversationSource, viewer string, o LoaderOptions) *Loaders {
	return &Loaders{source: chunks, convs: convs, viewer: viewer, opts: o.withDefaults()}
}

func (l *Loaders) chunkLoader() *requestLoader[history.ChunkRef, *im.Chunk] {
	l.chunksOnce.Do(func() {
		l.chunks = newRequestLoader(l.opts, "chunks", l.source.LoadChunks)
	})
	return l.chunks
}

func (l *Loaders) stateLoader() *requestLoader[string, im.SeqState] {
	l.statesOnce.Do(func() {
		l.states = newRequestLoader(l.opts, "states", func(ctx context.Context, ids []string) ([]im.SeqState, error) {
			return l.convs.States(ctx, l.viewer, ids)
		})
	})
	return l.states
}

func (l *Loaders) accessLoader() *requestLoader[string, bool] {
	l.accOnce.Do(func() {
		l.access = newRequestLoader(l.opts, "access", func(ctx context.Context, ids []string) ([]bool, error) {
			src, ok := l.convs.(AccessWithStates)
			if !ok || !inQuery(ctx) {
				return l.convs.CanRead(ctx, l.viewer, ids)
			}
			readable, states, err := src.CanReadWithStates(ctx, l.viewer, ids)
			if err != nil {
				return nil, err
			}
			for i, st := range states {
				if readable[i] && st.ConversationID == ids[i] {
					l.stateLoader().Prime(ctx, ids[i], st)
				}
			}
			return readable, nil
		})
	})
	return l.access
}

// inQuery reports whether ctx is of a query operation. Only a query's loaders take states
// read along with access: a mutation reads states after its own write, and a state read
// before the write would be taken for one read after it.
func inQuery(ctx context.Context) bool {
	return graphql.HasOperationContext(ctx) && graphql.GetOperationContext(ctx).Operation != nil &&
		graphql.GetOperationContext(ctx).Operation.Operation == ast.Query
}

type loadersKey struct{}

func loadersFrom(ctx context.Context) *Loaders {
	l, _ := ctx.Value(loadersKey{}).(*Loaders)
	return l
}

// newLoaders builds the loaders for one request (or one WebSocket operation) of viewer.
func (r *Resolver) newLoaders(viewer string, o LoaderOptions) *Loaders {
	l := NewLoaders(r.Chunks, r.conversations(), viewer, o)
	l.mentions = r.Mentions
	return l
}

// WithLoaders gives ctx fresh loaders for one request (or one WebSocket operation) of viewer:
// every resolver of the request asks through them.
func (r *Resolver) WithLoaders(ctx context.Context, viewer string, o LoaderOptions) context.Context {
	return context.WithValue(ctx, loadersKey{}, r.newLoaders(viewer, o))
}

// requestLoader is one kind of data's dataloader for one request, and the batch function
// behind it. gqlgen resolves sibling fields on goroutines of their own, so a key cannot know
// whether siblings will follow: the dataloader keeps each batch open for Wait. A resolver that
// is alone on its path through the query (lone) has no sibling to wait for, so its keys go to
// the batch function at once, and their answers are primed into the dataloader's cache, where
// any later ask in the request finds them as if the dataloader had fetched them.
type requestLoader[K comparable, V any] struct {
	loader *dataloader.Loader[K, V]
	cache  *dataloader.InMemoryCache[K, V]
	tracer dataloader.Tracer[K, V]
	batch  dataloader.BatchFunc[K, V]
}

func newRequestLoader[K comparable, V any](o LoaderOptions, name string, fetch func(context.Context, []K) ([]V, error)) *requestLoader[K, V] {
	rl := &requestLoader[K, V]{
		cache:  dataloader.NewCache[K, V](),
		tracer: batchObserver[K, V]{name: name, observe: o.ObserveBatch, tracer: o.tracer, spanName: "dataloader " + name},
		batch:  alignedBatch(name, fetch),
	}
	rl.loader = dataloader.NewBatchedLoader(rl.batch,
		dataloader.WithWait[K, V](o.Wait),
		dataloader.WithBatchCapacity[K, V](o.MaxBatch),
		// The input queue must take a whole batch: a full queue would block the caller that
		// holds the loader's lock.
		dataloader.WithInputCapacity[K, V](o.MaxBatch),
		dataloader.WithCache[K, V](rl.cache),
		dataloader.WithTracer[K, V](rl.tracer))
	return rl
}

// Load returns key's answer.
func (rl *requestLoader[K, V]) Load(ctx context.Context, key K) (V, error) {
	// A primed key (a conversation of the viewer's list) is answered before anything else:
	// deciding lone walks the resolver's context, which costs more than the answer.
	if thunk, ok := rl.cache.Get(ctx, key); ok {
		return thunk()
	}
	if lone(ctx) {
		vals, err := rl.loadNow(ctx, []K{key})
		if err != nil {
			var zero V
			return zero, err
		}
		return vals[0], nil
	}
	return rl.loader.Load(ctx, key)()
}

// LoadMany returns the answers of keys, aligned with them; the first error fails them all.
func (rl *requestLoader[K, V]) LoadMany(ctx context.Context, keys []K) ([]V, error) {
	if lone(ctx) {
		return rl.loadNow(ctx, keys)
	}
	vals, errs := rl.loader.LoadMany(ctx, keys)()
	for _, err := range errs {
		if err != nil {
			return nil, err
		}
	}
	return vals, nil
}

// loadNow answers keys from the cache, and the rest with one call of the batch function,
// whose answers it primes into the cache. Only for a lone caller: nothing else of the request
// asks the loader meanwhile, so a key cannot be fetched twice.
func (rl *requestLoader[K, V]) loadNow(ctx context.Context, keys []K) ([]V, error) {
	out := make([]V, len(keys))
	var missing []K
	var at []int
	for i, k := range keys {
		if thunk, ok := rl.cache.Get(ctx, k); ok {
			v, err := thunk()
			if err != nil {
				return nil, err
			}
			out[i] = v
			continue
		}
		missing, at = append(missing, k), append(at, i)
	}
	if len(missing) == 0 {
		return out, nil
	}
	bctx, finish := rl.tracer.TraceBatch(ctx, missing)
	results := rl.batch(bctx, missing)
	finish(results)
	for j, r := range results {
		if r.Error != nil {
			return nil, r.Error
		}
		out[at[j]] = r.Data
		rl.loader.Prime(ctx, missing[j], r.Data)
	}
	return out, nil
}

// Prime records key's answer, known from elsewhere, unless it was asked for already.
func (rl *requestLoader[K, V]) Prime(ctx context.Context, key K, v V) {
	rl.loader.Prime(ctx, key, v)
}

// Replace records key's answer in place of any earlier one: what a mutation just wrote is
// newer than what the request read before it.
func (rl *requestLoader[K, V]) Replace(ctx context.Context, key K, v V) {
	rl.loader.Clear(ctx, key).Prime(ctx, key, v)
}

// alignedBatch adapts an aligned batch function to the dataloader's result shape: one error
// fails every key of the batch, as a store failure must never read as "no data"; so does a
// panic (a bug), as gqlgen turns a resolver's panic into an error, never a crash.
func alignedBatch[K comparable, V any](name string, fetch func(context.Context, []K) ([]V, error)) dataloader.BatchFunc[K, V] {
	return func(ctx context.Context, keys []K) (out []*dataloader.Result[V]) {
		fail := func(err error) []*dataloader.Result[V] {
			out := make([]*dataloader.Result[V], len(keys))
			for i := range out {
				out[i] = &dataloader.Result[V]{Error: err}
			}
			return out
		}
		defer func() {
			if r := recover(); r != nil {
				out = fail(im.Errorf(im.EINTERNAL, "%s loader: %v", name, r))
			}
		}()
		vals, err := fetch(ctx, keys)
		if err == nil && len(vals) != len(keys) {
			err = im.Errorf(im.EINTERNAL, "%s loader: batch answered %d of %d keys", name, len(vals), len(keys))
		}
		if err != nil {
			return fail(err)
		}
		out = make([]*dataloader.Result[V], len(keys))
		for i, v := range vals {
			out[i] = &dataloader.Result[V]{Data: v}
		}
		return out
	}
}

// batchObserver is the loaders' tracer: it tells LoaderOptions.ObserveBatch of every batch,
// the dataloader's and the ones a lone caller sends directly, and, when tracing is on, spans
// each: the batch function's Redis and MongoDB commands are the span's children. The span
// names the loader and counts the keys; the keys themselves (conversation and chunk IDs) stay
// out of traces. (The dataloader's own OpenTelemetry tracer records them, and a span per key.)
type batchObserver[K comparable, V any] struct {
	dataloader.NoopTracer[K, V]
	name     string
	observe  func(loader string, keys int)
	tracer   trace.Tracer
	spanName string
}

func (t batchObserver[K, V]) TraceBatch(ctx context.Context, keys []K) (context.Context, dataloader.TraceBatchFinishFunc[V]) {
	if t.observe != nil {
		t.observe(t.name, len(keys))
	}
	if t.tracer == nil || !trace.SpanContextFromContext(ctx).IsSampled() {
		return ctx, func([]*dataloader.Result[V]) {}
	}
	ctx, span := t.tracer.Start(ctx, t.spanName, trace.WithAttributes(
		attribute.String("dataloader.name", t.name), attribute.Int("dataloader.keys", len(keys))))
	return ctx, func(results []*dataloader.Result[V]) {
		// One error fails the whole batch (alignedBatch): the first result tells.
		if len(results) > 0 && results[0] != nil && results[0].Error != nil {
			span.SetStatus(codes.Error, im.ErrorCode(results[0].Error))
		}
		span.End()
	}
}

type siblingsKey struct{}

// withSiblings marks ctx as one of several callers a resolver runs side by side (the pages
// of a conversation list's nodes): they are not lone, whatever the query's shape.
func withSiblings(ctx context.Context) context.Context {
	return context.WithValue(ctx, siblingsKey{}, true)
}

// lone reports whether the resolver asking through ctx is alone on its path through the
// query: on no element of a list, and, at every level from the root down to it, the only
// field of its selection set that has a resolver. Then no other resolver of the request runs
// beside it, and no sibling could join its batch: waiting for one would only add the wait to
// the answer. It is decided from the query alone, so a lone caller never races a sibling for
// a key. Outside a GraphQL field (no field context) it is not lone: other callers may exist.
func lone(ctx context.Context) bool {
	fc := graphql.GetFieldContext(ctx)
	if fc == nil || !graphql.HasOperationContext(ctx) || ctx.Value(siblingsKey{}) != nil {
		return false
	}
	for p := fc; p != nil; p = p.Parent {
		if p.Index != nil {
			return false
		}
	}
	oc := graphql.GetOperationContext(ctx)
	if oc.Operation == nil {
		return false
	}
	for ; fc != nil; fc = fc.Parent {
		if fc.Field.Field == nil {
			continue
		}
		parent := fc.Parent
		for parent != nil && parent.Field.Field == nil {
			parent = parent.Parent
		}
		siblings := oc.Operation.SelectionSet
		if parent != nil {
			siblings = parent.Field.Selections
		}
		if fc.Field.ObjectDefinition == nil {
			return false
		}
		typ := fc.Field.ObjectDefinition.Name
		n := 0
		for _, f := range graphql.CollectFields(oc, siblings, []string{typ}) {
			if resolvedFields[typ][strings.ToLower(f.Name)] {
				n++
			}
		}
		if n > 1 {
			return false
		}
	}
	return true
}

// resolvedFields are, by GraphQL type, the fields gqlgen resolves through a resolver (lower
// case), read from the generated resolver interfaces (ResolverRoot's XResolver for type X).
// Only a resolver asks the request's loaders; a field bound to the model (id, a message's
// fields) reads what its parent already holds, so it is no sibling to wait for.
var resolvedFields = func() map[string]map[string]bool {
	out := map[string]map[string]bool{}
	root := reflect.TypeFor[ResolverRoot]()
	for i := range root.NumMethod() {
		m := root.Method(i)
		fields := map[string]bool{}
		resolver := m.Type.Out(0)
		for j := range resolver.NumMethod() {
			fields[strings.ToLower(resolver.Method(j).Name)] = true
		}
		out[m.Name] = fields
	}
	return out
}()
