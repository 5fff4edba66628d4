// Package ingest is msggate's write path: validate, categorise, allocate seqs, write chunks,
// record the new max and read seqs, then invalidate the cache. A caller is acknowledged only
// after MongoDB has its messages, and a retried message (same client message ID in the same
// conversation) gets its original seq back instead of being stored twice.
package ingest
