package storage

import (
	"os"
	"path/filepath"
	"syscall"
	"testing"
)

// allocated is a file's size and the bytes of disk it holds.
func allocated(t *testing.T, path string) (size, disk int64) {
	t.Helper()
	var st syscall.Stat_t
	if err := syscall.Stat(path, &st); err != nil {
		t.Fatal(err)
	}
	return st.Size, st.Blocks * 512
}

// TestReservedSpaceAheadOfTheAppender: past 1 MiB the active segment has
// blocks reserved past its end while its size stays the bytes written;
// a roll, a truncation and Close give the spare blocks back; recovery
// after a crash (a Close never made) reads exactly the batches written.
func TestReservedSpaceAheadOfTheAppender(t *testing.T) {
	dir := t.TempDir()
	cfg := testConfig()
	cfg.SegmentBytes = 16 << 20
	l := openLog(t, dir, cfg)
	batch := makeBatch(t, 64, 4<<10, 1000, "r") // ~260 KiB
	first := filepath.Join(dir, segmentName(0, logSuffix))

	mustAppend(t, l, batch, 0)
	if size, disk := allocated(t, first); disk > size+64<<10 {
		t.Fatalf("a segment of %d bytes holds %d bytes of disk: small segments reserve nothing", size, disk)
	}
	for l.active().size.Load() < 2<<20 {
		mustAppend(t, l, batch, 0)
	}
	size, disk := allocated(t, first)
	if size != l.active().size.Load() {
		t.Fatalf("file size %d, segment size %d: the reservation changed the size", size, l.active().size.Load())
	}
	if disk < size+reserveChunk/2 {
		t.Skipf("no space reserved (%d bytes of disk for %d): the file system of %s cannot", disk, size, dir)
	}

	// Truncation frees the spare blocks; appends reserve again.
	if err := l.TruncateTo(l.LogEndOffset() - 64); err != nil {
		t.Fatal(err)
	}
	if size, disk := allocated(t, first); disk > size+64<<10 {
		t.Fatalf("after truncation to %d bytes the file holds %d bytes of disk", size, disk)
	}
	for l.active().size.Load() < cfg.SegmentBytes-int64(len(batch)) {
		mustAppend(t, l, batch, 0)
	}
	// Roll: the sealed segment keeps no spare blocks.
	mustAppend(t, l, batch, 0)
	mustAppend(t, l, batch, 0)
	if len(l.segments()) != 2 {
		t.Fatalf("%d segments, want a roll to 2", len(l.segments()))
	}
	if size, disk := allocated(t, first); disk > size+64<<10 {
		t.Fatalf("sealed segment of %d bytes holds %d bytes of disk", size, disk)
	}
	second := filepath.Join(dir, segmentName(l.active().base, logSuffix))
	for l.active().size.Load() < 2<<20 {
		mustAppend(t, l, batch, 0)
	}
	want := readAll(t, l, 0)
	end := l.LogEndOffset()

	// A crash leaves the active segment's spare blocks (recreated on the
	// copy); its size does not include them, and recovery finds exactly
	// what was written.
	crashed := filepath.Join(t.TempDir(), "crashed")
	copyDir(t, dir, crashed) // the files a kill -9 leaves: no Close; spare blocks not copied
	leftover := filepath.Join(crashed, filepath.Base(second))
	f, err := os.OpenFile(leftover, os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	size, _ = allocated(t, leftover)
	if err := fallocateKeepSize(f, size, reserveChunk); err != nil {
		t.Fatal(err)
	}
	f.Close()
	if size2, disk := allocated(t, leftover); size2 != size || disk < size+reserveChunk/2 {
		t.Fatalf("copy: size %d -> %d, disk %d", size, size2, disk)
	}
	l2, err := openLogWithFiles(crashed, cfg, 0, 0, false, quietLogger(), newFileCache(64))
	if err != nil {
		t.Fatal(err)
	}
	if l2.LogEndOffset() != end {
		t.Fatalf("recovered log end %d, want %d", l2.LogEndOffset(), end)
	}
	if got := readAll(t, l2, 0); len(got) != len(want) {
		t.Fatalf("recovered %d batches, want %d", len(got), len(want))
	}
	l2.Close()

	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	if size, disk := allocated(t, second); disk > size+64<<10 {
		t.Fatalf("closed active segment of %d bytes holds %d bytes of disk", size, disk)
	}
}
