package harness

import (
	"errors"
	"path/filepath"
	"testing"

	"github.com/weir-project/weir/internal/tmpfs"
)

// MountTmpfs mounts a tmpfs of sizeMiB on a fresh directory and unmounts
// it when the test ends: a small disk for a test to fill. Cleanups run
// last-registered first, so a broker started after this call is stopped
// before the unmount. It skips the test where mounting is impossible
// (not root, no tmpfs, no mount).
func MountTmpfs(t testing.TB, sizeMiB int) *tmpfs.Disk {
	t.Helper()
	d, err := tmpfs.Mount(filepath.Join(t.TempDir(), "disk"), sizeMiB)
	if errors.Is(err, tmpfs.ErrNotRoot) {
		t.Skip("a full-disk test needs root to mount a small tmpfs")
	}
	if err != nil {
		t.Skipf("a full-disk test needs a small tmpfs: %v", err)
	}
	t.Cleanup(func() {
		if err := d.Unmount(); err != nil {
			t.Error(err)
		}
	})
	return d
}
