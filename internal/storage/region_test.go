package storage

import (
	"bytes"
	"errors"
	"io"
	"net"
	"os"
	"testing"
)

// overTCP runs send on the client end of a loopback connection (so that
// sendfile is used), closes it, and returns what the peer received and
// send's error.
func overTCP(t *testing.T, send func(net.Conn) error) ([]byte, error) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	got := make(chan []byte, 1)
	go func() {
		c, err := ln.Accept()
		if err != nil {
			got <- nil
			return
		}
		defer c.Close()
		b, _ := io.ReadAll(c)
		got <- b
	}()
	c, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	serr := send(c)
	c.Close()
	return <-got, serr
}

// sendOverTCP sends [off, off+n) of g over a loopback connection and
// returns what the peer received and the error.
func sendOverTCP(t *testing.T, g *Region, off, n int64) ([]byte, error) {
	t.Helper()
	return overTCP(t, func(c net.Conn) error {
		_, err := g.SendTo(c, off, n)
		return err
	})
}

// TestRegionOutlivesDeletedLog: a pinned region still sends and reads
// its bytes after its log is deleted (files renamed and unlinked), while
// once released the result fails with ErrClosed, its descriptor closed.
func TestRegionOutlivesDeletedLog(t *testing.T) {
	files := newFileCache(DefaultMaxOpenFiles())
	l := openLogFiles(t, t.TempDir(), testConfig(), files)
	for i := range 20 {
		mustAppend(t, l, makeBatch(t, 4, 500, int64(i), "pin"), 0)
	}
	r, err := l.Read(8, 1<<20, -1)
	if err != nil {
		t.Fatal(err)
	}
	want, err := r.Bytes()
	if err != nil {
		t.Fatal(err)
	}
	g, err := r.Pin()
	if err != nil {
		t.Fatal(err)
	}
	if err := l.Delete(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(l.dir); !os.IsNotExist(err) {
		t.Fatalf("log directory after delete: %v", err)
	}
	if files.Open() != 1 {
		t.Fatalf("%d descriptors open while pinned, want 1", files.Open())
	}
	got, err := sendOverTCP(t, g, 0, g.Size())
	if err != nil || !bytes.Equal(got, want) {
		t.Fatalf("pinned send after delete: %d of %d bytes, %v", len(got), len(want), err)
	}
	part := make([]byte, 100)
	if n, err := g.ReadAt(part, 50); n != 100 || err != nil || !bytes.Equal(part, want[50:150]) {
		t.Fatalf("pinned ReadAt after delete: %d %v", n, err)
	}
	if n, err := g.ReadAt(part, g.Size()-10); n != 10 || err != io.EOF {
		t.Fatalf("ReadAt past the end: %d %v, want 10 io.EOF", n, err)
	}
	g.Release()
	g.Release() // no-op
	if files.Open() != 0 {
		t.Fatalf("%d descriptors open after release, want 0", files.Open())
	}
	if _, err := r.Bytes(); !errors.Is(err, ErrClosed) {
		t.Fatalf("read after delete and release: %v, want ErrClosed", err)
	}
}

// TestRegionTruncatedUnderSend: bytes cut from the file after the pin are
// an error, never a short send counted as success.
func TestRegionTruncatedUnderSend(t *testing.T) {
	l := openLog(t, t.TempDir(), testConfig())
	for i := range 20 {
		mustAppend(t, l, makeBatch(t, 4, 500, int64(i), "cut"), 0)
	}
	r, err := l.Read(40, 1<<20, -1)
	if err != nil {
		t.Fatal(err)
	}
	g, err := r.Pin()
	if err != nil {
		t.Fatal(err)
	}
	defer g.Release()
	if err := l.TruncateTo(44); err != nil {
		t.Fatal(err)
	}
	got, err := sendOverTCP(t, g, 0, g.Size())
	if err == nil {
		t.Fatalf("send of a truncated region succeeded with %d of %d bytes", len(got), g.Size())
	}
	var buf bytes.Buffer // the copying fallback (not a socket)
	if _, err := g.SendTo(&buf, 0, g.Size()); err == nil {
		t.Fatalf("copy of a truncated region succeeded with %d of %d bytes", buf.Len(), g.Size())
	}
	if _, err := g.ReadAt(make([]byte, g.Size()), 0); err == nil {
		t.Fatal("ReadAt of a truncated region succeeded")
	}
}

// TestTryPinBudget: regions pinned through TryPin stay under half the
// descriptor cache's capacity whatever the number of logs read, so a fetch
// of many partitions cannot hold a descriptor for each; past the budget
// TryPin declines (the caller copies), and releases make room again.
func TestTryPinBudget(t *testing.T) {
	const capacity = 8
	files := newFileCache(capacity)
	var results []ReadResult
	for range 3 * capacity {
		l := openLogFiles(t, t.TempDir(), testConfig(), files)
		mustAppend(t, l, makeBatch(t, 2, 100, 0, "budget"), 0)
		r, err := l.Read(0, 1<<20, -1)
		if err != nil {
			t.Fatal(err)
		}
		results = append(results, r)
	}
	var pinned []*Region
	declined := 0
	for _, r := range results {
		g, ok, err := r.TryPin()
		if err != nil {
			t.Fatal(err)
		}
		if !ok {
			declined++
			continue
		}
		pinned = append(pinned, g)
	}
	if len(pinned) != capacity/2 || declined != len(results)-capacity/2 {
		t.Fatalf("pinned %d, declined %d of %d; want %d pinned", len(pinned), declined, len(results), capacity/2)
	}
	if open := files.Open(); open > capacity {
		t.Fatalf("%d descriptors open with a capacity of %d", open, capacity)
	}
	for _, g := range pinned {
		g.Release()
		g.Release() // a second release changes nothing
	}
	g, ok, err := results[len(results)-1].TryPin()
	if err != nil || !ok {
		t.Fatalf("after the releases: pinned %v, %v", ok, err)
	}
	g.Release()
	if n := files.pins.Load(); n != 0 {
		t.Fatalf("%d pins counted after every release", n)
	}
}
