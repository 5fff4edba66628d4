// Package cache is msggate's Redis tier and the only importer of go-redis. It caches whole
// chunks and the seq state of conversations and users, runs the seq allocator, and keeps each
// user's sync event log and its pub/sub channel.
//
// Keys carry a Redis Cluster hash tag so that every key of one conversation (or one user) lands
// in one slot and a script may touch several of them:
//
//	<prefix>{<conversationID>}:chunk:<index>  hash {v: version, data: JSON chunk}
//	<prefix>{<conversationID>}:seq            hash {max, min, time, cv}: stored max seq, min seq, newest send time, chunks version
//	<prefix>{<conversationID>}:alloc          hash {curr, last}: allocator position and block end
//	<prefix>{<conversationID>}:alloclock      string: token of the instance refilling the block
//	<prefix>{u:<userID>}:read                 hash {<conversationID>: read seq, <conversationID>|min: user min seq}
//	<prefix>{u:<userID>}:rate                 hash: the user's request token bucket
//	<prefix>{u:<userID>}:log                  hash {epoch, pos, <conversationID>|x, <conversationID>|m}: the event log's head and the max and min seqs it has seen
//	<prefix>{u:<userID>}:events               list: the user's events, oldest first (also the pub/sub channel's name)
//	<prefix>{u:<userID>}:evkeys               sorted set: the keys of the changes the log announced, by time, kept as long as the events
//	<prefix>instance:<id>                     string: a gateway instance is alive (see sync.Outbox.Heartbeat)
//	<prefix>apq:<sha256>                      string: a persisted query's text
//
// Every cached value is a copy of MongoDB's; MongoDB is written first. Monotonic values (max,
// min and read seqs) are only ever raised, so a slow reader's fill can never lower them. Chunks
// carry a version that every writer bumps; a reader's fill is dropped when the version moved
// since the reader looked, so it never puts back an older chunk. A chunk is one value, so a
// partly written entry cannot exist. Every chunk write also moves its conversation's chunks
// version (cv), which readers get with the seq state in the same round trip: an instance that
// keeps decoded chunks in memory serves one only while the version it was read under is still
// the current one, and reads through whenever Redis has no version (after a restart).
package cache
