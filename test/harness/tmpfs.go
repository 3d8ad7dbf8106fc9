package harness

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"
)

// MountTmpfs mounts a tmpfs of sizeMiB on a fresh directory and unmounts
// it when the test ends: a small disk for a test to fill. Cleanups run
// last-registered first, so a broker started after this call is stopped
// before the unmount. It skips the test where mounting is impossible
// (not root, no tmpfs, no mount).
func MountTmpfs(t testing.TB, sizeMiB int) string {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("a full-disk test needs root to mount a small tmpfs")
	}
	dir := filepath.Join(t.TempDir(), "disk")
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	out, err := exec.CommandContext(ctx, "mount", "-t", "tmpfs", "-o", fmt.Sprintf("size=%dm", sizeMiB), "tmpfs", dir).CombinedOutput()
	if err != nil {
		t.Skipf("a full-disk test needs a small tmpfs, but mount failed: %v: %s", err, out)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if out, err := exec.CommandContext(ctx, "umount", dir).CombinedOutput(); err != nil {
			t.Errorf("umount %s: %v: %s", dir, err, out)
		}
	})
	return dir
}

// FillDisk writes the file path in dir until the filesystem has no room
// left (ENOSPC), and returns it: remove it to free the space.
func FillDisk(t testing.TB, dir string) string {
	t.Helper()
	path := filepath.Join(dir, "ballast")
	f, err := os.Create(path)
	if err != nil {
		t.Fatalf("ballast: %v", err)
	}
	defer f.Close()
	chunk := make([]byte, 64<<10)
	for {
		if _, err := f.Write(chunk); err != nil {
			break // ENOSPC: the disk is full
		}
	}
	// Whatever bytes are left below a chunk go too.
	one := make([]byte, 1)
	for {
		if _, err := f.Write(one); err != nil {
			break
		}
	}
	return path
}
