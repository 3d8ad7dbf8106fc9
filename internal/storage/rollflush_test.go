package storage

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"syscall"
	"testing"
	"time"

	"github.com/weir-project/weir/internal/storage/checkpoint"
)

// flushGate holds a log's roll flusher at its start (the beforeRollFlush
// hook): entered receives each flush's target as it starts, and the flush
// then waits for release, going on with nil and failing with an error.
// A test that holds the flusher knows for sure that no fsync of the
// rolled segments has happened yet.
type flushGate struct {
	entered chan int64
	release chan error
}

// gateRollFlush installs a flushGate; call it before the log is shared,
// and after openLog (so that the gate opens for good, letting Close
// finish, before the log's cleanup closes it).
func gateRollFlush(t testing.TB, l *Log) *flushGate {
	g := &flushGate{entered: make(chan int64, 1024), release: make(chan error)}
	l.beforeRollFlush = func(_ string, target int64) error {
		g.entered <- target
		return <-g.release
	}
	t.Cleanup(func() { close(g.release) })
	return g
}

// wait returns the target of the flush the gate holds now.
func (g *flushGate) wait(t testing.TB) int64 {
	t.Helper()
	select {
	case target := <-g.entered:
		return target
	case <-time.After(30 * time.Second):
		t.Fatal("no roll flush started within 30s")
		return 0
	}
}

// rollFlushConfig has 4 KiB segments: a roll every few batches.
func rollFlushConfig() Config {
	cfg := testConfig()
	cfg.SegmentBytes = 4096
	cfg.IndexIntervalBytes = 256
	return cfg
}

// appendUntilRolls appends batches until the log has n segments.
func appendUntilRolls(t testing.TB, l *Log, n int, epoch int32) {
	t.Helper()
	for i := 0; l.NumSegments() < n; i++ {
		mustAppend(t, l, makeBatch(t, 2, 200, int64(i), fmt.Sprintf("r%d", i)), epoch)
	}
}

// TestRollFlushOutsideTheLock: while the flush of a rolled segment has
// not even started its fsyncs (the gate holds it), appends, reads and
// further rolls go on, and the recovery point stays below the rolled
// segment; once the flush is let through, the recovery point moves to
// the latest roll's base. With the old segment fsynced under the log's
// lock (the code before), the appends here could not run while it was.
func TestRollFlushOutsideTheLock(t *testing.T) {
	l := openLog(t, t.TempDir(), rollFlushConfig())
	g := gateRollFlush(t, l)
	appendUntilRolls(t, l, 2, 0)
	target := g.wait(t)
	if target != l.active().base || l.RecoveryPoint() != 0 {
		t.Fatalf("flush target %d, active base %d, recovery point %d", target, l.active().base, l.RecoveryPoint())
	}
	appendUntilRolls(t, l, 4, 0) // two more rolls while the first flush is held
	if rp := l.RecoveryPoint(); rp != 0 {
		t.Fatalf("recovery point %d before any flush ran", rp)
	}
	if got := readAll(t, l, 0); int64(len(got)) == 0 || got[len(got)-1].base >= l.LogEndOffset() {
		t.Fatalf("read while the flush is held: %d batches", len(got))
	}
	g.release <- nil
	if next := g.wait(t); next != l.active().base { // the flusher carries on to the latest roll
		t.Fatalf("second flush target %d, active base %d", next, l.active().base)
	}
	g.release <- nil
	waitRollFlushed(t, l)
	if rp := l.RecoveryPoint(); rp != l.active().base {
		t.Fatalf("recovery point %d after the flushes, want the active base %d", rp, l.active().base)
	}
	// The sealed segments' indexes are on disk now: recovery trusts them.
	for _, s := range l.segments()[:l.NumSegments()-1] {
		if st, err := os.Stat(s.offIdx.Path()); err != nil || st.Size() == 0 {
			t.Fatalf("offset index of flushed segment %d: %v", s.base, err)
		}
	}
}

