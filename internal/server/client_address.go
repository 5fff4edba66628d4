package server

import (
	"net"
	"net/http"
	"net/netip"
	"strings"
)

// clientAddress names the client a request comes from, for the limits kept per address
// (anonymous requests, connections waiting for connection_init): the IP the connection comes
// from or, when header is set (Settings.ClientIPHeader, for a gateway behind a proxy),
// the last address in that header, the one the proxy itself appended; what a client wrote
// before it is not trusted. An IPv6 client counts by its /64: one host usually holds the
// whole prefix and could otherwise take a fresh address per request.
func clientAddress(req *http.Request, header string) string {
	if last, ok := proxiedAddress(req, header); ok {
		if a, ok := addressKey(last); ok {
			return a
		}
	}
	host := peerHost(req)
	if a, ok := addressKey(host); ok {
		return a
	}
	return host
}

// proxiedAddress is the last address in header, the one the proxy in front appended; false
// when header is unset or the request lacks it.
func proxiedAddress(req *http.Request, header string) (string, bool) {
	if header == "" {
		return "", false
	}
	vs := req.Header.Values(header)
	if len(vs) == 0 {
		return "", false
	}
	last := vs[len(vs)-1]
	if i := strings.LastIndexByte(last, ','); i >= 0 {
		last = last[i+1:]
	}
	return strings.TrimSpace(last), true
}

// peerHost is the IP the connection comes from, as text.
func peerHost(req *http.Request) string {
	host, _, err := net.SplitHostPort(req.RemoteAddr)
	if err != nil {
		return req.RemoteAddr
	}
	return host
}

// forwardingHeaders are the headers in which proxies name the client they relay.
var forwardingHeaders = []string{"Forwarded", "X-Forwarded-For", "X-Real-IP", "True-Client-IP", "CF-Connecting-IP"}

// LoopbackClient reports whether req comes from a client on this machine: its connection
// comes from a loopback address, and no proxy relayed it for a client elsewhere. Nothing a
// remote peer writes in its headers makes it local. A loopback peer that names a client in a
// forwarding header is a proxy on this machine: then only header (Settings.
// ClientIPHeader, the one the gateway trusts) can name a loopback client; any other
// forwarding header means a client that may be anywhere.
func LoopbackClient(req *http.Request, header string) bool {
	if !isLoopback(peerHost(req)) {
		return false
	}
	if a, ok := proxiedAddress(req, header); ok {
		return isLoopback(a)
	}
	for _, h := range forwardingHeaders {
		if len(req.Header.Values(h)) > 0 {
			return false
		}
	}
	return true
}

func isLoopback(s string) bool {
	ip, err := netip.ParseAddr(strings.Trim(s, "[]"))
	return err == nil && ip.Unmap().IsLoopback()
}

// addressKey is the key of an IP address written as text: the address itself for IPv4, its
// /64 for IPv6.
func addressKey(s string) (string, bool) {
	ip, err := netip.ParseAddr(strings.Trim(s, "[]"))
	if err != nil {
		return "", false
	}
	ip = ip.Unmap()
	if ip.Is6() {
		return netip.PrefixFrom(ip.WithZone(""), 64).Masked().String(), true
	}
	return ip.String(), true
}
