package producerstate

import (
	"bytes"
	"errors"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"testing"
	"time"

	"github.com/weir-project/weir/internal/storage"
	"github.com/weir-project/weir/internal/storage/recordbatch"
)

func quiet() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }

// logHarness is a real partition log with the producer state attached,
// reopened the way the replica does it.
type logHarness struct {
	t   *testing.T
	dir string
	cfg storage.Config
	log *storage.Log
	ps  *State
}

func newLogHarness(t *testing.T, segmentBytes int64) *logHarness {
	cfg := storage.DefaultConfig()
	cfg.SegmentBytes = segmentBytes
	cfg.FileDeleteDelayMs = 0
	h := &logHarness{t: t, dir: filepath.Join(t.TempDir(), "topic-0"), cfg: cfg}
	h.open(true)
	t.Cleanup(func() {
		if h.log != nil {
			h.log.Close()
		}
	})
	return h
}

func (h *logHarness) open(clean bool) {
	h.t.Helper()
	l, err := storage.OpenLog(h.dir, h.cfg, 0, 0, clean, quiet())
	if err != nil {
		h.t.Fatal(err)
	}
	ps, from, err := Load(h.dir, l.LogStartOffset(), l.LogEndOffset(), quiet())
	if err != nil {
		h.t.Fatal(err)
	}
	if err := l.SetProducerStateHook(ps, from); err != nil {
		h.t.Fatal(err)
	}
	h.log, h.ps = l, ps
}

// reopen closes cleanly (snapshot at the log end) or abandons the log
// without a close, as a crash would, and opens it again.
func (h *logHarness) reopen(clean bool) {
	h.t.Helper()
	if clean {
		if err := h.log.Close(); err != nil {
			h.t.Fatal(err)
		}
	} else {
		// Detach the hook so closing the files writes no snapshot: what
		// is on disk is what a SIGKILL would leave.
		if err := h.log.SetProducerStateHook(nil, 0); err != nil {
			h.t.Fatal(err)
		}
		h.log.Close()
	}
	h.open(clean)
}

func buildBatch(t *testing.T, pid int64, epoch int16, seq int32, n int) []byte {
	t.Helper()
	recs := make([]recordbatch.Record, n)
	for i := range recs {
		recs[i] = recordbatch.Record{TimestampDelta: int64(i), Value: bytes.Repeat([]byte("v"), 200)}
	}
	b, err := recordbatch.Build(recordbatch.BuildOptions{
		BaseTimestamp: time.Now().UnixMilli(), ProducerID: pid, ProducerEpoch: epoch, BaseSequence: seq,
	}, recs)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// produce checks and appends like the replica: a duplicate is not appended.
func (h *logHarness) produce(pid int64, epoch int16, seq int32, n int) (int64, bool, error) {
	h.t.Helper()
	b := buildBatch(h.t, pid, epoch, seq, n)
	hd, err := recordbatch.ParseHeader(b)
	if err != nil {
		h.t.Fatal(err)
	}
	d, dup, err := h.ps.Check([]storage.BatchInfo{BatchFromHeader(hd)})
	if err != nil || dup {
		return d.FirstOffset, dup, err
	}
	info, err := h.log.Append(b, 0)
	if err != nil {
		h.t.Fatal(err)
	}
	return info.FirstOffset, false, nil
}

func (h *logHarness) mustProduce(pid int64, epoch int16, seq int32, n int) int64 {
	h.t.Helper()
	off, dup, err := h.produce(pid, epoch, seq, n)
	if err != nil || dup {
		h.t.Fatalf("produce pid %d seq %d: dup %v err %v", pid, seq, dup, err)
	}
	return off
}

func (h *logHarness) wantDup(pid int64, epoch int16, seq int32, n int, off int64) {
	h.t.Helper()
	got, dup, err := h.produce(pid, epoch, seq, n)
	if err != nil || !dup || got != off {
		h.t.Fatalf("retry pid %d seq %d: offset %d dup %v err %v, want duplicate at %d", pid, seq, got, dup, err, off)
	}
}

func (h *logHarness) snapshots() []int64 {
	h.t.Helper()
	offs, err := listSnapshots(h.dir)
	if err != nil {
		h.t.Fatal(err)
	}
	return offs
}

// fill writes 5 batches of 3 records for each of pids 1..3, rolling
// segments on the way (about 700 bytes a batch).
func (h *logHarness) fill() map[[2]int64]int64 {
	offs := map[[2]int64]int64{}
	for i := range int32(5) {
		for pid := int64(1); pid <= 3; pid++ {
			offs[[2]int64{pid, int64(i)}] = h.mustProduce(pid, 0, i*3, 3)
		}
	}
	return offs
}

func (h *logHarness) checkAllDups(offs map[[2]int64]int64) {
	h.t.Helper()
	for k, off := range offs {
		h.wantDup(k[0], 0, int32(k[1])*3, 3, off)
	}
	// And the chain continues where it stopped.
	h.mustProduce(1, 0, 15, 1)
}

func TestSnapshotRoundTripKeepsLastFiveBatches(t *testing.T) {
	s := newState(t)
	a := &appender{t: t, s: s}
	for i := range int32(8) {
		a.mustAppend(batch(1, 2, i*2, 2))
	}
	a.mustAppend(batch(2, 0, 100, 1))
	s.OnBatch(storage.BatchInfo{ProducerID: 3, ProducerEpoch: 5, BaseSequence: -1, Control: true, MaxTimestamp: 42})
	data := encodeSnapshot(s.producers)
	got, err := decodeSnapshot(data)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, s.producers) {
		t.Fatalf("round trip:\n got %+v\nwant %+v", got, s.producers)
	}
	if n := len(got[1].batches); n != RetainedBatches {
		t.Fatalf("retained %d batches", n)
	}
	// Kafka's reading (last entry per producer wins) sees the last batch.
	if want := headerLen + (5+1+1)*entryLen; len(data) != want {
		t.Fatalf("snapshot is %d bytes, want %d", len(data), want)
	}
}

