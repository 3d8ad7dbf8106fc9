package producerstate

import (
	"errors"
	"math"
	"testing"
	"time"

	"github.com/weir-project/weir/internal/storage"
	"github.com/weir-project/weir/internal/storage/recordbatch"
)

// newState is an empty state over a fresh directory.
func newState(t *testing.T) *State {
	t.Helper()
	s, from, err := Load(t.TempDir(), 0, 0, nil)
	if err != nil {
		t.Fatal(err)
	}
	if from != 0 || s.Len() != 0 {
		t.Fatalf("fresh state: from %d, %d producers", from, s.Len())
	}
	return s
}

// batch describes a batch of n records from producer pid.
func batch(pid int64, epoch int16, seq int32, n int32) storage.BatchInfo {
	return BatchFromHeader(recordbatch.Header{
		ProducerID: pid, ProducerEpoch: epoch, BaseSequence: seq,
		LastOffsetDelta: n - 1, MaxTimestamp: time.Now().UnixMilli(),
	})
}

// appender plays the log: it checks a batch and, if new, "appends" it at
// the next offset and tells the state.
type appender struct {
	t    *testing.T
	s    *State
	next int64
}

func (a *appender) produce(b storage.BatchInfo) (first int64, dup bool, err error) {
	d, isDup, err := a.s.Check([]storage.BatchInfo{b})
	if err != nil {
		return -1, false, err
	}
	if isDup {
		return d.FirstOffset, true, nil
	}
	n := b.LastOffset - b.FirstOffset
	b.FirstOffset, b.LastOffset = a.next, a.next+n
	a.next += n + 1
	a.s.OnBatch(b)
	return b.FirstOffset, false, nil
}

func (a *appender) mustAppend(b storage.BatchInfo) int64 {
	a.t.Helper()
	off, dup, err := a.produce(b)
	if err != nil || dup {
		a.t.Fatalf("append producer %d epoch %d seq %d: dup %v err %v", b.ProducerID, b.ProducerEpoch, b.BaseSequence, dup, err)
	}
	return off
}

func TestDuplicateOfEachOfTheLastFive(t *testing.T) {
	a := &appender{t: t, s: newState(t)}
	var offs []int64
	for i := range int32(7) {
		offs = append(offs, a.mustAppend(batch(1, 0, i*3, 3)))
	}
	leo := a.next
	// Batches 2..6 are retained; each retried is a duplicate with its offset.
	for i := int32(2); i < 7; i++ {
		off, dup, err := a.produce(batch(1, 0, i*3, 3))
		if err != nil || !dup || off != offs[i] {
			t.Fatalf("retry of batch %d: off %d dup %v err %v, want dup at %d", i, off, dup, err, offs[i])
		}
	}
	// Batches 0 and 1 are beyond the window: out of order, not appended.
	for i := int32(0); i < 2; i++ {
		if _, _, err := a.produce(batch(1, 0, i*3, 3)); !errors.Is(err, ErrOutOfOrderSequence) {
			t.Fatalf("retry of forgotten batch %d: %v, want out of order", i, err)
		}
	}
	// Same first sequence, different length: not a duplicate.
	if _, _, err := a.produce(batch(1, 0, 18, 2)); !errors.Is(err, ErrOutOfOrderSequence) {
		t.Fatalf("overlapping batch: %v", err)
	}
	if a.next != leo {
		t.Fatalf("log grew from %d to %d on retries", leo, a.next)
	}
	a.mustAppend(batch(1, 0, 21, 1))
}

func TestGapIsOutOfOrder(t *testing.T) {
	a := &appender{t: t, s: newState(t)}
	a.mustAppend(batch(7, 0, 0, 5))
	if _, _, err := a.produce(batch(7, 0, 6, 1)); !errors.Is(err, ErrOutOfOrderSequence) {
		t.Fatalf("gap: %v", err)
	}
	a.mustAppend(batch(7, 0, 5, 1))
}

