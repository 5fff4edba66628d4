package freshstack

import (
	"bufio"
	"net"
	"syscall"
)

// AwaitReadable returns once conn has bytes to read, has been closed by either end, or has
// failed, without reading anything; at once when br (the buffered reader on conn, or nil)
// already holds bytes. A goroutine that waits for a peer here, rather than inside a read of
// a protocol library (which waits a dozen frames down), idles on a stack shallow enough for
// garbage collections to shrink it back to its smallest useful size. A conn that is not a
// plain socket (TLS, a pipe) returns at once: the caller's read then waits as before.
func AwaitReadable(conn net.Conn, br *bufio.Reader) {
	if br != nil && br.Buffered() > 0 {
		return
	}
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