func TestDecodeRejectsDamage(t *testing.T) {
	s := newState(t)
	s.OnBatch(batch(1, 0, 0, 3))
	good := encodeSnapshot(s.producers)
	for name, b := range map[string][]byte{
		"empty":     nil,
		"truncated": good[:len(good)-1],
		"extra":     append(slices.Clone(good), 0),
		"flipped":   func() []byte { b := slices.Clone(good); b[20] ^= 1; return b }(),
		"version":   func() []byte { b := slices.Clone(good); b[1] = 2; return b }(),
	} {
		if _, err := decodeSnapshot(b); !errors.Is(err, ErrCorruptSnapshot) {
			t.Errorf("%s: %v", name, err)
		}
	}
}

func TestRestartCleanAndUnclean(t *testing.T) {
	for _, clean := range []bool{true, false} {
		h := newLogHarness(t, 4096)
		offs := h.fill()
		if h.log.NumSegments() < 3 {
			t.Fatalf("only %d segments", h.log.NumSegments())
		}
		h.reopen(clean)
		if clean && !slices.Contains(h.snapshots(), h.log.LogEndOffset()) {
			t.Fatalf("clean close left no snapshot at the log end: %v", h.snapshots())
		}
		h.checkAllDups(offs)
	}
}

func TestCorruptOrMissingSnapshotsRebuildFromLog(t *testing.T) {
	for _, damage := range []string{"corrupt", "delete", "garbage-newer"} {
		t.Run(damage, func(t *testing.T) {
			h := newLogHarness(t, 4096)
			offs := h.fill()
			h.reopen(true)
			snaps := h.snapshots()
			if len(snaps) < 3 {
				t.Fatalf("snapshots %v", snaps)
			}
			if err := h.log.Close(); err != nil {
				t.Fatal(err)
			}
			for _, off := range snaps {
				p := SnapshotPath(h.dir, off)
				var err error
				switch damage {
				case "corrupt":
					err = os.WriteFile(p, []byte("not a snapshot at all"), 0o644)
				case "delete":
					err = os.Remove(p)
				case "garbage-newer":
					if off == snaps[len(snaps)-1] {
						b, _ := os.ReadFile(p)
						b[len(b)-3] ^= 0xff
						err = os.WriteFile(p, b, 0o644)
					}
				}
				if err != nil {
					t.Fatal(err)
				}
			}
			h.open(false)
			h.checkAllDups(offs)
			// The unreadable files were removed, so later truncations and
			// restarts agree with the state.
			for _, off := range h.snapshots() {
				if _, err := os.ReadFile(SnapshotPath(h.dir, off)); err != nil {
					t.Fatal(err)
				}
				b, _ := os.ReadFile(SnapshotPath(h.dir, off))
				if _, err := decodeSnapshot(b); err != nil {
					t.Fatalf("left an unreadable snapshot %d: %v", off, err)
				}
			}
		})
	}
}

func TestTruncationReloadsState(t *testing.T) {
	h := newLogHarness(t, 4096)
	h.fill()
	// A truncation back to the middle of the stream, as replication does
	// when a follower diverged.
	cut := h.mustProduce(1, 0, 15, 2)
	h.mustProduce(1, 0, 17, 2)
	if err := h.log.TruncateTo(cut); err != nil {
		t.Fatal(err)
	}
	for _, off := range h.snapshots() {
		if off > cut {
			t.Fatalf("snapshot %d survived truncation to %d", off, cut)
		}
	}
	p, ok := h.ps.Producer(1)
	if !ok || p.LastSequence != 14 {
		t.Fatalf("producer 1 after truncation: %+v %v", p, ok)
	}
	// The truncated batches may be written again, and only once.
	off := h.mustProduce(1, 0, 15, 2)
	if off != cut {
		t.Fatalf("rewritten at %d, want %d", off, cut)
	}
	h.wantDup(1, 0, 15, 2, cut)

	// Truncation below every snapshot rebuilds from the log start.
	if err := h.log.TruncateTo(3); err != nil {
		t.Fatal(err)
	}
	for pid := int64(1); pid <= 3; pid++ {
		p, ok := h.ps.Producer(pid)
		want := pid == 1 // offsets 0..2 hold pid 1's first batch only
		if ok != want || (ok && p.LastSequence != 2) {
			t.Fatalf("producer %d after truncation to 3: %+v %v", pid, p, ok)
		}
	}
	h.wantDup(1, 0, 0, 3, 0)
	h.mustProduce(2, 0, 0, 3)
}

