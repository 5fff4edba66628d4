// Package chunkstore is msggate's MongoDB layer: the only package of the product's own store
// path that imports the MongoDB driver, so no driver type reaches the layers above. The driver
// is also imported by internal/openim, which reads an OpenIM deployment's MongoDB (read-only,
// connected through ConnectDatabase here), and by the test tooling that starts and fills test
// servers (internal/devtools/testenv, internal/openim/openimtest) or checks a store directly (_test
// files).
//
// Collections (field names follow OpenIM where OpenIM has the same concept). Each document's
// _id is the key msggate looks it up by (natural_keys.go), written beside OpenIM's fields, so
// FerretDB hands the lookup to SQLite instead of decoding the whole collection (on the embedded
// store an index search; docs/operations.md, "FerretDB", has the measurements), and
// OpenIM-style readers still find it by field; a collection written by an earlier msggate
// version keeps its ObjectID _ids and is read by field:
//
//	msg            one document per chunk of im.ChunkSize seqs:
//	               {_id: doc_id, doc_id: "<conversationID>:<index>", msgs: [100 x slot]}; unique
//	               index on doc_id.
//	seq            one document per conversation:
//	               {_id: conversation_id, conversation_id, max_seq, min_seq, reserved_seq,
//	               last_time}; unique index on conversation_id. last_time is the send time of the
//	               newest stored message.
//	               max_seq is the highest seq that holds a stored message (raised after the chunk
//	               write, before the sender is acknowledged); reserved_seq is the end of the last
//	               seq block handed to the Redis allocator. Keeping the two apart is what keeps
//	               reported max seqs and unread counts exact when Redis loses its keys.
//	seq_user       one document per user and conversation:
//	               {_id: "<conversationID>|<userID>", conversation_id, user_id, read_seq, min_seq};
//	               unique index on both fields.
//	msg_client_key one document per stored message that has a client message ID:
//	               {_id: "<conversationID>|<sendID>|<clientMsgID>", conversation_id, send_id,
//	               client_msg_id, seq}; unique index on the three fields. A retried send finds its
//	               original seq here instead of storing a duplicate; the sender is part of the key,
//	               so a send with another sender's ID finds nothing (client_msg_id.go). A second
//	               index, not unique, on (conversation_id, client_msg_id, seq descending) finds a
//	               message by its ID alone, whoever sent it (FindClientMsgIDSeqs).
//	msg_client_id  the same, as versions before msg_client_key wrote it, without the sender:
//	               {_id: "<conversationID>|<clientMsgID>", conversation_id, client_msg_id, seq};
//	               unique index on both fields. Read, never written: a key with no document in
//	               msg_client_key is looked up here, while the collection is not empty.
//	group_member   one document per group member: {_id: "<groupID>|<userID>", group_id, user_id,
//	               role}; unique index on both fields.
//	user_conversation one document per user and conversation on the user's list:
//	               {_id: "<userID>|<conversationID>", user_id, conversation_id}; unique index on
//	               both fields.
//	user_conversation_list one document per user, the same list: {_id: "<userID>",
//	               conversation_ids: [...]}, written after the entries by the same calls, read
//	               by _id (user_conversation_list.go); kept only in a store that had no entries
//	               when a Store first opened it (an earlier store's lists are read from the
//	               entries).
//	outbox         one document per change being made right now (outbox.go): its intent,
//	               recorded before the change and deleted once it is announced; {_id, kind,
//	               owner, conversation_id, user_id, seqs, msgs, for_everyone, target, created,
//	               due, tries}; index on due. Holds only changes in flight, so it stays small.
//	msg_mention    the mention index: one document per conversation and MentionBlock seqs,
//	               {_id: "<conversationID>:<block>", m: {"<seq>": {u, a, s, h}}}, holding only
//	               the messages that mention someone (mention.go).
//	doc_lease      on a FerretDB several processes share, one document per document being
//	               updated right now: {_id: "<collection>|<key>", owner, expires} (doc_lease.go),
//	               and a marker per lease taken over from a process that died holding it.
//	store_layout   one document per collection above that has natural _ids:
//	               {_id: "<collection>", natural_ids: true}, written when a Store first opens the
//	               collection empty; and the store's identity, {_id: "identity", token, clock,
//	               stamp}, which Redis's state is checked against (store_identity.go).
//
// Only operations that both MongoDB 6+ and FerretDB 1.24 support are used: CRUD with $set,
// $addToSet, $pullAll, $max, $inc, $setOnInsert, upserts, $in, $or and $gt (on the one identity
// document), sort and limit, unique indexes and
// duplicate-key errors. No transactions, aggregation slices or change streams. On FerretDB only a
// filter that is exactly {_id: <string>} is left to SQLite (every other one is matched in Go on
// every document, $in on _id too), so there documents are read by finds by _id, a few at a
// time, rather than one $in; an update command carries few statements (batch_write.go); and a
// conditional update of a chunk is tested on the chunk read under the document's lock
// (conditional_update.go).
package chunkstore
