// Package sync is msggate's seq ledger and event log, in three parts.
//
// The Ledger does the seq accounting and keeps membership: it allocates seqs, knows each
// conversation's max and min seq and each user's read and min seq, computes unread counts from
// them, keeps users' conversation lists and groups' member lists, and decides who may read a
// conversation. It works through the cache first and MongoDB second, and MongoDB is always
// the truth: every value the ledger reports survives a Redis flush unchanged.
//
// The EventLog keeps each user's event log and each group's stream: every change the user's
// devices must learn (a new message, a read, a revoke, a delete, a clear) is appended after
// MongoDB has it, with the counters it leaves behind, and the Hub streams those events to this
// instance's subscribers, live from Redis pub/sub and from the log where live delivery has a
// gap. The log lives in Redis only: when it is lost, its tokens answer "too long" and devices
// start again from the state summary, which MongoDB backs. An EventLog reads counters through
// the Ledger that made it, or, over a store msggate does not own, through a StateSource
// (NewFollowerLog).
//
// The Outbox makes every change announced even when its writer could not announce it: the
// change's intent is recorded first (intent.go), and every event carries a key naming its
// change, so the log holds each change once.
//
// The package name clashes with the standard library's; importers alias it imsync.
package sync
