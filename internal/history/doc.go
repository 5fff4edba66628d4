// Package history is msggate's read path below the GraphQL layer: messages by seq, pages of
// history, the last message, the viewer's visible window (HISTORY_UNAVAILABLE below it) and
// the per-user view of each seq.
//
// It reads through two small interfaces, ChunkSource and StateSource, so that the storage
// beneath can differ: CachedChunks is msggate's own (decoded copies in process under each
// conversation's chunks version, then Redis, then MongoDB), OpenIMChunks an OpenIM
// deployment's, read afresh every time, with OpenIMQuotes as the Reader's Adjust for OpenIM's
// quote rewrite; the GraphQL layer passes its per-request loaders, which batch every
// resolver's reads into one call to the source beneath them.
package history
