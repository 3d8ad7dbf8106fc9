package storage

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/weir-project/weir/internal/storage/checkpoint"
)

// TestManagerLifecycle runs with both ways of making the logs durable at
// Close: one syncfs per dir where the platform has it, an fsync per file
// otherwise.
func TestManagerLifecycle(t *testing.T) {
	t.Run("syncfs", func(t *testing.T) {
		if shutdownSyncer() == nil {
			t.Skip("no syncfs that reports errors here")
		}
		testManagerLifecycle(t, shutdownSyncer())
	})
	t.Run("fsync", func(t *testing.T) { testManagerLifecycle(t, nil) })
}

func testManagerLifecycle(t *testing.T, syncFS func(string) error) {
	dirs := []string{t.TempDir(), t.TempDir()}
	cfg := testConfig()
	cfg.SegmentBytes = 2048
	mc := ManagerConfig{Dirs: dirs, Defaults: cfg}
	m, err := OpenManager(mc, quietLogger())
	if err != nil {
		t.Fatal(err)
	}
	m.syncFS = syncFS
	tps := []TopicPartition{{"a", 0}, {"a", 1}, {"b-x", 0}, {"b-x", 12}}
	for i, tp := range tps {
		l, err := m.GetOrCreate(tp, cfg)
		if err != nil {
			t.Fatal(err)
		}
		for range 10 * (i + 1) {
			mustAppend(t, l, makeBatch(t, 2, 50, 1, tp.Topic), 0)
		}
	}
	// Placement: the dir with fewest partitions gets the next one.
	for _, d := range dirs {
		ents, _ := filepath.Glob(filepath.Join(d, "*-*"))
		if len(ents) != 2 {
			t.Fatalf("dir %s holds %v", d, ents)
		}
	}
	if got := m.Partitions(); len(got) != 4 || got[0] != (TopicPartition{"a", 0}) || got[3] != (TopicPartition{"b-x", 12}) {
		t.Fatalf("Partitions = %v", got)
	}
	if _, err := m.GetOrCreate(TopicPartition{"../evil", 0}, cfg); err == nil {
		t.Fatal("accepted a path in a topic name")
	}
	if err := m.Delete(TopicPartition{"a", 1}); err != nil {
		t.Fatal(err)
	}
	if m.Get(TopicPartition{"a", 1}) != nil {
		t.Fatal("deleted partition still served")
	}
	if err := m.Close(); err != nil {
		t.Fatal(err)
	}
	for _, d := range dirs {
		if _, err := os.Stat(filepath.Join(d, cleanShutdownFile)); err != nil {
			t.Fatalf("no clean-shutdown marker in %s", d)
		}
		rps, err := checkpoint.ReadOffsets(filepath.Join(d, recoveryPointFile))
		if err != nil || len(rps) == 0 {
			t.Fatalf("recovery points in %s: %v %v", d, rps, err)
		}
		for tp, off := range rps {
			if tp.Topic == "a" && tp.Partition == 1 {
				t.Fatal("deleted partition checkpointed")
			}
			if off == 0 {
				t.Fatalf("recovery point of %v is 0 after Close", tp)
			}
		}
	}

	m2, err := OpenManager(mc, quietLogger())
	if err != nil {
		t.Fatal(err)
	}
	defer m2.Close()
	for _, d := range dirs {
		if _, err := os.Stat(filepath.Join(d, cleanShutdownFile)); !os.IsNotExist(err) {
			t.Fatal("marker not removed at open")
		}
	}
	if len(m2.Partitions()) != 3 {
		t.Fatalf("reloaded %v", m2.Partitions())
	}
	if l := m2.Get(TopicPartition{"b-x", 12}); l == nil || l.LogEndOffset() != 80 {
		t.Fatalf("b-x-12 not reloaded intact")
	}
	if st := m2.LoadStats(); st.RecoveredLogs != 0 {
		t.Fatalf("%d logs recovered after a clean shutdown", st.RecoveredLogs)
	}
}