// TestRollFlushKillBeforeFsync is the on-disk state of a kill -9 while
// a roll's flush is held before its fsyncs: the files as they are then
// (copied), with the recovery point checkpointed then, recover every
// batch. The recovery point is below the rolled segment, so recovery
// rescans it instead of trusting its unwritten indexes.
func TestRollFlushKillBeforeFsync(t *testing.T) {
	dir := t.TempDir()
	cfg := rollFlushConfig()
	l := openLog(t, dir, cfg)
	g := gateRollFlush(t, l)
	appendUntilRolls(t, l, 3, 0)
	g.wait(t)
	mustAppend(t, l, makeBatch(t, 1, 100, 99, "after-roll"), 0)
	want := readAll(t, l, 0)
	rp := l.RecoveryPoint()
	killed := filepath.Join(t.TempDir(), "killed")
	copyDir(t, dir, killed) // the gate opens for good at the test's end

	re, err := OpenLog(killed, cfg, rp, 0, false, quietLogger())
	if err != nil {
		t.Fatalf("recover the killed log: %v", err)
	}
	defer re.Close()
	if got := readAll(t, re, 0); !slices.EqualFunc(got, want, func(a, b storedBatch) bool { return a.base == b.base && string(a.data) == string(b.data) }) {
		t.Fatalf("recovered %d batches, want %d", len(got), len(want))
	}
}

// TestRollFlushTruncatedMeanwhile: a truncation while a flush is held
// keeps that flush from moving the recovery point to its target, which
// may now lie past the log end: the recovery point stays at or below the
// truncated end. The flusher then plans again below the new active
// segment. A naive flush that moved the recovery point to its target on
// success would put it past the end, and a restart would trust a
// segment that no longer holds what the recovery point says.
func TestRollFlushTruncatedMeanwhile(t *testing.T) {
	for _, tc := range []struct {
		name     string
		truncate func(l *Log, flushed, target int64) error
	}{
		{"TruncateTo", func(l *Log, flushed, target int64) error { return l.TruncateTo(flushed + 1) }},
		{"TruncateFullyAndStartAt", func(l *Log, flushed, target int64) error { return l.TruncateFullyAndStartAt(target + 100) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			cfg := rollFlushConfig()
			l := openLog(t, dir, cfg)
			g := gateRollFlush(t, l)
			appendUntilRolls(t, l, 2, 0)
			g.wait(t)
			g.release <- nil
			waitRollFlushed(t, l)
			flushed := l.RecoveryPoint()
			appendUntilRolls(t, l, 3, 0)
			target := g.wait(t)
			if err := tc.truncate(l, flushed, target); err != nil {
				t.Fatal(err)
			}
			end := l.LogEndOffset()
			if end >= target && tc.name == "TruncateTo" {
				t.Fatalf("truncated to %d, not below the flush target %d", end, target)
			}
			g.release <- nil
			waitRollFlushed(t, l)
			if rp := l.RecoveryPoint(); rp > end || rp > l.LogEndOffset() {
				t.Fatalf("recovery point %d past the truncated end %d (flush target was %d)", rp, end, target)
			}
			// The log goes on: the next roll's flush moves the point again.
			appendUntilRolls(t, l, l.NumSegments()+1, 0)
			g.wait(t)
			g.release <- nil
			waitRollFlushed(t, l)
			if rp := l.RecoveryPoint(); rp != l.active().base {
				t.Fatalf("recovery point %d after a later roll, want %d", rp, l.active().base)
			}
			want := readAll(t, l, l.LogStartOffset())
			rp, start := l.RecoveryPoint(), l.LogStartOffset()
			if err := l.crash(); err != nil {
				t.Fatal(err)
			}
			re, err := OpenLog(dir, cfg, rp, start, false, quietLogger())
			if err != nil {
				t.Fatalf("recover: %v", err)
			}
			defer re.Close()
			if got := readAll(t, re, start); len(got) != len(want) {
				t.Fatalf("recovered %d batches, want %d", len(got), len(want))
			}
		})
	}
}

