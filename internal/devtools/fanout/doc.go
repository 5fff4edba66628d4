// Package fanout measures what one message to a big group costs: N devices, one per member of
// an N-member group, hold a live syncEvents subscription each over WebSocket, one member sends
// messages to the group, and the run reports the Redis commands and Redis memory each message
// took, how long each device waited for each message (p50, p99 and the slowest, from the start
// of the send), whether every device got every message, and the gateway memory and goroutines
// each idle subscribed device holds.
//
// The gateways run as child processes of msggate's binary (`serve`), on their own redis-server
// and FerretDB, so that their memory is measured apart from the devices, which all live in the
// bench's process. The group is made by a `group` child process, the path an operator uses.
//
// `go run ./cmd/fanout` runs it; a short run is part of the test suite.
package fanout
