// Package history is msggate's read path below the GraphQL layer: it loads chunks through the
// Redis cache with MongoDB behind it, and turns seqs into per-user message views. The GraphQL
// layer's per-request dataloader calls LoadChunks as its batch function.
package history