// TestRollFlushSegmentsGoneMeanwhile: segments that leave the log while
// their flush is held (DeleteRecords, retention, a cleaner swap) may
// fail that flush, their files being gone (file.delete.delay.ms is 0
// here, and the test waits for the removal). That is no storage error:
// the log keeps taking writes and the recovery point moves on.
func TestRollFlushSegmentsGoneMeanwhile(t *testing.T) {
	for _, tc := range []struct {
		name   string
		cfg    func() Config
		remove func(t *testing.T, l *Log, target int64)
	}{
		{"DeleteRecords", rollFlushConfig, func(t *testing.T, l *Log, target int64) {
			if _, err := l.DeleteRecordsBefore(target); err != nil {
				t.Fatal(err)
			}
		}},
		{"Retention", func() Config {
			c := rollFlushConfig()
			c.RetentionBytes = 1
			return c
		}, func(t *testing.T, l *Log, target int64) {
			if n, err := l.EnforceRetention(time.Now()); err != nil || n == 0 {
				t.Fatalf("retention deleted %d segments: %v", n, err)
			}
		}},
		{"Compaction", func() Config {
			c := compactConfig()
			c.SegmentBytes = 4096
			return c
		}, func(t *testing.T, l *Log, target int64) {
			if st := cleanAt(t, l, time.Now()); st.RecordsRead == 0 {
				t.Fatalf("cleaner read nothing: %+v", st)
			}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := tc.cfg()
			l := openLog(t, t.TempDir(), cfg)
			g := gateRollFlush(t, l)
			for i := 0; l.NumSegments() < 2; i++ {
				mustAppend(t, l, keyedBatch(t, batchOpts{ts: time.Now().UnixMilli()}, kv{key: "k", value: fmt.Sprintf("v%04d-%0300d", i, i)}), 0)
			}
			target := g.wait(t)
			old := l.segments()[0]
			tc.remove(t, l, target)
			if slices.Contains(l.segments(), old) {
				t.Fatal("the flushed segment is still in the log")
			}
			// Its files, renamed *.deleted, go at once (delay 0).
			for _, p := range []string{old.logPath(), old.offIdx.Path(), old.timeIdx.Path()} {
				deadline := time.Now().Add(30 * time.Second)
				for {
					if _, err := os.Stat(p); errors.Is(err, os.ErrNotExist) {
						break
					}
					if time.Now().After(deadline) {
						t.Fatalf("%s not removed within 30s", p)
					}
					time.Sleep(time.Millisecond)
				}
			}
			g.release <- nil
			waitRollFlushed(t, l)
			l.mu.Lock()
			failed := l.syncFailed
			l.mu.Unlock()
			if failed != nil {
				t.Fatalf("flush of a segment removed meanwhile taken for a storage error: %v", failed)
			}
			if rp := l.RecoveryPoint(); rp < target {
				t.Fatalf("recovery point %d, want at least %d", rp, target)
			}
			mustAppend(t, l, keyedBatch(t, batchOpts{ts: time.Now().UnixMilli()}, kv{key: "k", value: "after"}), 0)
		})
	}
}

