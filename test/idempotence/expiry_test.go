package idempotence

import (
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/weir-project/weir/test/harness"
)

// expiryTTL is the test broker's producer.id.expiration.ms.
const expiryTTL = 4 * time.Second

// TestProducerExpiry: after producer.id.expiration.ms of silence the
// broker forgets a producer, which may then continue at any sequence
// (KIP-360), while a producer it still knows is held to its chain.
//
// "Still knows" holds only for expiryTTL after the producer's last batch;
// a check answered later (a slow, shared machine) proves nothing either
// way, so that attempt starts over with a new producer instead of
// passing or failing by timing.
func TestProducerExpiry(t *testing.T) {
	b := harness.StartBroker(t, fmt.Sprintf("producer.id.expiration.ms=%d", expiryTTL.Milliseconds()))
	r := newRawClient(t, b)
	const topic = "expiry"
	r.createTopic(topic, nil)
	const attempts = 10
	for i := 1; !expiryRound(t, r, topic); i++ {
		if i == attempts {
			t.Fatalf("in %d attempts the broker never answered within %s of a batch: too slow to check expiry", attempts, expiryTTL)
		}
		t.Logf("attempt %d answered too late to be conclusive; again with a new producer", i)
	}
}

// expiryRound runs the scenario with a fresh producer and reports whether
// its checks were conclusive.
func expiryRound(t *testing.T, r *rawClient, topic string) bool {
	t.Helper()
	pid := r.newProducer()
	last := wallNow()
	r.mustProduce(topic, batch(t, "x", pid, 0, 0, 2))
	// Right away the producer is known: a jump is refused.
	if !refusedWhileKnown(t, r, topic, pid, 100, last) {
		return false
	}
	harness.WaitFor(t, time.Minute, "the producer to expire", func() bool {
		last = wallNow()
		got := r.produce(topic, batch(t, "x", pid, 0, 100, 1))
		if got.err != nil && !errors.Is(got.err, kerr.OutOfOrderSequenceNumber) {
			t.Fatalf("produce while waiting for expiry: %v", got.err)
		}
		return got.err == nil
	})
	// Known again from that batch on.
	if !refusedWhileKnown(t, r, topic, pid, 200, last) {
		return false
	}
	r.mustProduce(topic, batch(t, "x", pid, 0, 101, 1))
	return true
}

// refusedWhileKnown sends the producer a batch at sequence seq, out of its
// chain, and wants OUT_OF_ORDER_SEQUENCE_NUMBER. last was taken before the
// producer's latest batch was built, so that batch's timestamp is no
// earlier: answered within expiryTTL of last, the broker cannot have
// expired the producer, and anything but the refusal fails the test.
// Answered later, an acceptance proves nothing: it returns false.
func refusedWhileKnown(t *testing.T, r *rawClient, topic string, pid int64, seq int32, last time.Time) bool {
	t.Helper()
	got := r.produce(topic, batch(t, "x", pid, 0, seq, 1))
	// Batch timestamps and the broker's expiry are whole milliseconds of
	// the wall clock: keep a margin for the rounding.
	took := wallNow().Sub(last)
	switch {
	case errors.Is(got.err, kerr.OutOfOrderSequenceNumber):
		return true
	case got.err == nil && took >= expiryTTL-10*time.Millisecond:
		return false
	default:
		t.Fatalf("sequence %d, %s after the producer's last batch: error %v (offset %d), want %v",
			seq, took, got.err, got.offset, kerr.OutOfOrderSequenceNumber)
		return false
	}
}

// wallNow is the wall clock only (no monotonic reading), the clock batch
// timestamps and the broker's expiry use.
func wallNow() time.Time { return time.Now().Round(0) }
