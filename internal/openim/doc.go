// Package openim reads an existing OpenIM v3.8 deployment's MongoDB and Redis, read-only, and
// answers in msggate's domain types: chunks (*im.Chunk), seq state (im.SeqState), who may read
// what, a user's conversation list, OpenIM access tokens and OpenIM's quote rewrite.
//
// It never writes: no collection, no index, no document, no Redis key, no TTL refresh. By
// default every call reads OpenIM's records afresh, so what it answers is as new as OpenIM's
// own stores. Only when something reports OpenIM's changes to it (Options.MemoTTL, set when
// OpenIM's Kafka is followed) does it keep, for that short TTL, the MongoDB documents it read
// for what OpenIM's Redis lacked (doc_memo.go); Forget drops a conversation's. The records it reads, what each means and where in
// OpenIM's source that meaning comes from are listed in RECORDS.md beside this file.
//
// It imports the MongoDB driver and go-redis because it is the adapter to an external system;
// only Open takes driver types, every other exported API speaks im and standard types. Connect
// opens both stores through msggate's own adapters (chunkstore.ConnectDatabase, which creates
// nothing, and cache.DialClient), so the wiring above never handles a driver type.
package openim
