package mux

import (
	"bytes"
	"errors"
	"io"
	"net"
	"testing"
	"time"
)

func listen(t *testing.T) *Mux {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	m := New(ln, 5*time.Second, nil)
	t.Cleanup(func() { m.Close() })
	return m
}

// echo accepts one connection on ln and echoes what it reads.
func echo(t *testing.T, ln net.Listener) {
	t.Helper()
	go func() {
		c, err := ln.Accept()
		if err != nil {
			return
		}
		defer c.Close()
		io.Copy(c, c)
	}()
}

func roundTrip(t *testing.T, c net.Conn, msg []byte) {
	t.Helper()
	c.SetDeadline(time.Now().Add(10 * time.Second))
	if _, err := c.Write(msg); err != nil {
		t.Fatal(err)
	}
	got := make([]byte, len(msg))
	if _, err := io.ReadFull(c, got); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, msg) {
		t.Fatalf("echoed % x, want % x", got, msg)
	}
}

func TestKafkaAndRaftShareAPort(t *testing.T) {
	m := listen(t)
	echo(t, m.Kafka())
	echo(t, m.Raft())
	addr := m.Kafka().Addr().String()

	// A Kafka frame: the first byte (of the size) arrives intact.
	k, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer k.Close()
	roundTrip(t, k, []byte{0, 0, 0, 3, 'a', 'b', 'c'})

	r, err := m.Raft().Dial(addr, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	// The preamble is consumed: the raft side sees only what follows.
	roundTrip(t, r, []byte("append entries"))
}

func TestBadPreambleClosed(t *testing.T) {
	m := listen(t)
	c, err := net.Dial("tcp", m.Kafka().Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.Write([]byte{0xFF, 'n', 'o', 'p', 'e', '-', 'r', 'a', 'f', 't', 1})
	c.SetReadDeadline(time.Now().Add(10 * time.Second))
	var b [1]byte
	if _, err := c.Read(b[:]); err == nil {
		t.Fatal("a connection with a bad raft preamble was kept")
	}
}

func TestClosingOneSideKeepsTheOther(t *testing.T) {
	m := listen(t)
	if err := m.Kafka().Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := m.Kafka().Accept(); !errors.Is(err, net.ErrClosed) {
		t.Fatalf("accept on a closed side: %v", err)
	}
	echo(t, m.Raft())
	r, err := Dial(m.Raft().Addr().String(), 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	roundTrip(t, r, []byte("still here"))
}