func TestEpochs(t *testing.T) {
	a := &appender{t: t, s: newState(t)}
	a.mustAppend(batch(3, 2, 0, 4))
	if _, _, err := a.produce(batch(3, 1, 4, 1)); !errors.Is(err, ErrInvalidEpoch) {
		t.Fatalf("older epoch: %v", err)
	}
	// Even an exact repeat of an older epoch's batch is fenced.
	if _, _, err := a.produce(batch(3, 1, 0, 4)); !errors.Is(err, ErrInvalidEpoch) {
		t.Fatalf("older epoch repeat: %v", err)
	}
	// A new epoch must restart its sequence at 0.
	if _, _, err := a.produce(batch(3, 3, 4, 1)); !errors.Is(err, ErrOutOfOrderSequence) {
		t.Fatalf("new epoch at seq 4: %v", err)
	}
	a.mustAppend(batch(3, 3, 0, 2))
	// The old epoch's batches are forgotten: seq 0 of epoch 3 is the dup now.
	if _, dup, err := a.produce(batch(3, 3, 0, 2)); err != nil || !dup {
		t.Fatalf("dup in new epoch: dup %v err %v", dup, err)
	}
	if _, _, err := a.produce(batch(3, 2, 0, 4)); !errors.Is(err, ErrInvalidEpoch) {
		t.Fatalf("previous epoch after bump: %v", err)
	}
	p, _ := a.s.Producer(3)
	if p.Epoch != 3 || p.LastSequence != 1 || p.Batches != 1 {
		t.Fatalf("state after bump: %+v", p)
	}
}

func TestUnknownProducerAcceptsAnySequence(t *testing.T) {
	a := &appender{t: t, s: newState(t)}
	a.mustAppend(batch(9, 4, 1234, 2))
	// ... and then holds it to the chain.
	if _, _, err := a.produce(batch(9, 4, 1237, 1)); !errors.Is(err, ErrOutOfOrderSequence) {
		t.Fatalf("gap after first batch: %v", err)
	}
	a.mustAppend(batch(9, 4, 1236, 1))
}

func TestSequenceWrapsAtMaxInt32(t *testing.T) {
	a := &appender{t: t, s: newState(t)}
	a.mustAppend(batch(5, 0, math.MaxInt32-2, 2)) // seqs MaxInt32-2 .. MaxInt32-1
	// A batch crossing the wrap: MaxInt32, 0, 1.
	wrap := batch(5, 0, math.MaxInt32, 3)
	if wrap.LastSequence != 1 {
		t.Fatalf("last sequence of a wrapping batch: %d", wrap.LastSequence)
	}
	off := a.mustAppend(wrap)
	if got, dup, err := a.produce(wrap); err != nil || !dup || got != off {
		t.Fatalf("dup of wrapping batch: %d %v %v", got, dup, err)
	}
	a.mustAppend(batch(5, 0, 2, 1))
	// Ending exactly at MaxInt32, the next batch starts at 0.
	b := &appender{t: t, s: newState(t)}
	b.mustAppend(batch(6, 0, math.MaxInt32-1, 2))
	if _, _, err := b.produce(batch(6, 0, math.MaxInt32, 1)); !errors.Is(err, ErrOutOfOrderSequence) {
		t.Fatalf("sequence past MaxInt32 without wrapping: %v", err)
	}
	b.mustAppend(batch(6, 0, 0, 1))
}