// TestRollFlushCloseWaits: Close (and Delete) wait for a running flush to
// finish before they close the files, and leave no flusher behind: the
// flush held at the gate completes (the recovery point moves) before
// Close returns.
func TestRollFlushCloseWaits(t *testing.T) {
	for _, del := range []bool{false, true} {
		t.Run(fmt.Sprintf("delete=%v", del), func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "t-0")
			l, err := OpenLog(dir, rollFlushConfig(), 0, 0, false, quietLogger())
			if err != nil {
				t.Fatal(err)
			}
			g := gateRollFlush(t, l)
			appendUntilRolls(t, l, 2, 0)
			target := g.wait(t)
			done := make(chan error, 1)
			go func() {
				if del {
					done <- l.Delete()
				} else {
					done <- l.Close()
				}
			}()
			// Close must be waiting for the flush; let the flush go.
			g.release <- nil
			if err := <-done; err != nil {
				t.Fatal(err)
			}
			if rp := l.RecoveryPoint(); rp != target {
				t.Fatalf("recovery point %d after close, want %d: Close did not wait for the flush", rp, target)
			}
			l.mu.Lock()
			running := l.flushing
			l.mu.Unlock()
			if running {
				t.Fatal("flusher still running after close")
			}
			if _, err := l.Append(makeBatch(t, 1, 10, 1, "late"), 0); !errors.Is(err, ErrClosed) {
				t.Fatalf("append after close: %v", err)
			}
		})
	}
}

// TestRollFlushFailure: a failed fsync of a rolled segment keeps the
// recovery point below it and makes the log refuse writes (and Flush)
// with ErrStorage until restart; the log dir is not marked cleanly shut
// down, and the next start recovers it and takes writes again. A lack of
// room (ENOSPC) instead only leaves the recovery point where it is until
// the next flush, which then succeeds.
func TestRollFlushFailure(t *testing.T) {
	t.Run("fsync", func(t *testing.T) {
		dir := t.TempDir()
		mc := ManagerConfig{Dirs: []string{dir}, Defaults: rollFlushConfig()}
		gate := make(chan struct{})
		mc.BeforeRollFlush = func(string, int64) error {
			<-gate
			return fsyncError{errors.New("fsync: input/output error (injected)")}
		}
		m, err := OpenManager(mc, quietLogger())
		if err != nil {
			t.Fatal(err)
		}
		tp := TopicPartition{"fsync", 0}
		l, err := m.GetOrCreate(tp, rollFlushConfig())
		if err != nil {
			t.Fatal(err)
		}
		appendUntilRolls(t, l, 2, 0)
		want := readAll(t, l, 0)
		gate <- struct{}{}
		waitRollFlushed(t, l)
		if rp := l.RecoveryPoint(); rp != 0 {
			t.Fatalf("recovery point %d after a failed flush", rp)
		}
		if _, err := l.Append(makeBatch(t, 1, 10, 1, "refused"), 0); !errors.Is(err, ErrStorage) {
			t.Fatalf("append after a failed flush: %v, want ErrStorage", err)
		}
		if err := l.Writable(); !errors.Is(err, ErrStorage) {
			t.Fatalf("Writable after a failed flush: %v, want ErrStorage", err)
		}
		if err := l.Flush(); !errors.Is(err, ErrStorage) || l.RecoveryPoint() != 0 {
			t.Fatalf("Flush after a failed flush: %v, recovery point %d", err, l.RecoveryPoint())
		}
		if err := m.Close(); err == nil {
			t.Fatal("Close reported no error after a failed flush")
		}
		if _, err := os.Stat(filepath.Join(dir, cleanShutdownFile)); !errors.Is(err, os.ErrNotExist) {
			t.Fatalf("clean-shutdown marker written after a failed flush (stat: %v)", err)
		}
		rps, err := checkpoint.ReadOffsets(filepath.Join(dir, recoveryPointFile))
		if err != nil || rps[checkpoint.TopicPartition{Topic: "fsync", Partition: 0}] != 0 {
			t.Fatalf("checkpointed recovery points %v (%v), want 0", rps, err)
		}
		m2, err := OpenManager(ManagerConfig{Dirs: []string{dir}, Defaults: rollFlushConfig()}, quietLogger())
		if err != nil {
			t.Fatalf("reopen: %v", err)
		}
		defer m2.Close()
		l2 := m2.Get(tp)
		if got := readAll(t, l2, 0); len(got) != len(want) {
			t.Fatalf("reopened log holds %d batches, want %d", len(got), len(want))
		}
		mustAppend(t, l2, makeBatch(t, 1, 10, 1, "again"), 0)
	})
	t.Run("no room", func(t *testing.T) {
		l := openLog(t, t.TempDir(), rollFlushConfig())
		g := gateRollFlush(t, l)
		appendUntilRolls(t, l, 2, 0)
		g.wait(t)
		g.release <- fmt.Errorf("write index: %w", syscall.ENOSPC)
		waitRollFlushed(t, l)
		if rp := l.RecoveryPoint(); rp != 0 {
			t.Fatalf("recovery point %d after a flush without room", rp)
		}
		mustAppend(t, l, makeBatch(t, 1, 10, 1, "still taken"), 0)
		if err := l.Flush(); err != nil || l.RecoveryPoint() != l.LogEndOffset() {
			t.Fatalf("Flush: %v, recovery point %d, log end %d", err, l.RecoveryPoint(), l.LogEndOffset())
		}
	})
}

