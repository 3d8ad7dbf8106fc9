package limits

import (
	"os"
	"path/filepath"
	"testing"
	"time"
)

// The limits are measurements, but each must move exactly the bytes it
// claims; small sizes keep these fast.
func TestLimitsMoveTheirBytes(t *testing.T) {
	dir := t.TempDir()
	const total = 3<<20 + 123
	if r, err := Loopback(total, 100<<10); err != nil || r.Bytes != total || r.Elapsed <= 0 {
		t.Errorf("loopback %+v %v", r, err)
	}
	if r, err := FileAppend(dir, total, 16<<10, 1<<20); err != nil || r.Bytes != total {
		t.Errorf("file append %+v %v", r, err)
	}
	if r, err := Store(dir, total, 100<<10); err != nil || r.Bytes != total || r.CPU <= 0 {
		t.Errorf("store %+v %v", r, err)
	}
	if r, err := DiskWrite(dir, 2<<20); err != nil || r.Bytes != 2<<20 {
		t.Errorf("disk write %+v %v", r, err)
	}
	for _, cold := range []bool{false, true} {
		if r, err := Sendfile(dir, 4<<20, 300<<10, cold); err != nil || r.Bytes != 4<<20 {
			t.Errorf("sendfile cold=%v %+v %v", cold, r, err)
		}
	}
	// 64 KiB writes at 65.5 MB/s: one per millisecond, 100 in 100 ms.
	if ds, err := PacedAppend(dir, 64<<10*1000, 64<<10, 100*time.Millisecond); err != nil || len(ds) != 100 {
		t.Errorf("paced append: %d writes, %v", len(ds), err)
	}
	left, _ := filepath.Glob(filepath.Join(dir, "*"))
	if len(left) != 0 {
		t.Errorf("files left behind: %v", left)
	}
	if err := os.WriteFile(filepath.Join(dir, "x"), []byte("abc"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := Evict(dir); err != nil {
		t.Errorf("evict: %v", err)
	}
}

func TestStallProbe(t *testing.T) {
	late := StartStallProbe().Stop()
	if len(late) == 0 {
		t.Fatal("no wake-ups")
	}
	for _, d := range late {
		if d < -stallNap {
			t.Fatalf("woke %v early", -d)
		}
	}
}
