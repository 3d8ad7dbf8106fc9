package server

import (
	"net"
	"syscall"

	"golang.org/x/sys/unix"
)

// unreadFunc returns a function that reports how many bytes the kernel
// holds for nc that nobody has read yet (SIOCINQ, which is FIONREAD for sockets), or nil when nc is
// not a plain socket (then the answer is unknown).
func unreadFunc(nc net.Conn) func() (int, bool) {
	sc, ok := nc.(syscall.Conn)
	if !ok {
		return nil
	}
	raw, err := sc.SyscallConn()
	if err != nil {
		return nil
	}
	return func() (int, bool) {
		var n int
		var ierr error
		if err := raw.Control(func(fd uintptr) { n, ierr = unix.IoctlGetInt(int(fd), unix.SIOCINQ) }); err != nil || ierr != nil {
			return 0, false
		}
		return n, true
	}
}
