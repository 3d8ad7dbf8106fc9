package metadata

import (
	"errors"
	"net"
	"testing"
	"time"

	"github.com/hashicorp/raft"
)

// tcpStream is a StreamLayer on a loopback listener.
type tcpStream struct{ net.Listener }

func (s tcpStream) Dial(addr string, timeout time.Duration) (net.Conn, error) {
	return net.DialTimeout("tcp", addr, timeout)
}

// closeDialed cuts the connections the layer dialed, whatever reads they
// are blocked in, and refuses dials from then on; a connection closed
// before is not counted.
func TestStreamLayerCutsDialedConnections(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			defer c.Close() // a peer that answers nothing
		}
	}()
	s := newStreamLayer(tcpStream{ln}, nil)
	addr := ln.Addr().String()
	closed, err := s.Dial(raft.ServerAddress(addr), time.Second)
	if err != nil {
		t.Fatal(err)
	}
	closed.Close()
	held, err := s.Dial(raft.ServerAddress(addr), time.Second)
	if err != nil {
		t.Fatal(err)
	}
	readErr := make(chan error, 1)
	go func() {
		_, err := held.Read(make([]byte, 1))
		readErr <- err
	}()
	if n := s.closeDialed(); n != 1 {
		t.Fatalf("closed %d connections, want 1", n)
	}
	select {
	case err := <-readErr:
		if err == nil {
			t.Fatal("read on a cut connection returned data")
		}
	case <-time.After(10 * time.Second):
		t.Fatal("a read blocked on a peer that answers nothing outlived the cut")
	}
	if _, err := s.Dial(raft.ServerAddress(addr), time.Second); !errors.Is(err, errStreamCut) {
		t.Fatalf("dial after the cut: %v, want errStreamCut", err)
	}
}
