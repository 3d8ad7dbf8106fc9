package replica

import (
	"errors"
	"log/slog"
	"testing"

	"github.com/weir-project/weir/internal/storage"
	"github.com/weir-project/weir/internal/storage/recordbatch"
)

func openPartition(t *testing.T) *Partition {
	t.Helper()
	log, err := storage.OpenLog(t.TempDir(), storage.DefaultConfig(), 0, 0, false, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { log.Close() })
	return New(storage.TopicPartition{Topic: "t", Partition: 0}, log, 1)
}

func batch(t *testing.T, n int) []byte {
	t.Helper()
	var recs []recordbatch.Record
	for i := 0; i < n; i++ {
		recs = append(recs, recordbatch.Record{Value: []byte("v")})
	}
	b, err := recordbatch.Build(recordbatch.BuildOptions{ProducerID: -1, ProducerEpoch: -1, BaseSequence: -1}, recs)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestFollowerRejectsProduce(t *testing.T) {
	p := openPartition(t)
	if _, err := p.AppendAsLeader(batch(t, 1), 1); !errors.Is(err, ErrNotLeader) {
		t.Fatalf("append on follower: got %v, want ErrNotLeader", err)
	}
}

func TestLeaderAppendAdvancesHighWatermarkAndWakesFetchers(t *testing.T) {
	p := openPartition(t)
	if _, err := p.Update(State{LeaderID: 1, Replicas: []int32{1}, LeaderEpoch: 3, ISR: []int32{1}, MinISR: 1}); err != nil {
		t.Fatal(err)
	}
	w := NewWaiter()
	defer w.Done()
	w.Watch(p, HighWatermark)
	info, err := p.AppendAsLeader(batch(t, 4), -1)
	if err != nil {
		t.Fatal(err)
	}
	if info.FirstOffset != 0 || info.LastOffset != 3 {
		t.Fatalf("offsets %d..%d, want 0..3", info.FirstOffset, info.LastOffset)
	}
	select {
	case <-w.C():
	default:
		t.Fatal("append did not signal waiting fetchers")
	}
	if o := p.Offsets(); o.HighWater != 4 || o.LogEnd != 4 || o.LeaderEpoch != 3 {
		t.Fatalf("offsets %+v, want hw=leo=4 epoch 3", o)
	}
	if e, start, ok := p.Log().LeaderEpochs().Latest(); !ok || e != 3 || start != 0 {
		t.Fatalf("epoch cache latest = %d@%d (%v), want 3@0", e, start, ok)
	}
}

func TestAcksAllNeedsMinInsyncReplicas(t *testing.T) {
	p := openPartition(t)
	if _, err := p.Update(State{LeaderID: 1, Replicas: []int32{1}, LeaderEpoch: 0, ISR: []int32{1}, MinISR: 2}); err != nil {
		t.Fatal(err)
	}
	if _, err := p.AppendAsLeader(batch(t, 1), -1); !errors.Is(err, ErrNotEnoughReplicas) {
		t.Fatalf("acks=-1 with isr 1 < min 2: got %v", err)
	}
	if p.Log().LogEndOffset() != 0 {
		t.Fatal("rejected produce was appended")
	}
	if _, err := p.AppendAsLeader(batch(t, 1), 1); err != nil {
		t.Fatalf("acks=1 is not bound by min.insync.replicas: %v", err)
	}
}

func TestCheckLeaderEpoch(t *testing.T) {
	p := openPartition(t)
	if _, err := p.Update(State{LeaderID: 1, Replicas: []int32{1}, LeaderEpoch: 5, ISR: []int32{1}}); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		epoch int32
		want  error
	}{{-1, nil}, {5, nil}, {4, ErrFencedLeaderEpoch}, {6, ErrUnknownLeaderEpoch}} {
		if err := p.CheckLeaderEpoch(c.epoch); !errors.Is(err, c.want) {
			t.Errorf("epoch %d: got %v, want %v", c.epoch, err, c.want)
		}
	}
}

func TestConsumerReadStopsAtHighWatermark(t *testing.T) {
	p := openPartition(t)
	if _, err := p.Update(State{LeaderID: 1, Replicas: []int32{1}, ISR: []int32{1}}); err != nil {
		t.Fatal(err)
	}
	if _, err := p.AppendAsLeader(batch(t, 2), 1); err != nil {
		t.Fatal(err)
	}
	r, _, err := p.ReadForConsumer(0, 1<<20)
	if err != nil || r.Len == 0 {
		t.Fatalf("read at 0: len %d err %v", r.Len, err)
	}
	r, _, err = p.ReadForConsumer(2, 1<<20)
	if err != nil || r.Len != 0 {
		t.Fatalf("read at hw: len %d err %v, want empty", r.Len, err)
	}
	if _, _, err = p.ReadForConsumer(3, 1<<20); !errors.Is(err, storage.ErrOffsetOutOfRange) {
		t.Fatalf("read past end: %v, want out of range", err)
	}
}

func TestDeleteRecordsBounds(t *testing.T) {
	p := openPartition(t)
	if _, err := p.Update(State{LeaderID: 1, Replicas: []int32{1}, ISR: []int32{1}}); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 3; i++ {
		if _, err := p.AppendAsLeader(batch(t, 1), 1); err != nil {
			t.Fatal(err)
		}
	}
	if _, _, err := p.DeleteRecordsBefore(4); !errors.Is(err, storage.ErrOffsetOutOfRange) {
		t.Fatalf("delete beyond hw: %v", err)
	}
	low, _, err := p.DeleteRecordsBefore(2)
	if err != nil || low != 2 {
		t.Fatalf("delete before 2: low %d err %v", low, err)
	}
	if low, _, err := p.DeleteRecordsBefore(-1); err != nil || low != 3 {
		t.Fatalf("delete before hw (-1): low %d err %v", low, err)
	}
}
