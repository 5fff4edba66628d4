package freshstack

import (
	"net"
	"syscall"
)

// AwaitReadable returns once conn has bytes to read, has been closed by either end, or has
// failed, without reading anything. A goroutine that waits for a peer here, rather than
// inside a read of a protocol library (which waits a dozen frames down), idles on a stack
// shallow enough for garbage collections to shrink it back to its smallest useful size.
// Bytes already taken into a buffer above conn are the caller's to look for first: they would
// be waited on for good. A conn that is not a plain socket (TLS, a pipe) returns at once: the
// caller's read then waits as before.
func AwaitReadable(conn net.Conn) {
	sc, ok := conn.(syscall.Conn)
	if !ok {
		return
	}
	rc, err := sc.SyscallConn()
	if err != nil {
		return
	}
	// Called before each wait for readiness and after it: the poller wakes the goroutine
	// only for bytes that arrive after it last found none, so the socket is asked first.
	_ = rc.Read(pending)
}
