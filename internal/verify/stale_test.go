package verify

import (
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"testing"
)

// TestCleanStale: a temp data dir whose owner is dead is removed, one
// whose owner lives (this test) is kept, one without an owner is left.
func TestCleanStale(t *testing.T) {
	t.Setenv("TMPDIR", t.TempDir())
	dead := exec.Command("true")
	if err := dead.Run(); err != nil {
		t.Skipf("no true(1): %v", err)
	}
	mk := func(owner int) string {
		dir, err := os.MkdirTemp("", "weir-verify-data")
		if err != nil {
			t.Fatal(err)
		}
		if owner > 0 {
			if err := os.WriteFile(filepath.Join(dir, ownerFile), []byte(strconv.Itoa(owner)+"\n"), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		if err := os.MkdirAll(filepath.Join(dir, "node-1"), 0o755); err != nil {
			t.Fatal(err)
		}
		return dir
	}
	stale, mine, unowned := mk(dead.Process.Pid), mk(os.Getpid()), mk(0)
	removed := cleanStale()
	if len(removed) != 1 || removed[0] != stale {
		t.Fatalf("removed %v, want only %s", removed, stale)
	}
	for _, d := range []string{mine, unowned} {
		if _, err := os.Stat(d); err != nil {
			t.Fatalf("%s removed: %v", d, err)
		}
	}
	if _, err := os.Stat(stale); !os.IsNotExist(err) {
		t.Fatalf("%s still there: %v", stale, err)
	}
}
