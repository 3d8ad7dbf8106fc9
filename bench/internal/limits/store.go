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
	var cpu time.Duration
	p, err := newLoopbackPair(func(c net.Conn) (err error) {
		cpu, err = storeFrom(c, f, total, batch)
		return err
	})
	if err != nil {
		return Result{}, err
	}
	defer p.w.Close()
	start := time.Now()
	if err := writeChunks(total, batch, pattern(4<<20), p.w.Write); err != nil {
		return Result{}, fmt.Errorf("store limit, loopback write: %w", err)
	}
	if err := p.wait(); err != nil {
		return Result{}, err
	}
	return Result{Bytes: total, Elapsed: time.Since(start), CPU: cpu}, nil
}

// storeFrom stores total bytes from c into f on its goroutine's own
// thread, returning the CPU that thread spent from the first byte read on.
func storeFrom(c net.Conn, f *os.File, total int64, batch int) (time.Duration, error) {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
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
