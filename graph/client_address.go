package graph

import (
	"net"
	"net/http"
	"net/netip"
	"strings"
)

// clientAddress names the client a request comes from, for the limits kept per address
// (anonymous requests, connections waiting for connection_init): the IP the connection comes
// from or, when header is set (HandlerOptions.ClientIPHeader, for a gateway behind a proxy),
// the last address in that header, the one the proxy itself appended; what a client wrote
// before it is not trusted. An IPv6 client counts by its /64: one host usually holds the
// whole prefix and could otherwise take a fresh address per request.
func clientAddress(req *http.Request, header string) string {
	if header != "" {
		if vs := req.Header.Values(header); len(vs) > 0 {
			last := vs[len(vs)-1]
			if i := strings.LastIndexByte(last, ','); i >= 0 {
				last = last[i+1:]
			}
			if a, ok := addressKey(strings.TrimSpace(last)); ok {
				return a
			}
		}
	}
	host, _, err := net.SplitHostPort(req.RemoteAddr)
	if err != nil {
		host = req.RemoteAddr
	}
	if a, ok := addressKey(host); ok {
		return a
	}
	return host
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
