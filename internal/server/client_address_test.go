package server

import (
	"net/http"
	"testing"
)

// Ensure only a connection from a loopback address counts as a client on this machine, and
// that forwarding headers can take that away but never grant it: a remote peer stays remote
// whatever it writes, and a local proxy's client is local only when the header the gateway
// trusts says so.
func TestLoopbackClient(t *testing.T) {
	for _, tc := range []struct {
		name, peer, trusted string
		header              http.Header
		want                bool
	}{
		{"IPv4 loopback", "127.0.0.1:5000", "", nil, true},
		{"another IPv4 loopback address", "127.0.0.2:5000", "", nil, true},
		{"IPv6 loopback", "[::1]:5000", "", nil, true},
		{"IPv4-mapped loopback", "[::ffff:127.0.0.1]:5000", "", nil, true},
		{"a remote peer", "203.0.113.7:5000", "", nil, false},
		{"a private-network peer", "10.0.0.8:5000", "", nil, false},
		{"an unspecified address", "0.0.0.0:5000", "", nil, false},
		{"a remote peer claiming loopback", "203.0.113.7:5000", "", http.Header{"X-Forwarded-For": {"127.0.0.1"}}, false},
		{"a remote peer claiming loopback in the trusted header", "203.0.113.7:5000", "X-Forwarded-For", http.Header{"X-Forwarded-For": {"127.0.0.1"}}, false},
		{"a local proxy relaying a remote client", "127.0.0.1:5000", "", http.Header{"X-Forwarded-For": {"203.0.113.7"}}, false},
		{"a local proxy relaying, Forwarded", "127.0.0.1:5000", "", http.Header{"Forwarded": {"for=203.0.113.7"}}, false},
		{"a local proxy relaying in another header than the trusted one", "127.0.0.1:5000", "X-Forwarded-For", http.Header{"X-Real-Ip": {"203.0.113.7"}}, false},
		{"the trusted proxy appending a remote client", "127.0.0.1:5000", "X-Forwarded-For", http.Header{"X-Forwarded-For": {"127.0.0.1, 203.0.113.7"}}, false},
		{"the trusted proxy appending a local client", "127.0.0.1:5000", "X-Forwarded-For", http.Header{"X-Forwarded-For": {"203.0.113.7, 127.0.0.1"}}, true},
		{"the trusted header with no address", "127.0.0.1:5000", "X-Real-IP", http.Header{"X-Real-Ip": {"unknown"}}, false},
	} {
		req, _ := http.NewRequest(http.MethodGet, "http://gateway/", nil)
		req.RemoteAddr = tc.peer
		for k, v := range tc.header {
			req.Header[k] = v
		}
		if got := LoopbackClient(req, tc.trusted); got != tc.want {
			t.Errorf("%s: LoopbackClient = %v, want %v", tc.name, got, tc.want)
		}
	}
}
