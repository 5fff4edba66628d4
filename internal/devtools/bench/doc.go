// Package bench measures msggate's read path the way a client sees it: a real HTTP client over
// loopback against the real handler, a real redis-server and the embedded store, side by side
// with baseline handlers that do the least a gateway must (one Redis round trip, decode, encode
// the same JSON), in the same run, so that the figures are ratios a noisy machine cannot skew.
// `go run ./cmd/bench` runs it.
package bench
