// Package cache is msggate's Redis tier: the only package of the product's own Redis path that
// imports go-redis, so no driver type reaches the layers above. go-redis is also imported by
// internal/openim, which reads an OpenIM deployment's Redis (read-only, dialled through
// DialClient here), and by the test tooling that starts and fills test servers
// (internal/devtools/testenv, internal/openim/openimtest) or checks keys directly (_test files).
//
// It caches whole chunks, the seq state of conversations and users, each user's conversation
// list and the group memberships read, runs the seq allocator, keeps each user's sync event
// log and each group conversation's event stream with their pub/sub channels, and holds the
// rate-limit buckets, the persisted queries and the live instances.
//
// Keys carry a Redis Cluster hash tag so that every key of one conversation (or one user, or
// one group's memberships) lands in one slot and a script may touch several of them. They are
// spelled in keys.go:
//
//	<prefix>{<conversationID>}:chunk:<index>  hash {v: version, data: JSON chunk}
//	<prefix>{<conversationID>}:seqstate       string "max,min,time,cv": stored max seq, min seq, newest send time, chunks version (conversation_state.go)
//	<prefix>{<conversationID>}:alloc          hash {curr, last}: allocator position and block end
//	<prefix>{<conversationID>}:alloclock      string: token of the instance refilling the block
//	<prefix>{<conversationID>}:log            hash {epoch, pos, x, m}: a group stream's head and the newest max and min seq logged (group_log.go)
//	<prefix>{<conversationID>}:events         list: a group stream's events, oldest first
//	<prefix>{<conversationID>}:evkeys         sorted set: the keys of the changes the group stream logged, by time
//	<prefix>{<conversationID>}:followed       string: OpenIM mode's seq up to which every seq is logged from OpenIM's feed (followed_seq.go)
//	<prefix>{u:<userID>}:readstate            hash {<conversationID>: "read,min"}: read seq and user min seq (read_state.go)
//	<prefix>{u:<userID>}:convs                set: the IDs on the user's conversation list, with "" marking it filled (conversation_list.go)
//	<prefix>{u:<userID>}:convsv               string: the conversation list's version, moved by every change from a random start
//	<prefix>{g:<groupID>}:members             hash {"": version, <userID>: role, "-" not a member, "?" held}: the memberships read so far (group_membership.go)
//	<prefix>{u:<userID>}:order                sorted set: the list in its order, chats by minus their newest send time, groups and "" (filled) at +inf (conversation_order.go)
//	<prefix>{u:<userID>}:log                  hash {epoch, pos, <conversationID>|x, <conversationID>|m}: the event log's head and the max and min seqs it has seen
//	<prefix>{u:<userID>}:events               list: the user's events, oldest first (also the pub/sub channel's name)
//	<prefix>{u:<userID>}:evkeys               sorted set: the keys of the changes the log announced, by time, kept as long as the events
//	<prefix>{u:<userID>}:rate                 hash: the user's request token bucket
//	<prefix>{u:<userID>}:apq                  hash {n, b}: the persisted queries the user registered in the current window, and their bytes (apq.go)
//	<prefix>{a:<address>}:rate                hash: the request token bucket of a client address without a valid token
//	<prefix>instance:<id>                     string: a gateway instance is alive (see sync.Outbox.Heartbeat)
//	<prefix>apq:<sha256>                      string: a persisted query's text
//	<prefix>followed                          sorted set: OpenIM mode's followed conversations, by when their seq last moved
//	<prefix>followed:since                    string: when OpenIM mode's follower began (ms)
//	<prefix>feed:skipped                      list: JSON of the feed's records moved past without being applied, newest first (skipped_records.go)
//	<prefix>search:backlog                    sorted set: OpenIM mode's seqs waiting for the search index, "<seq>:<conv>" by when added (µs) (search_backlog.go)
//	<prefix>storeid                           hash {token, clock, stamp}: the identity of the store Redis describes (store_identity.go)
//	<prefix>storeid:discard                   string: the token of the instance discarding another store's state
//
// A group stream's channel is <prefix>{<conversationID>}:feed. How long each key lives is in
// docs/architecture.md ("What msggate keeps in Redis").
//
// Every cached value is a copy of MongoDB's; MongoDB is written first. Monotonic values (max,
// min and read seqs) are only ever raised, so a slow reader's fill can never lower them. Chunks
// carry a version that every writer bumps; a reader's fill is dropped when the version moved
// since the reader looked, so it never puts back an older chunk. A chunk is one value, so a
// partly written entry cannot exist. Every chunk write also moves its conversation's chunks
// version (cv), which readers get with the seq state in the same round trip: an instance that
// keeps decoded chunks in memory serves one only while the version it was read under is still
// the current one, and reads through whenever Redis has no version (after a restart).
//
// State reads made while others are under way share round trips on go-redis's autopipeliner
// (coalesced_reads.go); every other call makes its own.
package cache
