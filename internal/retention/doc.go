// Package retention is the job that deletes old history: whole chunk documents whose every
// stored message was sent before a cutoff (now minus Options.MaxAge), raising each
// conversation's min seq past them first so that no readable seq ever points at a deleted
// chunk. Reads below the min seq then answer "history unavailable".
//
// What may go, per conversation (see plan for the details):
//
//   - The min seq moves to T+1, where T is the highest seq such that every stored message from
//     the current min seq up to T is older than the cutoff and T itself holds one. Seqs without
//     a message below T were handed out before T, so no send for them is still running. Seqs
//     after T are left alone even when empty: one may be being written right now.
//   - A chunk is deleted only when every message stored in it, readable or not, is older than
//     the cutoff, and either all its seqs are at or below T, or its slots above T are empty
//     (the chunk holding the max seq when the whole conversation is old). The second kind is
//     deleted by a conditional delete that matches only while those slots are still empty, so
//     a message sent meanwhile keeps its chunk. A chunk holding a message newer than the
//     cutoff is never deleted.
//
// Order per conversation: chunks already below the min seq (left by a run that stopped
// between its two steps) are deleted first; then the min seq is raised through the ledger
// (MongoDB, the Redis state, and the members' sync events); then the chunks are deleted; then
// their cached copies are dropped. A crash at any point leaves at worst unreadable chunks just
// below the min seq, which the next run's look-back (ChunksPerConversation chunks below the
// min seq) finds and deletes.
//
// Work is bounded: the seq collection is read in pages, and per conversation one run reads at
// most 2*ChunksPerConversation chunks (half of them look-back, usually absent) in at most two
// queries and deletes what it read in at most three deletes; a conversation with more old
// history continues on the next run.
// Several gateway instances may run the job at once: raising a min seq and deleting a chunk
// are idempotent.
package retention
