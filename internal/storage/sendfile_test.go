package storage

import (
	"bytes"
	"net"
	"testing"
)

// TestWriteToSocket sends a read region over loopback TCP (sendfile with
// an explicit offset) and through a plain writer; both carry the batches.
func TestWriteToSocket(t *testing.T) {
	l := openLog(t, t.TempDir(), testConfig())
	for i := range 20 {
		mustAppend(t, l, makeBatch(t, 4, 500, int64(i), "sf"), 0)
	}
	r, err := l.Read(40, 1<<20, -1)
	if err != nil {
		t.Fatal(err)
	}
	want, _ := r.Bytes()

	var n int64
	b, err := overTCP(t, func(c net.Conn) (err error) {
		n, err = r.WriteTo(c)
		return err
	})
	if err != nil || n != r.Len {
		t.Fatalf("WriteTo socket: %d %v", n, err)
	}
	if !bytes.Equal(b, want) {
		t.Fatalf("socket got %d bytes, want %d", len(b), len(want))
	}
	var buf bytes.Buffer
	if n, err := r.WriteTo(&buf); err != nil || n != r.Len || !bytes.Equal(buf.Bytes(), want) {
		t.Fatalf("WriteTo buffer: %d %v", n, err)
	}
}
