// Package ingest is msggate's write path: validate, categorise, allocate seqs, write chunks,
// record the new max and read seqs, then invalidate the cache. A caller is acknowledged only
// after MongoDB has its messages, and a retried message (same client message ID in the same
// conversation) gets its original seq back instead of being stored twice.
//
// Every change is made under an intent recorded first in the store's outbox (see
// imsync.Outbox.BeginIntent). The Relay, which every gateway instance runs, finishes the
// changes whose writer died, was cut off or could not reach Redis: what the store shows of
// them is made visible and announced, once.
//
// It also decides who may change what, so that every caller gets the same answer: only an
// admin sends notifications; the sender or a group's manager revokes or deletes for everyone;
// a single chat's members or a group's manager clear for everyone (the rules are in im).
package ingest
