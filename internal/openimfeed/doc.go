// Package openimfeed is msggate's consumer of OpenIM's Kafka topic toPush: the topic OpenIM v3.8's
// msgtransfer writes every message and notification to once it has a seq (or, for what OpenIM
// does not store, at once), and that OpenIM's own push service reads to reach online devices.
//
// A Feed reads toPush in its own consumer group ("msggate" unless told otherwise), so OpenIM's
// groups keep their offsets and OpenIM keeps pushing as before. Each record's payload
// (protocol msg.PushMsgDataToMQ) becomes one Change: a message, or one of the four tips msggate
// acts on (revoke, delete, clear, mark as read), whose detail OpenIM writes as JSON inside the
// message content. Run hands Changes to its caller in batches and commits a batch's offsets only
// once the caller has applied it, so a restart neither loses nor skips a record; a record may be
// applied twice (after a failed commit or a crash between apply and commit), so apply must be
// idempotent. An apply that fails is an outage, retried with nothing committed, unless it
// says the change itself will never apply (ErrRefused): that record, like one that cannot be
// decoded, is logged, handed to Options.OnSkip to be kept and counted, and passed over.
//
// This is the only package of msggate that imports a Kafka client (franz-go); the records it
// reads, what each means and where in OpenIM's source that meaning comes from are in
// internal/openim/RECORDS.md, section Kafka. The subpackage openimfeedtest writes toPush the way
// OpenIM does, for tests.
package openimfeed
