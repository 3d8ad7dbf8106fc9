package limits

import (
	"fmt"
	"hash/crc32"
	"io"
	"net"
	"os"
	"runtime"
	"time"

	"golang.org/x/sys/unix"
)

// castagnoli is CRC-32C, the checksum of Kafka's record batches.
var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// Store is the least work per byte of any broker that keeps what it is
// sent in the page cache by copying it there: total bytes streamed over
// loopback TCP in writes of batch bytes, and on the other side read into
// a buffer of batch bytes, checked with CRC-32C (as a broker validates a
// record batch) and appended to a new file in dir, on one goroutine
// locked to its thread. Result.CPU is that thread's CPU (utime+stime),
// which includes the kernel's copy out of the socket and into the page
// cache: no protocol, no index, no acknowledgement, so a broker storing
// the same bytes cannot spend less. The file is removed afterwards.
func Store(dir string, total int64, batch int) (Result, error) {
	if batch <= 0 {
		return Result{}, fmt.Errorf("store batch %d", batch)
	}
	f, err := os.CreateTemp(dir, "store-limit-")
	if err != nil {
		return Result{}, fmt.Errorf("store limit: %w", err)
	}
	defer os.Remove(f.Name())
	defer f.Close()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return Result{}, fmt.Errorf("listen on loopback: %w", err)
	}
	defer l.Close()
	type stored struct {
		cpu time.Duration
		err error
	}
	done := make(chan stored, 1)
	go func() {
		cpu, err := storeFrom(l, f, total, batch)
		done <- stored{cpu, err}
	}()
	c, err := net.Dial("tcp", l.Addr().String())
	if err != nil {
		return Result{}, fmt.Errorf("dial loopback: %w", err)
	}
	defer c.Close()
	src := pattern(4 << 20)
	start := time.Now()
	for sent, off := int64(0), 0; sent < total; {
		n := int(min(int64(batch), total-sent, int64(len(src))))
		if off+n > len(src) {
			off = 0
		}
		k, err := c.Write(src[off : off+n])
		if err != nil {
			return Result{}, fmt.Errorf("store limit, loopback write: %w", err)
		}
		sent += int64(k)
		off += k
	}
	select {
	case st := <-done:
		if st.err != nil {
			return Result{}, st.err
		}
		return Result{Bytes: total, Elapsed: time.Since(start), CPU: st.cpu}, nil
	case <-time.After(5 * time.Minute):
		return Result{}, fmt.Errorf("store limit did not finish within 5 minutes")
	}
}

// storeFrom accepts one connection and stores total bytes from it into
// f, returning the CPU its thread spent from the first byte read on.
func storeFrom(l net.Listener, f *os.File, total int64, batch int) (time.Duration, error) {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	c, err := l.Accept()
	if err != nil {
		return 0, fmt.Errorf("store limit, accept: %w", err)
	}
	defer c.Close()
	buf := make([]byte, batch)
	var sum uint32
	cpu0, err := threadCPU()
	if err != nil {
		return 0, err
	}
	for n := int64(0); n < total; {
		k, err := io.ReadFull(c, buf[:min(int64(batch), total-n)])
		n += int64(k)
		if err != nil {
			return 0, fmt.Errorf("store limit, read after %d of %d bytes: %w", n, total, err)
		}
		sum = crc32.Update(sum, castagnoli, buf[:k])
		if _, err := f.Write(buf[:k]); err != nil {
			return 0, fmt.Errorf("store limit, append to %s: %w", f.Name(), err)
		}
	}
	cpu1, err := threadCPU()
	if err != nil {
		return 0, err
	}
	_ = sum // computed for its cost, as a broker's check would be
	return cpu1 - cpu0, nil
}

// threadCPU is the calling thread's CPU time so far.
func threadCPU() (time.Duration, error) {
	var ru unix.Rusage
	if err := unix.Getrusage(unix.RUSAGE_THREAD, &ru); err != nil {
		return 0, fmt.Errorf("getrusage: %w", err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano()), nil
}
