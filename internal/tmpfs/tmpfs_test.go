package tmpfs

import (
	"errors"
	"os"
	"path/filepath"
	"syscall"
	"testing"
)

// TestFillAndFree: a filled disk refuses even one byte more; freed, it
// takes writes again. Root only.
func TestFillAndFree(t *testing.T) {
	d, err := Mount(filepath.Join(t.TempDir(), "disk"), 1)
	if err != nil {
		t.Skipf("cannot mount a tmpfs here: %v", err)
	}
	t.Cleanup(func() {
		if err := d.Unmount(); err != nil {
			t.Error(err)
		}
	})
	n, err := d.Fill()
	if err != nil || n < 1<<19 {
		t.Fatalf("Fill: %d bytes, %v", n, err)
	}
	probe := filepath.Join(d.Dir, "probe")
	if err := os.WriteFile(probe, []byte("x"), 0o644); !errors.Is(err, syscall.ENOSPC) {
		t.Fatalf("a byte more on a full disk: %v, want ENOSPC", err)
	}
	if err := d.Free(); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(probe, []byte("x"), 0o644); err != nil {
		t.Fatalf("write after Free: %v", err)
	}
	if err := d.Free(); err != nil {
		t.Fatalf("Free without a ballast: %v", err)
	}
}
