package replica

import (
	"errors"
	"log/slog"
	"testing"

	"github.com/weir-project/weir/internal/storage"
	"github.com/weir-project/weir/internal/storage/producerstate"
	"github.com/weir-project/weir/internal/storage/recordbatch"
)

func openLeader(t *testing.T, dir string) *Partition {
	t.Helper()
	log, err := storage.OpenLog(dir, storage.DefaultConfig(), 0, 0, true, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	p, err := Open(storage.TopicPartition{Topic: "t", Partition: 0}, log, 1, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := p.Update(State{LeaderID: 1, Replicas: []int32{1}, LeaderEpoch: 1, ISR: []int32{1}, MinISR: 1}); err != nil {
		t.Fatal(err)
	}
	return p
}

func idemBatch(t *testing.T, pid int64, epoch int16, seq int32, n int) []byte {
	t.Helper()
	recs := make([]recordbatch.Record, n)
	for i := range recs {
		recs[i] = recordbatch.Record{Value: []byte("v")}
	}
	b, err := recordbatch.Build(recordbatch.BuildOptions{ProducerID: pid, ProducerEpoch: epoch, BaseSequence: seq}, recs)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestLeaderDropsDuplicates(t *testing.T) {
	dir := t.TempDir()
	p := openLeader(t, dir)
	first, err := p.AppendAsLeader(idemBatch(t, 10, 0, 0, 3), -1)
	if err != nil {
		t.Fatal(err)
	}
	second, err := p.AppendAsLeader(idemBatch(t, 10, 0, 3, 2), -1)
	if err != nil {
		t.Fatal(err)
	}
	again, err := p.AppendAsLeader(idemBatch(t, 10, 0, 0, 3), -1)
	if err != nil || again.FirstOffset != first.FirstOffset || again.LastOffset != first.LastOffset {
		t.Fatalf("duplicate: %+v %v, want offsets of %+v", again, err, first)
	}
	if leo := p.Log().LogEndOffset(); leo != second.LastOffset+1 {
		t.Fatalf("log end %d after a duplicate, want %d", leo, second.LastOffset+1)
	}
	if _, err := p.AppendAsLeader(idemBatch(t, 10, 0, 9, 1), -1); !errors.Is(err, producerstate.ErrOutOfOrderSequence) {
		t.Fatalf("gap: %v", err)
	}
	// A corrupt batch is reported as corrupt, not as a sequence problem.
	bad := idemBatch(t, 10, 0, 9, 1)
	bad[len(bad)-1] ^= 1
	if _, err := p.AppendAsLeader(bad, -1); !errors.Is(err, recordbatch.ErrCorrupt) {
		t.Fatalf("corrupt batch with a gap: %v", err)
	}
	dupBad := idemBatch(t, 10, 0, 3, 2)
	dupBad[len(dupBad)-1] ^= 1
	if _, err := p.AppendAsLeader(dupBad, -1); !errors.Is(err, recordbatch.ErrCorrupt) {
		t.Fatalf("corrupt duplicate: %v", err)
	}
	// Plain batches pass untouched.
	if _, err := p.AppendAsLeader(batch(t, 2), 1); err != nil {
		t.Fatal(err)
	}
}

func TestFollowerBuildsTheSameState(t *testing.T) {
	leader := openLeader(t, t.TempDir())
	for seq := int32(0); seq < 20; seq += 2 {
		if _, err := leader.AppendAsLeader(idemBatch(t, 3, 1, seq, 2), -1); err != nil {
			t.Fatal(err)
		}
	}
	// The follower copies the leader's log bytes; then it becomes leader.
	flog, err := storage.OpenLog(t.TempDir(), storage.DefaultConfig(), 0, 0, true, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { flog.Close() })
	f, err := Open(storage.TopicPartition{Topic: "t"}, flog, 1, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	r, err := leader.Log().Read(0, 1<<20, leader.Log().LogEndOffset())
	if err != nil {
		t.Fatal(err)
	}
	data, err := r.Bytes()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := flog.AppendAsFollower(data); err != nil {
		t.Fatal(err)
	}
	if _, err := f.Update(State{LeaderID: 1, Replicas: []int32{1}, LeaderEpoch: 2, ISR: []int32{1}, MinISR: 1}); err != nil {
		t.Fatal(err)
	}
	for seq := int32(10); seq < 20; seq += 2 {
		info, err := f.AppendAsLeader(idemBatch(t, 3, 1, seq, 2), -1)
		if err != nil || info.FirstOffset != int64(seq) {
			t.Fatalf("retry on new leader of seq %d: %+v %v", seq, info, err)
		}
	}
	if f.Log().LogEndOffset() != 20 {
		t.Fatalf("new leader appended duplicates: log end %d", f.Log().LogEndOffset())
	}
}