func TestManagerRunRetentionAndCheckpoints(t *testing.T) {
	dir := t.TempDir()
	cfg := testConfig()
	cfg.SegmentBytes = 1024
	cfg.RetentionBytes = 2048
	m, err := OpenManager(ManagerConfig{Dirs: []string{dir}, Defaults: cfg,
		RetentionCheckIntervalMs: 10, CheckpointIntervalMs: 10, FlushSchedulerIntervalMs: 10}, quietLogger())
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	l, err := m.GetOrCreate(TopicPartition{"r", 0}, cfg)
	if err != nil {
		t.Fatal(err)
	}
	for range 100 {
		mustAppend(t, l, makeBatch(t, 1, 100, 1, "r"), 0)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { m.Run(ctx); close(done) }()
	defer func() { cancel(); <-done }()
	waitFor(t, func() bool { return l.Size() <= 2048+cfg.SegmentBytes && l.LogStartOffset() > 0 })
	waitFor(t, func() bool {
		lsos, err := checkpoint.ReadOffsets(filepath.Join(dir, logStartFile))
		return err == nil && lsos[checkpoint.TopicPartition{Topic: "r", Partition: 0}] == l.LogStartOffset()
	})
}

func TestManagerFinishesInterruptedDelete(t *testing.T) {
	dir := t.TempDir()
	tomb := filepath.Join(dir, "gone-0.abcdef-delete")
	os.MkdirAll(tomb, 0o755)
	os.WriteFile(filepath.Join(tomb, segmentName(0, logSuffix)), []byte("x"), 0o644)
	m, err := OpenManager(ManagerConfig{Dirs: []string{dir}, Defaults: testConfig()}, quietLogger())
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	if _, err := os.Stat(tomb); !os.IsNotExist(err) {
		t.Fatal("tombstoned dir kept")
	}
	if len(m.Partitions()) != 0 {
		t.Fatalf("loaded %v", m.Partitions())
	}
}

func TestParseTopicPartition(t *testing.T) {
	for name, ok := range map[string]bool{"a-0": true, "a-b-3": true, "a": false, "-1": false, "a-01": false, "a-0.x-delete": false} {
		if _, got := parseTopicPartition(name); got != ok {
			t.Errorf("%q: %v", name, got)
		}
	}
}

// managerWithLog opens a manager on mc and partition tp in it, with
// batches records of one value tagged tag appended in epoch 0.
func managerWithLog(t *testing.T, mc ManagerConfig, tp TopicPartition, batches int, tag string) (*Manager, *Log) {
	t.Helper()
	m, err := OpenManager(mc, quietLogger())
	if err != nil {
		t.Fatal(err)
	}
	l, err := m.GetOrCreate(tp, mc.Defaults)
	if err != nil {
		t.Fatal(err)
	}
	for range batches {
		mustAppend(t, l, makeBatch(t, 1, 10, 1, tag), 0)
	}
	return m, l
}

// reloaded opens mc again, as after a crash or restart, and returns tp's
// log; the manager closes at the end of the test.
func reloaded(t *testing.T, mc ManagerConfig, tp TopicPartition) *Log {
	t.Helper()
	m, err := OpenManager(mc, quietLogger())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { m.Close() })
	l := m.Get(tp)
	if l == nil {
		t.Fatalf("partition %v not loaded", tp)
	}
	return l
}

// A partition deleted and created again (the broker does this when a
// topic id changes) must not inherit its former self's checkpointed
// offsets: after a crash before the next periodic checkpoint, a stale log
// start beyond the new log's end made recovery discard every new record.
func TestManagerRecreatedPartitionSurvivesCrash(t *testing.T) {
	cfg := testConfig()
	mc := ManagerConfig{Dirs: []string{t.TempDir()}, Defaults: cfg}
	tp := TopicPartition{"again", 0}
	m, old := managerWithLog(t, mc, tp, 10, "old")
	if _, err := old.DeleteRecordsBefore(8); err != nil {
		t.Fatal(err)
	}
	if err := m.Checkpoint(); err != nil {
		t.Fatal(err)
	}
	if err := m.Delete(tp); err != nil {
		t.Fatal(err)
	}
	l, err := m.GetOrCreate(tp, cfg)
	if err != nil {
		t.Fatal(err)
	}
	for range 3 {
		mustAppend(t, l, makeBatch(t, 1, 10, 1, "new"), 0)
	}
	if err := l.Flush(); err != nil {
		t.Fatal(err)
	}
	// Crash: the manager neither checkpoints again nor marks a clean
	// shutdown; the log's files are simply let go.
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}

	l2 := reloaded(t, mc, tp)
	if l2.LogStartOffset() != 0 || l2.LogEndOffset() != 3 {
		t.Fatalf("recreated partition reloaded as [%d, %d), want [0, 3)", l2.LogStartOffset(), l2.LogEndOffset())
	}
	if got := readAll(t, l2, 0); len(got) != 3 {
		t.Fatalf("read %d batches after reload, want 3", len(got))
	}
}

