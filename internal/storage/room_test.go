package storage

import (
	"errors"
	"path/filepath"
	"testing"
	"time"

	"github.com/weir-project/weir/internal/tmpfs"
)

// TestWritableProbesForRoom: on a small tmpfs filled up, an append fails
// with ErrStorage and Writable says so too (its probe finds no room);
// once space is freed, Writable says the log is writable again (without
// an append) and appends succeed. Root only (mount).
func TestWritableProbesForRoom(t *testing.T) {
	disk, err := tmpfs.Mount(filepath.Join(t.TempDir(), "disk"), 4)
	if err != nil {
		t.Skipf("needs a small tmpfs: %v", err)
	}
	t.Cleanup(func() {
		if err := disk.Unmount(); err != nil {
			t.Error(err)
		}
	})
	dir := disk.Dir
	l := openLog(t, filepath.Join(dir, "t-0"), testConfig())
	t.Cleanup(func() { l.Close() })
	if err := l.Writable(); err != nil {
		t.Fatalf("fresh log: %v", err)
	}
	mustAppend(t, l, makeBatch(t, 2, 100, 1, "before"), 0)

	if _, err := disk.Fill(); err != nil {
		t.Fatal(err)
	}
	var appendErr error
	for i := 0; appendErr == nil; i++ {
		if i > 10000 {
			t.Fatal("appends still succeed on a full disk")
		}
		_, appendErr = l.Append(makeBatch(t, 4, 1000, 1, "fill"), 0)
	}
	if !errors.Is(appendErr, ErrStorage) {
		t.Fatalf("append on a full disk: %v, want ErrStorage", appendErr)
	}
	end := l.LogEndOffset()
	if err := l.Writable(); !errors.Is(err, ErrStorage) {
		t.Fatalf("Writable on a full disk: %v, want ErrStorage", err)
	}
	if l.LogEndOffset() != end {
		t.Fatal("the probe changed the log")
	}

	if err := disk.Free(); err != nil {
		t.Fatal(err)
	}
	// Probes are spaced (probeInterval): the next one finds the room.
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		err := l.Writable()
		if err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("Writable with room again: %v", err)
		}
	}
	mustAppend(t, l, makeBatch(t, 2, 100, 1, "after"), 0)
	if got := readAll(t, l, 0); got[len(got)-1].base != end {
		t.Fatalf("the append after the room came back is at %d, want %d", got[len(got)-1].base, end)
	}
}
