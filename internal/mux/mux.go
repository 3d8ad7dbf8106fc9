// Package mux shares one TCP listener between Kafka's protocol and the
// metadata quorum's Raft traffic, so that a controller needs one port
// (Kafka's CONTROLLER listener carries both BrokerRegistration-style
// requests and the quorum's own replication) and a broker-only node can
// receive the metadata log on its inter-broker listener.
//
// A Raft connection opens with a fixed preamble. A Kafka connection opens
// with a request's 4-byte big-endian size, which is never negative, so its
// first byte is never 0xFF: one byte tells them apart. Everything a Kafka
// client sends, that first byte included, reaches the Kafka side intact.
package mux

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"sync"
	"time"
)

// preamble opens every Raft connection: 0xFF, then "weir-raft", then a
// version byte.
var preamble = []byte{0xFF, 'w', 'e', 'i', 'r', '-', 'r', 'a', 'f', 't', 1}

// Mux splits one listener's connections by their first bytes.
type Mux struct {
	ln     net.Listener
	log    *slog.Logger
	sniff  time.Duration
	kafka  *sideListener
	raft   *RaftLayer
	cancel context.CancelFunc
	wg     sync.WaitGroup
	once   sync.Once
}

// New starts splitting ln. sniff bounds the wait for a connection's first
// byte (a client that connects and says nothing for that long is closed);
// 0 means 10 minutes, Kafka's connections.max.idle.ms.
func New(ln net.Listener, sniff time.Duration, logger *slog.Logger) *Mux {
	if sniff <= 0 {
		sniff = 10 * time.Minute
	}
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	ctx, cancel := context.WithCancel(context.Background())
	m := &Mux{ln: ln, log: logger, sniff: sniff, cancel: cancel}
	m.kafka = newSide(ln.Addr())
	m.raft = &RaftLayer{side: newSide(ln.Addr())}
	m.wg.Add(1)
	go m.acceptLoop(ctx)
	return m
}

// Kafka is the listener of the connections that are not Raft's.
func (m *Mux) Kafka() net.Listener { return m.kafka }

// Raft is the stream layer for hashicorp/raft's network transport.
func (m *Mux) Raft() *RaftLayer { return m.raft }

// Close closes the shared listener, both sides and every connection
// waiting to be told apart. Connections already handed out are their
// owners' to close.
func (m *Mux) Close() error {
	var err error
	m.once.Do(func() {
		err = m.ln.Close()
		m.cancel()
		m.kafka.close()
		m.raft.side.close()
		m.wg.Wait()
	})
	if errors.Is(err, net.ErrClosed) {
		err = nil
	}
	return err
}

func (m *Mux) acceptLoop(ctx context.Context) {
	defer m.wg.Done()
	var backoff time.Duration
	for {
		c, err := m.ln.Accept()
		if err != nil {
			if ctx.Err() != nil || errors.Is(err, net.ErrClosed) {
				return
			}
			// Out of file descriptors and the like: wait and go on.
			backoff = min(max(2*backoff, 5*time.Millisecond), time.Second)
			m.log.Warn("accept failed; retrying", "addr", m.ln.Addr().String(), "err", err, "backoff", backoff)
			select {
			case <-ctx.Done():
				return
			case <-time.After(backoff):
			}
			continue
		}
		backoff = 0
		m.wg.Add(1)
		go func() {
			defer m.wg.Done()
			m.route(ctx, c)
		}()
	}
}

// route reads a connection's first byte and hands it to its side.
func (m *Mux) route(ctx context.Context, c net.Conn) {
	stop := context.AfterFunc(ctx, func() { c.Close() })
	defer stop()
	if err := c.SetReadDeadline(time.Now().Add(m.sniff)); err != nil {
		c.Close()
		return
	}
	first := make([]byte, 1, len(preamble))
	if _, err := io.ReadFull(c, first); err != nil {
		c.Close()
		return
	}
	if first[0] == preamble[0] {
		rest := make([]byte, len(preamble)-1)
		if _, err := io.ReadFull(c, rest); err != nil || !bytes.Equal(rest, preamble[1:]) {
			m.log.Warn("closing connection with a bad raft preamble", "remote", c.RemoteAddr().String())
			c.Close()
			return
		}
		if err := c.SetReadDeadline(time.Time{}); err != nil {
			c.Close()
			return
		}
		m.raft.side.deliver(ctx, c)
		return
	}
	if err := c.SetReadDeadline(time.Time{}); err != nil {
		c.Close()
		return
	}
	m.kafka.deliver(ctx, &replayConn{Conn: c, head: first})
}

// RaftLayer implements raft.StreamLayer: accepted Raft connections, and
// dialing that writes the preamble.
type RaftLayer struct {
	side *sideListener
}

// Accept returns the next Raft connection.
func (r *RaftLayer) Accept() (net.Conn, error) { return r.side.Accept() }

// Close stops accepting Raft connections (raft's transport closes its
// stream layer on shutdown); the Kafka side goes on.
func (r *RaftLayer) Close() error { return r.side.Close() }

// Addr is the shared listener's address.
func (r *RaftLayer) Addr() net.Addr { return r.side.Addr() }

// Dial connects to a peer's muxed listener as Raft.
func (r *RaftLayer) Dial(address string, timeout time.Duration) (net.Conn, error) {
	return Dial(address, timeout)
}

// Dial connects to a muxed listener at address and opens a Raft stream.
func Dial(address string, timeout time.Duration) (net.Conn, error) {
	c, err := net.DialTimeout("tcp", address, timeout)
	if err != nil {
		return nil, err
	}
	if err := c.SetWriteDeadline(time.Now().Add(timeout)); err != nil {
		c.Close()
		return nil, err
	}
	if _, err := c.Write(preamble); err != nil {
		c.Close()
		return nil, fmt.Errorf("write raft preamble to %s: %w", address, err)
	}
	if err := c.SetWriteDeadline(time.Time{}); err != nil {
		c.Close()
		return nil, err
	}
	return c, nil
}

// sideListener is a net.Listener fed by the mux. Closing it refuses
// that side's connections from then on; the shared port stays open until
// the Mux is closed.
type sideListener struct {
	addr  net.Addr
	conns chan net.Conn
	done  chan struct{}
	once  sync.Once
}

func newSide(addr net.Addr) *sideListener {
	return &sideListener{addr: addr, conns: make(chan net.Conn), done: make(chan struct{})}
}

func (s *sideListener) deliver(ctx context.Context, c net.Conn) {
	select {
	case s.conns <- c:
	case <-s.done:
		c.Close()
	case <-ctx.Done():
		c.Close()
	}
}

func (s *sideListener) Accept() (net.Conn, error) {
	select {
	case c := <-s.conns:
		return c, nil
	case <-s.done:
		return nil, net.ErrClosed
	}
}

func (s *sideListener) Close() error {
	s.close()
	return nil
}

func (s *sideListener) close() { s.once.Do(func() { close(s.done) }) }

func (s *sideListener) Addr() net.Addr { return s.addr }

// replayConn returns the sniffed bytes before reading on.
type replayConn struct {
	net.Conn
	head []byte
}

func (c *replayConn) Read(p []byte) (int, error) {
	if len(c.head) > 0 {
		n := copy(p, c.head)
		c.head = c.head[n:]
		return n, nil
	}
	return c.Conn.Read(p)
}
