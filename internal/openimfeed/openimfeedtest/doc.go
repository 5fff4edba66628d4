// Package openimfeedtest runs a Kafka protocol server in process (franz-go's kfake) and writes
// OpenIM's toPush topic into it the way OpenIM v3.8.3 writes it, for tests of msggate's OpenIM
// feed and of what is built on it. It is imported only from _test files.
//
// Every record is what OpenIM's msgtransfer produces (pkg/common/storage/controller/
// msg_transfer.go MsgToPushMQ through tools v0.0.50-alpha.67 mq/kafka Producer.SendMessage):
// the value is the proto-marshalled msg.PushMsgDataToMQ{msgData, conversationID}; the key is
// the one the msg service put on the message (internal/rpc/msg/send.go: the group ID for group
// chats, the two user IDs sorted and joined by "_" otherwise) and msgtransfer passed on; the
// headers are operationID, opUserID, platform, connID in that order
// (tools mq/kafka/util.go GetMQHeaderWithContext); and the partition is the one sarama's hash
// partitioner picks for the key, the partitioner OpenIM configures (tools mq/kafka/sarama.go
// BuildProducerConfig). Message data is built as OpenIM's msg service and notification sender
// build it (pkg/notification/msg.go NotificationSender.send for tips).
package openimfeedtest
