// Package loadfault runs msggate the way production does and breaks it on purpose: two gateway
// processes on one redis-server and one shared FerretDB, many users with two devices each, a
// mixed load of sends, reads, mark-reads, revokes and deletes, and faults injected at random
// moments in the middle of it (redis-server killed and restarted, a gateway killed and
// restarted, the store restarted).
//
// Afterwards it checks what a user would: every acknowledged send is stored once, at the seq it
// was answered with, with its content; no seq holds two messages; every device's replica (the
// reference sync client, live over WebSocket) equals the server's state; unread counts never
// went negative and read seqs never moved back in any answer. It prints throughput and
// latency per operation, errors by code during each fault and how long each took to recover,
// and the memory and goroutines of each instance before, at peak and after the load.
//
// `msggate loadfault` runs it with defaults fit for the README's figures; a short run is part
// of the test suite.
package loadfault
