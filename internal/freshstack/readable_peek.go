//go:build linux || darwin || freebsd || netbsd || openbsd || dragonfly

package freshstack

import "syscall"

// pending reports whether the socket fd has a byte to read (or an end or an error to report)
// without taking it; false only when a read would wait.
func pending(fd uintptr) bool {
	var b [1]byte
	_, _, err := syscall.Recvfrom(int(fd), b[:], syscall.MSG_PEEK|syscall.MSG_DONTWAIT)
	return err != syscall.EAGAIN && err != syscall.EWOULDBLOCK
}
