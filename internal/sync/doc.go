// Package sync is msggate's seq ledger: it allocates seqs, knows each conversation's max and min
// seq and each user's read and min seq, computes unread counts from them, and decides who may
// read a conversation. It works through the cache first and MongoDB second, and MongoDB is
// always the truth: every value the ledger reports survives a Redis flush unchanged.
//
// It also keeps each user's event log: every change the user's devices must learn (a new
// message, a read, a revoke, a delete, a clear) is appended after MongoDB has it, with the
// counters it leaves behind, and the Hub streams those events to this instance's subscribers,
// live from Redis pub/sub and from the log where live delivery has a gap. The log lives in
// Redis only: when it is lost, its tokens answer "too long" and devices start again from the
// state summary, which MongoDB backs. Every change is announced even when its writer could not
// announce it: its intent is in the store's outbox (intent.go), and every event carries a key
// naming its change, so the log holds each change once.
//
// The package name clashes with the standard library's; importers alias it imsync.
package sync