// TestEpochsDurableBeforeRecoveryPoint: the first append of a leader
// epoch writes no file; leader-epoch-checkpoint holds the epoch before
// the recovery point passes its start (a roll's flush, Flush, Close),
// and a crash before that restores it from the batches, which recovery
// rescans. So after any crash the cache holds every epoch of the log.
func TestEpochsDurableBeforeRecoveryPoint(t *testing.T) {
	dir := t.TempDir()
	cfg := rollFlushConfig()
	l := openLog(t, dir, cfg)
	g := gateRollFlush(t, l)
	file := filepath.Join(dir, leaderEpochFile)
	onFile := func() []checkpoint.EpochEntry {
		t.Helper()
		e, err := checkpoint.ReadEpochs(file)
		if err != nil {
			t.Fatal(err)
		}
		return e
	}
	mustAppend(t, l, makeBatch(t, 1, 10, 0, "e1"), 1)
	if e := onFile(); len(e) != 0 {
		t.Fatalf("the first append of epoch 1 wrote %v", e)
	}
	appendUntilRolls(t, l, 2, 1)
	target := g.wait(t)
	mustAppend(t, l, makeBatch(t, 1, 10, 0, "e2"), 2) // epoch 2, in the new segment
	if e := onFile(); len(e) != 0 || l.RecoveryPoint() != 0 {
		t.Fatalf("file %v, recovery point %d while the flush is held", e, l.RecoveryPoint())
	}
	g.release <- nil
	waitRollFlushed(t, l)
	if l.RecoveryPoint() != target || !slices.Equal(onFile(), l.LeaderEpochs().Entries()) {
		t.Fatalf("after the flush: recovery point %d (want %d), file %v, cache %v", l.RecoveryPoint(), target, onFile(), l.LeaderEpochs().Entries())
	}

	// Epoch 3 begins above the recovery point; a crash now loses the
	// file's update but not the epoch.
	start3 := l.LogEndOffset()
	mustAppend(t, l, makeBatch(t, 1, 10, 0, "e3"), 3)
	if e := onFile(); slices.ContainsFunc(e, func(x checkpoint.EpochEntry) bool { return x.Epoch == 3 }) {
		t.Fatalf("epoch 3 written at its first append: %v", e)
	}
	want := l.LeaderEpochs().Entries()
	rp := l.RecoveryPoint()
	if err := l.crash(); err != nil {
		t.Fatal(err)
	}
	re, err := OpenLog(dir, cfg, rp, 0, false, quietLogger())
	if err != nil {
		t.Fatal(err)
	}
	if got := re.LeaderEpochs().Entries(); !slices.Equal(got, want) {
		t.Fatalf("after a crash: epochs %v, want %v (epoch 3 from %d)", got, want, start3)
	}
	// Flush and Close write what recovery put in memory.
	if err := re.Flush(); err != nil || !slices.Equal(onFile(), want) {
		t.Fatalf("Flush: %v, file %v, want %v", err, onFile(), want)
	}
	if err := re.Close(); err != nil {
		t.Fatal(err)
	}
}
