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

// writeChunks writes total bytes cut from src in writes of batch bytes
// (at most len(src)), starting over at src's head when a write would run
// past its end.
func writeChunks(total int64, batch int, src []byte, write func([]byte) (int, error)) error {
	for sent, off := int64(0), 0; sent < total; {
		n := int(min(int64(batch), total-sent, int64(len(src))))
		if off+n > len(src) {
			off = 0
		}
		k, err := write(src[off : off+n])
		if err != nil {
			return err
		}
		sent += int64(k)
		off += k
	}
	return nil
}

// loopbackPair is a connected pair of loopback TCP sockets; the reader
// side is served by recv on its own goroutine, and wait reports its end.
type loopbackPair struct {
	w    *net.TCPConn
	done chan error
}

func newLoopbackPair(recv func(net.Conn) error) (*loopbackPair, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("listen on loopback: %w", err)
	}
	p := &loopbackPair{done: make(chan error, 1)}
	go func() {
		// The listener closes only once the connection is accepted:
		// closed any earlier, it would reset the dialled connection still
		// waiting in its accept queue (the dial returns as soon as the
		// kernel completes the handshake, maybe before Accept runs).
		c, err := l.Accept()
		l.Close()
		if err != nil {
			p.done <- err
			return
		}
		defer c.Close()
		p.done <- recv(c)
	}()
	c, err := net.Dial("tcp", l.Addr().String())
	if err != nil {
		l.Close() // ends the Accept
		return nil, fmt.Errorf("dial loopback: %w", err)
	}
	p.w = c.(*net.TCPConn)
	return p, nil
}

// drain is a receiver that reads want bytes into a buffer of readBuf
// bytes and drops them.
func drain(want int64, readBuf int) func(net.Conn) error {
	return func(c net.Conn) error {
		buf := make([]byte, readBuf)
		var n int64
		for n < want {
			k, err := c.Read(buf)
			n += int64(k)
			if err != nil {
				if err == io.EOF && n >= want {
					break
				}
				return fmt.Errorf("read after %d of %d bytes: %w", n, want, err)
			}
		}
		return nil
	}
}

// wait returns once the receiver has finished.
func (p *loopbackPair) wait() error {
	select {
	case err := <-p.done:
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
	p, err := newLoopbackPair(drain(total, max(batch, 64<<10)))
	if err != nil {
		return Result{}, err
	}
	defer p.w.Close()
	start := time.Now()
	if err := writeChunks(total, batch, pattern(4<<20), p.w.Write); err != nil {
		return Result{}, fmt.Errorf("loopback write: %w", err)
	}
	if err := p.wait(); err != nil {
		return Result{}, err
	}
	return Result{Bytes: total, Elapsed: time.Since(start)}, nil
}
