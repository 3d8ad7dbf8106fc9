package storage

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"
)

// TestWritableProbesForRoom: on a small tmpfs filled up, an append fails
// with ErrStorage and Writable says so too (its probe finds no room);
// once space is freed, Writable says the log is writable again (without
// an append) and appends succeed. Root only (mount).
func TestWritableProbesForRoom(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root to mount a small tmpfs")
	}
	dir := filepath.Join(t.TempDir(), "disk")
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if out, err := exec.CommandContext(ctx, "mount", "-t", "tmpfs", "-o", "size=4m", "tmpfs", dir).CombinedOutput(); err != nil {
		t.Skipf("mount a tmpfs: %v: %s", err, out)
	}
	t.Cleanup(func() {
		if out, err := exec.Command("umount", dir).CombinedOutput(); err != nil {
			t.Errorf("umount: %v: %s", err, out)
		}
	})
	l := openLog(t, filepath.Join(dir, "t-0"), testConfig())
	t.Cleanup(func() { l.Close() })
	if err := l.Writable(); err != nil {
		t.Fatalf("fresh log: %v", err)
	}
	mustAppend(t, l, makeBatch(t, 2, 100, 1, "before"), 0)

	ballast := filepath.Join(dir, "ballast")
	f, err := os.Create(ballast)
	if err != nil {
		t.Fatal(err)
	}
	for err == nil {
		_, err = f.Write(make([]byte, 4096))
	}
	f.Close()
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

	if err := os.Remove(ballast); err != nil {
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
