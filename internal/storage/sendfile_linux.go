package storage

import (
	"errors"
	"io"
	"os"
	"syscall"
)

// sendfile copies [pos, pos+n) of f to w with sendfile(2) when w exposes
// a socket descriptor, using an explicit offset so concurrent readers of
// the same *os.File never share a file position. handled=false: the
// caller falls back to a copy.
func sendfile(w io.Writer, f *os.File, pos, n int64) (written int64, handled bool, err error) {
	sc, ok := w.(syscall.Conn)
	if !ok {
		return 0, false, nil
	}
	dst, err := sc.SyscallConn()
	if err != nil {
		return 0, false, nil
	}
	src, err := f.SyscallConn()
	if err != nil {
		return 0, false, nil
	}
	off := pos
	var werr error
	cerr := src.Control(func(sfd uintptr) {
		werr = dst.Write(func(dfd uintptr) bool {
			for written < n {
				chunk := min(n-written, 1<<30)
				m, e := syscall.Sendfile(int(dfd), int(sfd), &off, int(chunk))
				if m > 0 {
					written += int64(m)
				}
				switch {
				case errors.Is(e, syscall.EAGAIN):
					return false // wait until the socket is writable
				case errors.Is(e, syscall.EINTR):
					continue
				case e != nil:
					err = e
					return true
				case m == 0:
					err = io.ErrUnexpectedEOF
					return true
				}
			}
			return true
		})
	})
	if err == nil {
		err = errors.Join(cerr, werr)
	}
	return written, true, err
}
