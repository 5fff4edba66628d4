// Package chunkstore is msggate's MongoDB layer and the only importer of the MongoDB driver.
//
// Collections (field names follow OpenIM where OpenIM has the same concept):
//
//	msg            one document per chunk of im.ChunkSize seqs:
//	               {doc_id: "<conversationID>:<index>", msgs: [100 x slot]}; unique index on doc_id.
//	seq            one document per conversation:
//	               {conversation_id, max_seq, min_seq, reserved_seq, last_time}; unique index on
//	               conversation_id. last_time is the send time of the newest stored message.
//	               max_seq is the highest seq that holds a stored message (raised after the chunk
//	               write, before the sender is acknowledged); reserved_seq is the end of the last
//	               seq block handed to the Redis allocator. Keeping the two apart is what keeps
//	               reported max seqs and unread counts exact when Redis loses its keys.
//	seq_user       one document per user and conversation:
//	               {conversation_id, user_id, read_seq, min_seq}; unique index on both.
//	msg_client_id  one document per stored message that has a client message ID:
//	               {conversation_id, client_msg_id, seq}; unique index on both. A retried send
//	               finds its original seq here instead of storing a duplicate.
//	group_member   one document per group member: {group_id, user_id, role}; unique index on both.
//	user_conversation one document per user and conversation on the user's list:
//	               {user_id, conversation_id}; unique index on both.
//	outbox         one document per change being made right now (outbox.go): its intent,
//	               recorded before the change and deleted once it is announced; {_id, kind,
//	               conversation_id, user_id, seqs, msgs, for_everyone, target, created, due,
//	               tries}; index on due. Holds only changes in flight, so it stays small.
//	doc_lease      on a FerretDB several processes share, one document per document being
//	               updated right now: {_id: "<collection>|<key>", owner, expires} (doc_lease.go),
//	               and a marker per lease taken over from a process that died holding it.
//
// Only operations that both MongoDB 6+ and FerretDB 1.24 support are used: CRUD with $set,
// $addToSet, $max, $inc, $setOnInsert, upserts, $in, sort and limit, unique indexes and
// duplicate-key errors. No transactions, aggregation slices or change streams.
package chunkstore
