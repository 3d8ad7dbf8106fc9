package storage

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"

	"github.com/weir-project/weir/internal/storage/recordbatch"
)

// FuzzRecoverSegment loads a segment made of arbitrary bytes after a crash:
// recovery must not fail or panic, and must keep a valid prefix (whole,
// CRC-correct batches with increasing offsets) readable end to end.
func FuzzRecoverSegment(f *testing.F) {
	var valid []byte
	for i := range 3 {
		b := makeBatch(f, 2, 20, int64(i), "fz")
		recordbatch.SetBaseOffset(b, int64(2*i))
		valid = append(valid, b...)
	}
	f.Add(valid)
	f.Add(valid[:len(valid)-7])
	flipped := bytes.Clone(valid)
	flipped[100] ^= 1
	f.Add(flipped)
	f.Add([]byte{})
	f.Add(bytes.Repeat([]byte{0xff}, 80))
	f.Fuzz(func(t *testing.T, data []byte) {
		dir := t.TempDir()
		if err := os.WriteFile(filepath.Join(dir, segmentName(0, logSuffix)), data, 0o644); err != nil {
			t.Fatal(err)
		}
		l, err := OpenLog(dir, testConfig(), 0, 0, false, quietLogger())
		if err != nil {
			t.Fatalf("recovery failed: %v", err)
		}
		defer l.Close()
		if l.Size() > int64(len(data)) || !bytes.Equal(data[:l.Size()], mustReadFile(t, filepath.Join(dir, segmentName(0, logSuffix)))) {
			t.Fatal("recovered segment is not a prefix of the input")
		}
		got := readAll(t, l, 0)
		var n int64
		for _, b := range got {
			n += int64(len(b.data))
		}
		if n != l.Size() {
			t.Fatalf("read %d bytes of %d", n, l.Size())
		}
	})
}

func mustReadFile(t *testing.T, p string) []byte {
	t.Helper()
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	return b
}
