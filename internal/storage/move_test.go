package storage

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"testing"
)

// moveFixture is a manager on two log dirs holding partition "m-0" in
// the first, with batches appended, the log start raised and a high
// watermark set; want is what the log must read back.
type moveFixture struct {
	dirs []string
	mc   ManagerConfig
	m    *Manager
	tp   TopicPartition
	want []storedBatch
}

func newMoveFixture(t *testing.T) *moveFixture {
	t.Helper()
	f := &moveFixture{dirs: []string{t.TempDir(), t.TempDir()}, tp: TopicPartition{"m", 0}}
	cfg := testConfig()
	cfg.SegmentBytes = 4096
	f.mc = ManagerConfig{Dirs: f.dirs, Defaults: cfg}
	f.m = f.open(t)
	l, err := f.m.GetOrCreate(f.tp, cfg)
	if err != nil {
		t.Fatal(err)
	}
	if got, _ := f.m.DirOf(f.tp); got != f.dirs[0] {
		t.Fatalf("m-0 created in %s", got)
	}
	for range 40 {
		mustAppend(t, l, makeBatch(t, 3, 60, 1, "m"), 0)
	}
	if _, err := l.DeleteRecordsBefore(5); err != nil {
		t.Fatal(err)
	}
	l.SetHighWatermark(l.LogEndOffset() - 3)
	f.want = readAll(t, l, l.LogStartOffset())
	return f
}

func (f *moveFixture) open(t *testing.T) *Manager {
	t.Helper()
	m, err := OpenManager(f.mc, quietLogger())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { m.Close() })
	return m
}

// check asserts that m serves the partition from dir, with the log start,
// high watermark and batches the fixture wrote, and that no other copy or
// leftover remains.
func (f *moveFixture) check(t *testing.T, m *Manager, dir int, hw int64) {
	t.Helper()
	l := m.Get(f.tp)
	if l == nil {
		t.Fatal("m-0 not loaded")
	}
	if got, _ := m.DirOf(f.tp); got != f.dirs[dir] {
		t.Fatalf("m-0 in %s, want %s", got, f.dirs[dir])
	}
	if l.LogStartOffset() != 5 || l.HighWatermark() != hw {
		t.Fatalf("log start %d (want 5), high watermark %d (want %d)", l.LogStartOffset(), l.HighWatermark(), hw)
	}
	got := readAll(t, l, 5)
	if len(got) != len(f.want) {
		t.Fatalf("%d batches read back, want %d", len(got), len(f.want))
	}
	for i := range got {
		if got[i].base != f.want[i].base || !bytes.Equal(got[i].data, f.want[i].data) {
			t.Fatalf("batch %d differs", i)
		}
	}
	for i, d := range f.dirs {
		ents, _ := os.ReadDir(d)
		for _, e := range ents {
			if e.IsDir() && (e.Name() != f.tp.dirName() || i != dir) {
				t.Fatalf("leftover %s in %s", e.Name(), d)
			}
		}
	}
	if _, err := os.Stat(filepath.Join(f.dirs[dir], f.tp.dirName(), moveMarkerFile)); err == nil {
		t.Fatal("move marker left behind")
	}
}

// TestMoveLog: a log moves to the other dir with its data, log start and
// high watermark, stays there across a restart, and refuses unknown dirs
// and partitions.
func TestMoveLog(t *testing.T) {
	f := newMoveFixture(t)
	hw := f.m.Get(f.tp).HighWatermark()
	if _, err := f.m.DirIndex("/no/such/dir"); !errors.Is(err, ErrLogDirNotFound) {
		t.Fatalf("DirIndex of an unknown dir: %v", err)
	}
	if i, err := f.m.DirIndex(f.dirs[1] + "/"); err != nil || i != 1 {
		t.Fatalf("DirIndex(%s/) = %d, %v", f.dirs[1], i, err)
	}
	if err := f.m.MoveLog(TopicPartition{"x", 0}, 1, 0); !errors.Is(err, ErrUnknownPartition) {
		t.Fatalf("moving an unknown partition: %v", err)
	}
	if err := f.m.MoveLog(f.tp, 0, hw); err != nil {
		t.Fatalf("move to the same dir: %v", err)
	}
	if err := f.m.MoveLog(f.tp, 1, hw); err != nil {
		t.Fatal(err)
	}
	f.check(t, f.m, 1, hw)
	// Still appendable where it is now.
	l := f.m.Get(f.tp)
	mustAppend(t, l, makeBatch(t, 1, 10, 1, "m"), 0)
	f.want = readAll(t, l, 5)
	if err := f.m.Close(); err != nil {
		t.Fatal(err)
	}
	f.check(t, f.open(t), 1, hw)
}

// crashState builds what a crash at some point of a move leaves on disk:
// the fixture's log closed in dir 0, and a copy of it in dir 1 named as
// the move names it, with the marker if marked.
func (f *moveFixture) crashState(t *testing.T, marked, sourceRetired bool) int64 {
	t.Helper()
	hw := f.m.Get(f.tp).HighWatermark()
	if err := f.m.Close(); err != nil {
		t.Fatal(err)
	}
	src := filepath.Join(f.dirs[0], f.tp.dirName())
	future := filepath.Join(f.dirs[1], f.tp.dirName()+".0123456789abcdef"+futureSuffix)
	if err := copyLogDir(src, future); err != nil {
		t.Fatal(err)
	}
	if marked {
		if err := os.WriteFile(filepath.Join(future, moveMarkerFile), []byte("5 "+itoa(hw)+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if sourceRetired {
		if err := os.Rename(src, src+".fedcba9876543210-delete"); err != nil {
			t.Fatal(err)
		}
	}
	return hw
}

func itoa(n int64) string { return strconv.FormatInt(n, 10) }

// TestMoveLogCrashBeforeMarker: an unfinished copy is dropped and the
// log stays where it was.
func TestMoveLogCrashBeforeMarker(t *testing.T) {
	f := newMoveFixture(t)
	hw := f.crashState(t, false, false)
	f.check(t, f.open(t), 0, hw)
}

// TestMoveLogCrashAfterMarker: a complete copy replaces the source, with
// the log start and high watermark the marker names (the new dir's
// checkpoints do not know the partition yet).
func TestMoveLogCrashAfterMarker(t *testing.T) {
	f := newMoveFixture(t)
	hw := f.crashState(t, true, false)
	f.check(t, f.open(t), 1, hw)
}

// TestMoveLogCrashAfterRetiringSource: the source was already renamed for
// deletion; the complete copy takes its place.
func TestMoveLogCrashAfterRetiringSource(t *testing.T) {
	f := newMoveFixture(t)
	hw := f.crashState(t, true, true)
	f.check(t, f.open(t), 1, hw)
}

// TestMoveLogCrashAfterSwap: the copy is in place and the source gone,
// but the new dir's checkpoints never heard of the partition: the marker
// still gives the log start offset (records deleted below it stay
// deleted) and the high watermark, and is dropped once checkpointed.
func TestMoveLogCrashAfterSwap(t *testing.T) {
	f := newMoveFixture(t)
	hw := f.crashState(t, true, true)
	future := filepath.Join(f.dirs[1], f.tp.dirName()+".0123456789abcdef"+futureSuffix)
	if err := os.Rename(future, filepath.Join(f.dirs[1], f.tp.dirName())); err != nil {
		t.Fatal(err)
	}
	if err := os.RemoveAll(filepath.Join(f.dirs[0], f.tp.dirName()+".fedcba9876543210-delete")); err != nil {
		t.Fatal(err)
	}
	f.check(t, f.open(t), 1, hw)
}