// A truncation below the log start (a follower whose leader has less
// than its log start) lowers the log start. A crash before the next
// periodic checkpoint applied the old, higher log start at load, past the
// new log end, and recovery discarded every record written since.
func TestManagerTruncationBelowLogStartSurvivesCrash(t *testing.T) {
	mc := ManagerConfig{Dirs: []string{t.TempDir()}, Defaults: testConfig()}
	tp := TopicPartition{"follower", 0}
	m, l := managerWithLog(t, mc, tp, 10, "old")
	if _, err := l.DeleteRecordsBefore(8); err != nil {
		t.Fatal(err)
	}
	if err := m.Checkpoint(); err != nil {
		t.Fatal(err)
	}
	if err := l.TruncateTo(5); err != nil {
		t.Fatal(err)
	}
	if l.LogStartOffset() != 5 || l.LogEndOffset() != 5 {
		t.Fatalf("after truncation [%d, %d), want [5, 5)", l.LogStartOffset(), l.LogEndOffset())
	}
	for range 2 {
		mustAppend(t, l, makeBatch(t, 1, 10, 1, "new"), 1)
	}
	if err := l.Flush(); err != nil {
		t.Fatal(err)
	}
	// Crash: no further checkpoint, no clean-shutdown marker.
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}

	l2 := reloaded(t, mc, tp)
	if l2.LogStartOffset() != 5 || l2.LogEndOffset() != 7 {
		t.Fatalf("reloaded as [%d, %d), want [5, 7)", l2.LogStartOffset(), l2.LogEndOffset())
	}
	if got := readAll(t, l2, 5); len(got) != 2 {
		t.Fatalf("read %d batches after reload, want 2", len(got))
	}
}

// DeleteRecords inside a segment is durable when it returns: a crash
// right after it, before any periodic checkpoint, reloads the raised log
// start instead of the records below it (which a replica that had
// reported its start past them would then serve again as leader). A start
// raised to a segment's base needs no checkpoint: the files say it.
func TestManagerDeleteRecordsSurvivesCrash(t *testing.T) {
	mc := ManagerConfig{Dirs: []string{t.TempDir()}, Defaults: testConfig()}
	tp := TopicPartition{"deleted", 0}
	m, l := managerWithLog(t, mc, tp, 10, "v")
	if err := m.Checkpoint(); err != nil { // log start 0 on disk
		t.Fatal(err)
	}
	if start, err := l.DeleteRecordsBefore(6); err != nil || start != 6 {
		t.Fatalf("DeleteRecordsBefore(6): %d, %v", start, err)
	}
	if err := l.Flush(); err != nil {
		t.Fatal(err)
	}
	// Crash: no checkpoint of the manager's own, no clean-shutdown marker.
	if err := l.crash(); err != nil {
		t.Fatal(err)
	}

	l2 := reloaded(t, mc, tp)
	if l2.LogStartOffset() != 6 || l2.LogEndOffset() != 10 {
		t.Fatalf("reloaded as [%d, %d), want [6, 10): the deleted records came back", l2.LogStartOffset(), l2.LogEndOffset())
	}
}

// TestDurableLogStart: a start raised inside a segment counts as durable
// (DurableLogStartOffset, what a follower reports) only once its
// checkpoint is written; a failed write leaves it raised but not durable,
// and a later call for the same start writes it again. A start at a
// segment's base needs no write.
func TestDurableLogStart(t *testing.T) {
	cfg := testConfig()
	cfg.SegmentBytes = 1024
	m, l := managerWithLog(t, ManagerConfig{Dirs: []string{t.TempDir()}, Defaults: cfg}, TopicPartition{"durable", 0},
		40, "value of some length to roll segments")
	defer m.Close()
	segs := l.segments()
	if len(segs) < 3 {
		t.Fatalf("%d segments, want 3 or more", len(segs))
	}
	written := l.syncStart
	l.syncStart = func() error { return errors.New("injected checkpoint failure") }
	inside := segs[1].base + 1
	if _, err := l.DeleteRecordsBefore(inside); !errors.Is(err, ErrStorage) {
		t.Fatalf("DeleteRecordsBefore with a failing checkpoint: %v, want ErrStorage (KAFKA_STORAGE_ERROR)", err)
	}
	if l.LogStartOffset() != inside || l.DurableLogStartOffset() != 0 {
		t.Fatalf("after a failed checkpoint: start %d durable %d, want %d and 0", l.LogStartOffset(), l.DurableLogStartOffset(), inside)
	}
	l.syncStart = written
	if start, err := l.DeleteRecordsBefore(inside - 1); err != nil || start != inside {
		t.Fatalf("DeleteRecordsBefore again: %d, %v", start, err)
	}
	if got := l.DurableLogStartOffset(); got != inside {
		t.Fatalf("durable start %d after the checkpoint, want %d", got, inside)
	}
	l.syncStart = func() error { t.Error("a checkpoint for a start at a segment's base"); return nil }
	if _, err := l.DeleteRecordsBefore(segs[2].base); err != nil {
		t.Fatal(err)
	}
	if got := l.DurableLogStartOffset(); got != segs[2].base {
		t.Fatalf("durable start %d, want the segment base %d", got, segs[2].base)
	}
}