func TestDeleteSnapshotsBefore(t *testing.T) {
	dir := t.TempDir()
	s, _, err := Load(dir, 0, 0, quiet())
	if err != nil {
		t.Fatal(err)
	}
	for _, off := range []int64{10, 20, 30, 40} {
		if err := s.Snapshot(dir, off, true); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.DeleteSnapshotsBefore(25); err != nil {
		t.Fatal(err)
	}
	if got, _ := listSnapshots(dir); !slices.Equal(got, []int64{20, 30, 40}) {
		t.Fatalf("after delete before 25: %v", got)
	}
	if err := s.DeleteSnapshotsBefore(40); err != nil {
		t.Fatal(err)
	}
	if got, _ := listSnapshots(dir); !slices.Equal(got, []int64{40}) {
		t.Fatalf("after delete before 40: %v", got)
	}
}

func TestLoadIgnoresSnapshotsPastLogEnd(t *testing.T) {
	dir := t.TempDir()
	s, _, _ := Load(dir, 0, 0, quiet())
	s.OnBatch(batch(1, 0, 0, 1))
	if err := s.Snapshot(dir, 50, true); err != nil {
		t.Fatal(err)
	}
	if err := s.Snapshot(dir, 10, true); err != nil {
		t.Fatal(err)
	}
	s2, from, err := Load(dir, 0, 30, quiet())
	if err != nil {
		t.Fatal(err)
	}
	if from != 10 || s2.Len() != 1 {
		t.Fatalf("from %d, %d producers", from, s2.Len())
	}
	if got, _ := listSnapshots(dir); !slices.Equal(got, []int64{10}) {
		t.Fatalf("snapshots %v", got)
	}
	if _, from, _ := Load(dir, 12, 30, quiet()); from != 12 {
		t.Fatalf("from %d with log start 12", from)
	}
}

// TestUnchangedSnapshotIsNotRewritten: a snapshot of the same state at
// the same offset (an idle partition's shutdown) writes no file, unless
// it asks for an fsync the file never had; a changed state, or a file
// removed since, is written again.
func TestUnchangedSnapshotIsNotRewritten(t *testing.T) {
	dir := t.TempDir()
	s, _, err := Load(dir, 0, 0, quiet())
	if err != nil {
		t.Fatal(err)
	}
	a := &appender{t: t, s: s}
	a.mustAppend(batch(1, 0, 0, 3))
	path := SnapshotPath(dir, 3)
	snap := func(sync bool) os.FileInfo {
		t.Helper()
		if err := s.Snapshot(dir, 3, sync); err != nil {
			t.Fatal(err)
		}
		fi, err := os.Stat(path)
		if err != nil {
			t.Fatal(err)
		}
		return fi
	}
	// Every write goes through a temp file and a rename: a new inode.
	first := snap(false)
	if !os.SameFile(first, snap(false)) {
		t.Error("an unchanged snapshot was written again")
	}
	synced := snap(true)
	if os.SameFile(first, synced) {
		t.Error("a snapshot asked to be fsynced was skipped although its file never was")
	}
	if !os.SameFile(synced, snap(true)) || !os.SameFile(synced, snap(false)) {
		t.Error("an unchanged, fsynced snapshot was written again")
	}
	a.mustAppend(batch(1, 0, 3, 1))
	changed := snap(false)
	if os.SameFile(synced, changed) {
		t.Error("a changed state was not written")
	}

	// Loaded from its file, the state is skipped without sync only.
	s2, _, err := Load(dir, 0, 3, quiet())
	if err != nil {
		t.Fatal(err)
	}
	s.OnBatch(batch(9, 0, 0, 1)) // the old state moves on; s2 is what the file holds
	if err := s2.Snapshot(dir, 3, false); err != nil {
		t.Fatal(err)
	}
	if fi, _ := os.Stat(path); !os.SameFile(changed, fi) {
		t.Error("a loaded state's unchanged snapshot was written again")
	}
	if err := s2.Snapshot(dir, 3, true); err != nil {
		t.Fatal(err)
	}
	loadedSynced, _ := os.Stat(path)
	if os.SameFile(changed, loadedSynced) {
		t.Error("a loaded file, never fsynced by this process, was not rewritten with sync")
	}

	// A file removed since is written again.
	if err := s2.Snapshot(dir, 7, true); err != nil {
		t.Fatal(err)
	}
	if err := s2.DeleteSnapshotsBefore(7); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(path); !os.IsNotExist(err) {
		t.Fatalf("snapshot at 3 still there: %v", err)
	}
	s2.TruncateTo(3) // drops 7 as well: nothing left at or below 3
	if err := s2.Snapshot(dir, 7, true); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(SnapshotPath(dir, 7)); err != nil {
		t.Fatalf("snapshot removed by a truncation not written again: %v", err)
	}
}
