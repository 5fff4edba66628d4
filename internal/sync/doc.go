// Package sync is msggate's seq ledger: it allocates seqs, knows each conversation's max and min
// seq and each user's read and min seq, computes unread counts from them, and decides who may
// read a conversation. It works through the cache first and MongoDB second, and MongoDB is
// always the truth: every value the ledger reports survives a Redis flush unchanged.
//
// The package name clashes with the standard library's; importers alias it imsync.
package sync
