package idempotence

import (
	"errors"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/weir-project/weir/test/harness"
)

// TestProducerExpiry: after producer.id.expiration.ms of silence the
// broker forgets a producer, which may then continue at any sequence
// (KIP-360), while a producer it still knows is held to its chain.
func TestProducerExpiry(t *testing.T) {
	b := harness.StartBroker(t, "producer.id.expiration.ms=4000")
	r := newRawClient(t, b)
	const topic = "expiry"
	r.createTopic(topic, nil)
	pid := r.newProducer()
	r.mustProduce(topic, batch(t, "x", pid, 0, 0, 2))
	// Right away the producer is known: a jump is refused.
	r.wantErr(topic, batch(t, "x", pid, 0, 100, 1), kerr.OutOfOrderSequenceNumber)
	harness.WaitFor(t, time.Minute, "the producer to expire", func() bool {
		got := r.produce(topic, batch(t, "x", pid, 0, 100, 1))
		if got.err != nil && !errors.Is(got.err, kerr.OutOfOrderSequenceNumber) {
			t.Fatalf("produce while waiting for expiry: %v", got.err)
		}
		return got.err == nil
	})
	// Known again from that batch on.
	r.wantErr(topic, batch(t, "x", pid, 0, 200, 1), kerr.OutOfOrderSequenceNumber)
	r.mustProduce(topic, batch(t, "x", pid, 0, 101, 1))
}
