package replica

import (
	"errors"
	"log/slog"
	"testing"

	"github.com/weir-project/weir/internal/storage"
	"github.com/weir-project/weir/internal/storage/recordbatch"
)

// A follower takes the leader's log start offset (DeleteRecords,
// retention), but only up to its own high watermark and only at the
// leader epoch it follows.
func TestUpdateFollowerLogStart(t *testing.T) {
	log, err := storage.OpenLog(t.TempDir(), storage.DefaultConfig(), 0, 0, false, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { log.Close() })
	f := New(storage.TopicPartition{Topic: "t"}, log, 2)
	if _, err := f.Update(State{LeaderID: 1, LeaderEpoch: 3, Replicas: []int32{1, 2}, ISR: []int32{1, 2}}); err != nil {
		t.Fatal(err)
	}
	for i := range 3 {
		b := batch(t, 2)
		recordbatch.SetBaseOffset(b, int64(2*i))
		recordbatch.SetPartitionLeaderEpoch(b, 3)
		if _, err := f.AppendAsFollower(3, b); err != nil {
			t.Fatal(err)
		}
	}
	if err := f.UpdateFollowerHW(3, 4); err != nil {
		t.Fatal(err)
	}
	if err := f.UpdateFollowerLogStart(2, 2); !errors.Is(err, ErrNotFollower) {
		t.Fatalf("log start from a stale epoch: %v, want ErrNotFollower", err)
	}
	if err := f.UpdateFollowerLogStart(3, 5); err != nil || f.Offsets().LogStart != 0 {
		t.Fatalf("log start 5 above the high watermark 4: err %v, start %d, want nothing done", err, f.Offsets().LogStart)
	}
	if err := f.UpdateFollowerLogStart(3, 3); err != nil || f.Offsets().LogStart != 3 {
		t.Fatalf("log start 3: err %v, start %d", err, f.Offsets().LogStart)
	}
	if err := f.UpdateFollowerLogStart(3, 1); err != nil || f.Offsets().LogStart != 3 {
		t.Fatalf("an older log start moved it back: err %v, start %d", err, f.Offsets().LogStart)
	}
}
