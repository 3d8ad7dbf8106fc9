package storage

import (
	"path/filepath"
	"slices"
	"testing"

	"github.com/weir-project/weir/internal/storage/checkpoint"
	"github.com/weir-project/weir/internal/storage/recordbatch"
)

// TestTruncateFullyAndStartAtPastEnd: a follower whose log ends before
// the leader's log start restarts empty at the leader's start; the epoch
// history goes with the data, and the log takes appends from there.
func TestTruncateFullyAndStartAtPastEnd(t *testing.T) {
	l := openLog(t, t.TempDir(), testConfig())
	for range 3 {
		mustAppend(t, l, makeBatch(t, 2, 10, 1, "old"), 4)
	}
	l.SetHighWatermark(6)
	if err := l.TruncateFullyAndStartAt(100); err != nil {
		t.Fatal(err)
	}
	if l.LogStartOffset() != 100 || l.LogEndOffset() != 100 || l.RecoveryPoint() != 100 {
		t.Fatalf("after full truncation: start %d end %d recovery %d, want 100", l.LogStartOffset(), l.LogEndOffset(), l.RecoveryPoint())
	}
	if _, _, ok := l.LeaderEpochs().Latest(); ok {
		t.Fatalf("epoch history kept after full truncation: %v", l.LeaderEpochs().Entries())
	}
	b := makeBatch(t, 1, 10, 1, "new")
	// The leader's batch at offset 100, epoch 7.
	recordbatch.SetBaseOffset(b, 100)
	recordbatch.SetPartitionLeaderEpoch(b, 7)
	if _, err := l.AppendAsFollower(b); err != nil {
		t.Fatal(err)
	}
	if e, start, ok := l.LeaderEpochs().Latest(); !ok || e != 7 || start != 100 {
		t.Fatalf("epoch after follower append %d@%d (%v), want 7@100", e, start, ok)
	}
	if got := readAll(t, l, 100); len(got) != 1 || got[0].base != 100 {
		t.Fatalf("read back %v", got)
	}
}

// TestHighWatermarkCheckpointRoundTrip: the high watermark the replica
// layer sets is written to replication-offset-checkpoint and loaded back,
// clamped to the log end, at the next start.
func TestHighWatermarkCheckpointRoundTrip(t *testing.T) {
	dir := t.TempDir()
	cfg := testConfig()
	mc := ManagerConfig{Dirs: []string{dir}, Defaults: cfg}
	m, err := OpenManager(mc, quietLogger())
	if err != nil {
		t.Fatal(err)
	}
	a, _ := m.GetOrCreate(TopicPartition{"a", 0}, cfg)
	b, _ := m.GetOrCreate(TopicPartition{"b", 3}, cfg)
	for range 5 {
		mustAppend(t, a, makeBatch(t, 1, 10, 1, "x"), 0)
		mustAppend(t, b, makeBatch(t, 1, 10, 1, "x"), 0)
	}
	a.SetHighWatermark(4)
	b.SetHighWatermark(99) // beyond the end: must come back clamped
	if err := m.CheckpointHighWatermarks(); err != nil {
		t.Fatal(err)
	}
	if err := m.Close(); err != nil {
		t.Fatal(err)
	}
	m2, err := OpenManager(mc, quietLogger())
	if err != nil {
		t.Fatal(err)
	}
	defer m2.Close()
	if hw := m2.Get(TopicPartition{"a", 0}).HighWatermark(); hw != 4 {
		t.Fatalf("a-0 hw %d after reload, want 4", hw)
	}
	if hw := m2.Get(TopicPartition{"b", 3}).HighWatermark(); hw != 5 {
		t.Fatalf("b-3 hw %d after reload, want 5 (clamped to the log end)", hw)
	}
}

// TestRecoveryRestoresEpochsOfUnflushedBatches: a crash between a
// follower's append and its write of leader-epoch-checkpoint leaves
// batches of epochs the file does not name; recovery reads them back
// from the batches, without moving the start of epochs it already has.
func TestRecoveryRestoresEpochsOfUnflushedBatches(t *testing.T) {
	dir := t.TempDir()
	cfg := testConfig()
	l, err := OpenLog(dir, cfg, 0, 0, false, quietLogger())
	if err != nil {
		t.Fatal(err)
	}
	follow := func(base int64, epoch int32) {
		b := makeBatch(t, 2, 10, 1, "f")
		recordbatch.SetBaseOffset(b, base)
		recordbatch.SetPartitionLeaderEpoch(b, epoch)
		if _, err := l.AppendAsFollower(b); err != nil {
			t.Fatal(err)
		}
	}
	follow(0, 1)
	follow(2, 1)
	follow(4, 3)
	follow(6, 3)
	if err := l.Flush(); err != nil {
		t.Fatal(err)
	}
	// The checkpoint as it would be had the process died before the
	// write for epoch 3: only epoch 1 at 0.
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	if err := checkpoint.WriteEpochs(filepath.Join(dir, leaderEpochFile), []checkpoint.EpochEntry{{Epoch: 1, StartOffset: 0}}); err != nil {
		t.Fatal(err)
	}
	// Recover from offset 2 (inside epoch 1), as after a crash.
	l2, err := OpenLog(dir, cfg, 2, 0, false, quietLogger())
	if err != nil {
		t.Fatal(err)
	}
	defer l2.Close()
	want := []checkpoint.EpochEntry{{Epoch: 1, StartOffset: 0}, {Epoch: 3, StartOffset: 4}}
	if got := l2.LeaderEpochs().Entries(); !slices.Equal(got, want) {
		t.Fatalf("epochs after recovery %v, want %v", got, want)
	}
}

// TestTruncateAtEndDropsUnbackedEpoch: a broker that led epoch 4 without
// appending holds 4@LEO; deposed, it is told its epoch-3 history agrees up
// to its log end and then fetches more epoch-3 records from the new
// leader. The truncation to its own end must drop 4@LEO, or the epoch-3
// append would (by Assign's rules) also drop 3's real start, and the
// replica would later answer OffsetForLeaderEpoch wrongly.
func TestTruncateAtEndDropsUnbackedEpoch(t *testing.T) {
	l := openLog(t, t.TempDir(), testConfig())
	first := makeBatch(t, 4, 10, 1, "e3")
	recordbatch.SetPartitionLeaderEpoch(first, 3)
	if _, err := l.AppendAsFollower(first); err != nil {
		t.Fatal(err)
	}
	if err := l.LeaderEpochs().Assign(4, l.LogEndOffset()); err != nil {
		t.Fatal(err)
	}
	if err := l.TruncateTo(l.LogEndOffset()); err != nil {
		t.Fatal(err)
	}
	more := makeBatch(t, 2, 10, 1, "e3")
	recordbatch.SetBaseOffset(more, 4)
	recordbatch.SetPartitionLeaderEpoch(more, 3)
	if _, err := l.AppendAsFollower(more); err != nil {
		t.Fatal(err)
	}
	want := []checkpoint.EpochEntry{{Epoch: 3, StartOffset: 0}}
	if got := l.LeaderEpochs().Entries(); !slices.Equal(got, want) {
		t.Fatalf("epoch history %v, want %v", got, want)
	}
	if e, end := l.LeaderEpochs().EndOffsetFor(2, l.LogEndOffset()); e != 2 || end != 0 {
		t.Fatalf("end offset for epoch 2: %d@%d, want epoch 2 ending at 0", e, end)
	}
}
