package metadata

import (
	"errors"
	"net"
	"sync"
	"time"

	"github.com/hashicorp/raft"
)

// StreamLayer is a listener for incoming Raft connections plus a dialer
// for outgoing ones (mux.RaftLayer is one).
type StreamLayer interface {
	net.Listener
	Dial(address string, timeout time.Duration) (net.Conn, error)
}

// streamLayer adapts a StreamLayer to raft.StreamLayer, and keeps the
// connections it dialed so that a stopping node can cut them (see
// shutdownRaft).
type streamLayer struct {
	StreamLayer
	advertise net.Addr

	mu     sync.Mutex
	dialed map[*trackedConn]struct{}
	cut    bool // closeDialed ran: no more dials
}

// errStreamCut is what a dial gets once the node has cut its peers off.
var errStreamCut = errors.New("raft stream layer: connections cut at shutdown")

func newStreamLayer(s StreamLayer, advertise net.Addr) *streamLayer {
	return &streamLayer{StreamLayer: s, advertise: advertise, dialed: map[*trackedConn]struct{}{}}
}

func (s *streamLayer) Dial(address raft.ServerAddress, timeout time.Duration) (net.Conn, error) {
	s.mu.Lock()
	cut := s.cut
	s.mu.Unlock()
	if cut {
		return nil, errStreamCut
	}
	nc, err := s.StreamLayer.Dial(string(address), timeout)
	if err != nil {
		return nil, err
	}
	tc := &trackedConn{Conn: nc, s: s}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.cut {
		// Dialed while the others were being cut: this one too.
		_ = nc.Close()
		return nil, errStreamCut
	}
	s.dialed[tc] = struct{}{}
	return tc, nil
}

// Addr is what the transport reports as this node's address.
func (s *streamLayer) Addr() net.Addr {
	if s.advertise != nil {
		return s.advertise
	}
	return s.StreamLayer.Addr()
}

// closeDialed closes every connection this node dialed and has not
// closed, refuses any further dial, and reports how many it closed: a
// peer that does not answer would otherwise hold a new connection's read
// as long as the last one's.
func (s *streamLayer) closeDialed() int {
	s.mu.Lock()
	s.cut = true
	conns := make([]*trackedConn, 0, len(s.dialed))
	for tc := range s.dialed {
		conns = append(conns, tc)
	}
	s.mu.Unlock()
	for _, tc := range conns {
		_ = tc.Close() // being torn down: nothing to do with an error
	}
	return len(conns)
}

// trackedConn leaves its stream layer's set when closed.
type trackedConn struct {
	net.Conn
	s    *streamLayer
	once sync.Once
}

func (c *trackedConn) Close() error {
	c.once.Do(func() {
		c.s.mu.Lock()
		delete(c.s.dialed, c)
		c.s.mu.Unlock()
	})
	return c.Conn.Close()
}
