// Package mention keeps and reads the index of messages that @-mention someone, from which
// each user's unread mentions are counted and listed.
//
// The truth is the store's mention collection (chunkstore.CollectionMentions), written by the
// write path beside the chunks and under the same intents (a send's mentions are recorded
// before its max seq is raised, a revoke's or a delete's removed before its chunks' cached
// copies are dropped), so that a crash never leaves the index behind the chunks for longer than
// the relay takes. Redis holds a copy per conversation (cache.AddMentions), counted in three
// O(log n) steps per conversation; a conversation the copy does not cover (Redis emptied,
// restarted) is read from the store for the unread range only, and the copy filled from it.
//
// A message mentions a user when it is a group message whose AtUserIDList names them or holds
// im.AtAllTag, they did not send it, and they did not delete it for themselves; it counts as
// unread while its seq lies above their read seq and within what they may read
// (im.SeqState.UnreadRange). An AtAllTag message is one entry whatever the group's size.
package mention
