package idempotence

import (
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/weir-project/weir/test/harness"
)

// TestRawRequests drives the partition's idempotence rules with
// hand-built batches on one broker.
func TestRawRequests(t *testing.T) {
	b := harness.StartBroker(t)
	r := newRawClient(t, b)

	t.Run("same batch twice is stored once", func(t *testing.T) {
		r.t = t
		r.createTopic("dup", nil)
		pid := r.newProducer()
		first := batch(t, "a", pid, 0, 0, 3)
		off := r.mustProduce("dup", first)
		if again := r.mustProduce("dup", first); again != off {
			t.Fatalf("retried batch answered offset %d, first answer %d", again, off)
		}
		if next := r.mustProduce("dup", batch(t, "a", pid, 0, 3, 2)); next != off+3 {
			t.Fatalf("next batch at %d, want %d", next, off+3)
		}
		if got, want := values(t, b, "dup"), seqValues("a", 0, 5); !slices.Equal(got, want) {
			t.Fatalf("stored %q, want %q", got, want)
		}
	})

	t.Run("gap is out of order", func(t *testing.T) {
		r.t = t
		r.createTopic("gap", nil)
		pid := r.newProducer()
		r.mustProduce("gap", batch(t, "g", pid, 0, 0, 2))
		r.wantErr("gap", batch(t, "g", pid, 0, 5, 1), kerr.OutOfOrderSequenceNumber)
		r.mustProduce("gap", batch(t, "g", pid, 0, 2, 1))
		if got, want := values(t, b, "gap"), seqValues("g", 0, 3); !slices.Equal(got, want) {
			t.Fatalf("stored %q, want %q", got, want)
		}
	})

	t.Run("old epoch is fenced", func(t *testing.T) {
		r.t = t
		r.createTopic("epoch", nil)
		pid := r.newProducer()
		r.mustProduce("epoch", batch(t, "e0", pid, 0, 0, 2))
		r.mustProduce("epoch", batch(t, "e1", pid, 1, 0, 2))
		r.wantErr("epoch", batch(t, "e0", pid, 0, 2, 1), kerr.InvalidProducerEpoch)
		// Even a retry of the old epoch's batch: its epoch is gone.
		r.wantErr("epoch", batch(t, "e0", pid, 0, 0, 2), kerr.InvalidProducerEpoch)
		// A new epoch starts its sequence at 0.
		r.wantErr("epoch", batch(t, "e2", pid, 2, 2, 1), kerr.OutOfOrderSequenceNumber)
		if got := len(values(t, b, "epoch")); got != 4 {
			t.Fatalf("%d records stored, want 4", got)
		}
	})

	t.Run("five in flight retried out of order", func(t *testing.T) {
		r.t = t
		r.createTopic("inflight", nil)
		pid := r.newProducer()
		var batches [][]byte
		var offs []int64
		for i := range 5 {
			bt := batch(t, "f", pid, 0, int32(i*2), 2)
			batches = append(batches, bt)
			offs = append(offs, r.mustProduce("inflight", bt))
		}
		// Every response was lost; the client re-sends all five, in an
		// order the network chose.
		rnd := rand.New(rand.NewPCG(4, 5))
		for _, i := range rnd.Perm(5) {
			if got := r.mustProduce("inflight", batches[i]); got != offs[i] {
				t.Fatalf("retry of batch %d answered %d, first answer %d", i, got, offs[i])
			}
		}
		// Batch 5 is lost on the way; 6 and 7 arrive first and bounce.
		b5, b6, b7 := batch(t, "f", pid, 0, 10, 2), batch(t, "f", pid, 0, 12, 2), batch(t, "f", pid, 0, 14, 2)
		r.wantErr("inflight", b6, kerr.OutOfOrderSequenceNumber)
		r.wantErr("inflight", b7, kerr.OutOfOrderSequenceNumber)
		r.mustProduce("inflight", b5)
		r.mustProduce("inflight", b6)
		r.mustProduce("inflight", b7)
		if got, want := values(t, b, "inflight"), seqValues("f", 0, 16); !slices.Equal(got, want) {
			t.Fatalf("stored %q, want %q", got, want)
		}
	})

	t.Run("producers are independent", func(t *testing.T) {
		r.t = t
		r.createTopic("two", nil)
		p1, p2 := r.newProducer(), r.newProducer()
		if p1 == p2 {
			t.Fatalf("two producers got id %d", p1)
		}
		o1 := r.mustProduce("two", batch(t, "p1", p1, 0, 0, 1))
		o2 := r.mustProduce("two", batch(t, "p2", p2, 0, 0, 1))
		if r.mustProduce("two", batch(t, "p1", p1, 0, 0, 1)) != o1 || r.mustProduce("two", batch(t, "p2", p2, 0, 0, 1)) != o2 {
			t.Fatal("duplicates of independent producers not answered with their own offsets")
		}
	})
}

// TestInitProducerID checks id uniqueness across a crash, KIP-360 epoch
// bump requests and the refusal of transactional requests.
func TestInitProducerID(t *testing.T) {
	b := harness.StartBroker(t)
	r := newRawClient(t, b)
	seen := map[int64]bool{}
	take := func() {
		for range 20 {
			id := r.newProducer()
			if seen[id] {
				t.Fatalf("producer id %d handed out twice", id)
			}
			seen[id] = true
		}
	}
	take()
	b.Kill()
	b.Restart()
	r = newRawClient(t, b)
	take()

	// An idempotent producer bumping its epoch (v3+ with its id and
	// epoch) gets a fresh id, as from Kafka.
	old := r.newProducer()
	resp := r.initProducerID(nil, old, 0)
	if resp.ErrorCode != 0 || resp.ProducerID == old || seen[resp.ProducerID] || resp.ProducerEpoch != 0 {
		t.Fatalf("epoch bump of %d: %+v", old, resp)
	}

	// Transactions are not supported: no fake success.
	txn := "my-txn"
	resp = r.initProducerID(&txn, -1, -1)
	if err := kerr.ErrorForCode(resp.ErrorCode); err != kerr.CoordinatorNotAvailable || resp.ProducerID != -1 {
		t.Fatalf("transactional InitProducerId: %v, id %d", err, resp.ProducerID)
	}
}
