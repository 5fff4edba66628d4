// Package history is msggate's read path below the GraphQL layer: messages by seq, pages of
// history, the last message, the viewer's visible window (HISTORY_UNAVAILABLE below it) and
// the per-user view of each seq.
//
// It reads through two small interfaces, ChunkSource and StateLoader, and imports no store,
// so that the storage beneath can differ; the gateway wires it. Chunks makes any store a
// ChunkSource (a ChunkFinder: msggate's Redis tier over MongoDB, cache.ReadThrough, or an OpenIM
// deployment's openim.Store, read afresh every time), with a ChunkMemory in front for
// msggate's own: decoded copies in process under each conversation's chunks version. A
// dialect may show messages differently through the Reader's Adjust (Quotes, for OpenIM's
// quote rewrite). The GraphQL layer passes its per-request loaders, which batch every
// resolver's reads into one call to the source beneath them.
package history
