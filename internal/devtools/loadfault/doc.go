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
// The users' apps retry as apps should: changes until answered, after the gateway's retry
// hint or a jittered backoff, within a retry budget (syncclient.RetryBudget); refusals (503,
// 429, a hint) are counted apart from failures, and any INTERNAL answer fails the run.
// RunLevels runs the same scenario at multiples of its load and reports goodput against
// offered load, with a chart (goodput.svg).
//
// `go run ./cmd/loadfault` runs it with defaults fit for the README's figures, its gateways
// msggate's binary built from the checkout; a short run is part of the test suite.
package loadfault