func TestMultiBatchRequestIsAChain(t *testing.T) {
	s := newState(t)
	a := &appender{t: t, s: s}
	a.mustAppend(batch(1, 0, 0, 2))
	// Two new batches in one request: the second follows the first.
	if _, dup, err := s.Check([]storage.BatchInfo{batch(1, 0, 2, 2), batch(1, 0, 4, 1), batch(2, 0, 0, 1)}); err != nil || dup {
		t.Fatalf("chained batches: dup %v err %v", dup, err)
	}
	if _, _, err := s.Check([]storage.BatchInfo{batch(1, 0, 2, 2), batch(1, 0, 5, 1)}); !errors.Is(err, ErrOutOfOrderSequence) {
		t.Fatalf("gap inside a request: %v", err)
	}
	// A duplicate must come alone: never half-append a request.
	if _, _, err := s.Check([]storage.BatchInfo{batch(1, 0, 0, 2), batch(1, 0, 2, 1)}); !errors.Is(err, recordbatch.ErrInvalidRecord) {
		t.Fatalf("duplicate with company: %v", err)
	}
	// Batches without a producer id are not checked.
	plain := batch(-1, -1, -1, 3)
	if _, dup, err := s.Check([]storage.BatchInfo{plain, plain}); err != nil || dup {
		t.Fatalf("plain batches: %v %v", dup, err)
	}
}

func TestExpiry(t *testing.T) {
	s := newState(t)
	now := time.Now()
	old, fresh := batch(1, 0, 0, 1), batch(2, 0, 0, 1)
	old.MaxTimestamp = now.Add(-2 * time.Hour).UnixMilli()
	fresh.MaxTimestamp = now.Add(-time.Minute).UnixMilli()
	s.OnBatch(old)
	s.OnBatch(fresh)
	if n := s.RemoveExpired(now, time.Hour); n != 1 {
		t.Fatalf("expired %d producers, want 1", n)
	}
	if _, ok := s.Producer(1); ok {
		t.Fatal("producer 1 survived expiry")
	}
	if _, ok := s.Producer(2); !ok {
		t.Fatal("producer 2 expired early")
	}
	// An expired producer continues at any sequence (KIP-360).
	if _, _, err := s.Check([]storage.BatchInfo{batch(1, 0, 57, 1)}); err != nil {
		t.Fatalf("expired producer continuing: %v", err)
	}
	if n := s.RemoveExpired(now.Add(2*time.Hour), time.Hour); n != 1 || s.Len() != 0 {
		t.Fatalf("second expiry: %d removed, %d left", n, s.Len())
	}
}

func TestControlBatchMovesEpochOnly(t *testing.T) {
	s := newState(t)
	a := &appender{t: t, s: s}
	a.mustAppend(batch(4, 0, 0, 3))
	marker := batch(4, 1, -1, 1)
	marker.Control = true
	marker.FirstOffset, marker.LastOffset = a.next, a.next
	a.next++
	s.OnBatch(marker)
	p, _ := s.Producer(4)
	if p.Epoch != 1 || p.Batches != 0 || p.LastSequence != -1 {
		t.Fatalf("after control batch: %+v", p)
	}
	if _, _, err := a.produce(batch(4, 1, 3, 1)); !errors.Is(err, ErrOutOfOrderSequence) {
		t.Fatalf("epoch with no batch expects 0: %v", err)
	}
	a.mustAppend(batch(4, 1, 0, 1))
}

func TestSeqArithmetic(t *testing.T) {
	cases := []struct{ seq, n, inc, dec int32 }{
		{0, 0, 0, 0},
		{5, 3, 8, 2},
		{math.MaxInt32, 1, 0, math.MaxInt32 - 1},
		{math.MaxInt32 - 1, 3, 1, math.MaxInt32 - 4},
		{1, 3, 4, math.MaxInt32 - 1},
		{0, 1, 1, math.MaxInt32},
	}
	for _, c := range cases {
		if got := incrementSeq(c.seq, c.n); got != c.inc {
			t.Errorf("incrementSeq(%d, %d) = %d, want %d", c.seq, c.n, got, c.inc)
		}
		if got := decrementSeq(c.seq, c.n); got != c.dec {
			t.Errorf("decrementSeq(%d, %d) = %d, want %d", c.seq, c.n, got, c.dec)
		}
		if back := decrementSeq(incrementSeq(c.seq, c.n), c.n); back != c.seq {
			t.Errorf("decrement(increment(%d, %d)) = %d", c.seq, c.n, back)
		}
	}
}
