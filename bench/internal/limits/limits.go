// Package limits measures what the machine itself can do with the bytes
// the brokers move, so every broker figure can be read as a fraction of
// it: a raw loopback TCP stream in the producer's batch sizes, a raw
// sequential file append (page cache, or fsynced at a broker's cadence),
// sendfile from a file to a socket, the disk's own write bandwidth, and
// the CPU of receiving and storing bytes with no protocol (Store).
package limits

import (
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"time"
)

// Result is bytes moved in an elapsed time.
type Result struct {
	Bytes   int64
	Elapsed time.Duration
	CPU     time.Duration // the limit's own CPU, where it measures one (Store); else 0
}

// pattern is random bytes the writers cut their chunks from.
func pattern(n int) []byte {
	r := rand.New(rand.NewChaCha8([32]byte{7}))
	p := make([]byte, n)
	for i := range p {
		p[i] = byte(r.Uint32())
	}
	return p
}

// loopbackPair is a connected pair of loopback TCP sockets; the reader
// side is drained by a goroutine that reports when want bytes arrived.
type loopbackPair struct {
	w    *net.TCPConn
	got  chan int64
	lerr chan error
}

func newLoopbackPair(want int64, readBuf int) (*loopbackPair, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("listen on loopback: %w", err)
	}
	defer l.Close()
	p := &loopbackPair{got: make(chan int64, 1), lerr: make(chan error, 1)}
	go func() {
		c, err := l.Accept()
		if err != nil {
			p.lerr <- err
			return
		}
		defer c.Close()
		buf := make([]byte, readBuf)
		var n int64
		for n < want {
			k, err := c.Read(buf)
			n += int64(k)
			if err != nil {
				if err == io.EOF && n >= want {
					break
				}
				p.lerr <- fmt.Errorf("read after %d of %d bytes: %w", n, want, err)
				return
			}
		}
		p.got <- n
	}()
	c, err := net.Dial("tcp", l.Addr().String())
	if err != nil {
		return nil, fmt.Errorf("dial loopback: %w", err)
	}
	p.w = c.(*net.TCPConn)
	return p, nil
}

// wait returns once the reader has everything.
func (p *loopbackPair) wait() error {
	select {
	case <-p.got:
		return nil
	case err := <-p.lerr:
		return err
	case <-time.After(5 * time.Minute):
		return fmt.Errorf("loopback reader did not finish within 5 minutes")
	}
}

// Loopback streams total bytes over a loopback TCP connection in writes
// of batch bytes, read on the other side into a buffer of the same size:
// the most a broker could take in over one connection with these
// batches, with no protocol, no acknowledgements and no storage.
func Loopback(total int64, batch int) (Result, error) {
	if batch <= 0 {
		return Result{}, fmt.Errorf("loopback batch %d", batch)
	}
	p, err := newLoopbackPair(total, max(batch, 64<<10))
	if err != nil {
		return Result{}, err
	}
	defer p.w.Close()
	src := pattern(4 << 20)
	start := time.Now()
	for sent, off := int64(0), 0; sent < total; {
		n := int(min(int64(batch), total-sent))
		if off+n > len(src) {
			off = 0
		}
		k, err := p.w.Write(src[off : off+min(n, len(src))])
		if err != nil {
			return Result{}, fmt.Errorf("loopback write: %w", err)
		}
		sent += int64(k)
		off += k
	}
	if err := p.wait(); err != nil {
		return Result{}, err
	}
	return Result{Bytes: total, Elapsed: time.Since(start)}, nil
}
