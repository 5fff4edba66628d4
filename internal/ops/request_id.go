package ops

import (
	"context"
	"crypto/rand"
	"sync"
)

// RequestIDHeader carries a request's ID in and out: a proxy in front may set it, and the
// response always echoes the one used, so a client can quote it when reporting a problem.
const RequestIDHeader = "X-Request-ID"

// maxRequestIDLen admits UUIDs and the trace IDs common proxies send, with room to spare.
const maxRequestIDLen = 128

// requestInfo is what the request middleware and the layers below it share about one request.
type requestInfo struct {
	id string

	mu        sync.Mutex
	operation string // the GraphQL operation's name, once known
}

type requestInfoKey struct{}

func withRequestInfo(ctx context.Context, info *requestInfo) context.Context {
	return context.WithValue(ctx, requestInfoKey{}, info)
}

func requestInfoFrom(ctx context.Context) *requestInfo {
	info, _ := ctx.Value(requestInfoKey{}).(*requestInfo)
	return info
}

// RequestID returns the ID of the request ctx belongs to, or "" outside one.
func RequestID(ctx context.Context) string {
	if info := requestInfoFrom(ctx); info != nil {
		return info.id
	}
	return ""
}

// noteOperation records the GraphQL operation a request runs, for its access log line. A
// WebSocket request runs many; the last one named wins.
func noteOperation(ctx context.Context, name string) {
	info := requestInfoFrom(ctx)
	if info == nil || name == "" {
		return
	}
	info.mu.Lock()
	info.operation = name
	info.mu.Unlock()
}

func (info *requestInfo) operationName() string {
	info.mu.Lock()
	defer info.mu.Unlock()
	return info.operation
}

// requestID keeps an incoming ID when it is safe to log and echo, and otherwise makes one: an
// ID goes into log lines and a response header, so it must be short and printable, and a
// client must not be able to forge log structure or split headers with it.
func requestID(incoming string) string {
	if saneRequestID(incoming) {
		return incoming
	}
	return rand.Text()
}

func saneRequestID(id string) bool {
	if id == "" || len(id) > maxRequestIDLen {
		return false
	}
	for i := 0; i < len(id); i++ {
		c := id[i]
		switch {
		case 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z', '0' <= c && c <= '9':
		case c == '-', c == '_', c == '.', c == ':', c == '=', c == '+', c == '/':
		default:
			return false
		}
	}
	return true
}
