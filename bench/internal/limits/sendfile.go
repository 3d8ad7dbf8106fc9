package limits

import (
	"errors"
	"fmt"
	"os"
	"time"

	"golang.org/x/sys/unix"
)

// Sendfile writes a file of size bytes in dir, then sends it to a
// loopback socket with sendfile(2) in chunks of chunk bytes (explicit
// offsets, as a broker serving one file to many readers must), the
// reader discarding: the most a broker can serve stored bytes at. With
// cold, the file's pages are dropped first, so it is read from the disk.
func Sendfile(dir string, size int64, chunk int, cold bool) (Result, error) {
	f, err := os.CreateTemp(dir, "sendfile-limit-")
	if err != nil {
		return Result{}, fmt.Errorf("sendfile limit: %w", err)
	}
	defer os.Remove(f.Name())
	defer f.Close()
	src := pattern(1 << 20)
	for w := int64(0); w < size; w += int64(len(src)) {
		if _, err := f.Write(src); err != nil {
			return Result{}, fmt.Errorf("write %s: %w", f.Name(), err)
		}
	}
	size = size / int64(len(src)) * int64(len(src))
	if cold {
		if err := Evict(f.Name()); err != nil {
			return Result{}, err
		}
	}
	p, err := newLoopbackPair(drain(size, 1<<20))
	if err != nil {
		return Result{}, err
	}
	defer p.w.Close()
	rc, err := p.w.SyscallConn()
	if err != nil {
		return Result{}, fmt.Errorf("socket fd: %w", err)
	}
	start := time.Now()
	var off int64
	var serr error
	for off < size && serr == nil {
		n := int(min(int64(chunk), size-off))
		werr := rc.Write(func(fd uintptr) bool {
			k, err := unix.Sendfile(int(fd), int(f.Fd()), &off, n)
			if errors.Is(err, unix.EAGAIN) {
				return k <= 0 // wait for room unless something went
			}
			if err != nil {
				serr = fmt.Errorf("sendfile at %d: %w", off, err)
			}
			return true
		})
		if werr != nil {
			return Result{}, fmt.Errorf("sendfile: %w", werr)
		}
	}
	if serr != nil {
		return Result{}, serr
	}
	if err := p.wait(); err != nil {
		return Result{}, err
	}
	return Result{Bytes: size, Elapsed: time.Since(start)}, nil
}