// TestManagerRefusesDuplicatePartitionDirs: one partition in two log dirs
// is ambiguous (which copy is current?); like Kafka, refuse to start and
// name both directories instead of silently keeping one.
func TestManagerRefusesDuplicatePartitionDirs(t *testing.T) {
	dirs := []string{t.TempDir(), t.TempDir()}
	for _, d := range dirs {
		l, err := OpenLog(filepath.Join(d, "t-0"), testConfig(), 0, 0, false, quietLogger())
		if err != nil {
			t.Fatal(err)
		}
		mustAppend(t, l, makeBatch(t, 1, 10, 1, "x"), 0)
		if err := l.Close(); err != nil {
			t.Fatal(err)
		}
	}
	m, err := OpenManager(ManagerConfig{Dirs: dirs, Defaults: testConfig()}, quietLogger())
	if err == nil {
		m.Close()
		t.Fatal("OpenManager accepted partition t-0 in two log dirs")
	}
	for _, d := range dirs {
		if p := filepath.Join(d, "t-0"); !strings.Contains(err.Error(), p) {
			t.Fatalf("error %q does not name %s", err, p)
		}
	}
}

// TestManagerTornWriteSkipsCleanShutdown: a write that fails and whose
// truncation fails too leaves a torn tail past the published size. The log
// must refuse further writes, and the dir must not claim a clean shutdown,
// so the next start recovers (cuts the tail) instead of trusting the files.
func TestManagerTornWriteSkipsCleanShutdown(t *testing.T) {
	dir := t.TempDir()
	mc := ManagerConfig{Dirs: []string{dir}, Defaults: testConfig()}
	m, err := OpenManager(mc, quietLogger())
	if err != nil {
		t.Fatal(err)
	}
	tp := TopicPartition{"torn", 0}
	l, err := m.GetOrCreate(tp, testConfig())
	if err != nil {
		t.Fatal(err)
	}
	mustAppend(t, l, makeBatch(t, 1, 10, 1, "ok"), 0)

	// A read-only handle makes both the write and the truncation fail.
	// Holding a use of the cached descriptor keeps it from being evicted
	// while the test swaps it.
	seg := l.active()
	rw, err := seg.file.acquire()
	if err != nil {
		t.Fatal(err)
	}
	ro, err := os.Open(seg.logPath())
	if err != nil {
		t.Fatal(err)
	}
	seg.file.f.Store(ro)
	if _, err := l.Append(makeBatch(t, 1, 10, 1, "fails"), 0); !errors.Is(err, ErrStorage) {
		t.Fatalf("append through a read-only file: %v, want ErrStorage", err)
	}
	// The failed write left bytes behind (as a short write can).
	seg.file.f.Store(rw)
	seg.file.release()
	ro.Close()
	if _, err := rw.WriteAt([]byte("torn tail"), seg.size.Load()); err != nil {
		t.Fatal(err)
	}
	if _, err := l.Append(makeBatch(t, 1, 10, 1, "after"), 0); !errors.Is(err, ErrStorage) {
		t.Fatalf("append after a torn write: %v, want ErrStorage", err)
	}
	if err := l.MaybeRoll(time.Now().Add(1000 * time.Hour)); err != nil || l.NumSegments() != 1 {
		t.Fatalf("roll after a torn write: %v, %d segments; want no roll", err, l.NumSegments())
	}
	if err := m.Close(); err == nil {
		t.Fatal("Close reported no error for a log with a torn write")
	}
	if _, err := os.Stat(filepath.Join(dir, cleanShutdownFile)); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("clean-shutdown marker written despite the torn write (stat: %v)", err)
	}

	m2, err := OpenManager(mc, quietLogger())
	if err != nil {
		t.Fatalf("reopen after the torn write: %v", err)
	}
	defer m2.Close()
	l2 := m2.Get(tp)
	if l2.LogEndOffset() != 1 || len(readAll(t, l2, 0)) != 1 {
		t.Fatalf("reopened log ends at %d, want 1", l2.LogEndOffset())
	}
	mustAppend(t, l2, makeBatch(t, 1, 10, 1, "again"), 0)
}
