package reassign

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/weir-project/weir/test/harness"
)

// stream is an idempotent acks=all producer writing "0", "1", ... to
// partition 0 of a topic, one record every pace, until finished; it keeps
// every acknowledgement's offset and time.
type stream struct {
	t *testing.T
	// partition is where the values go; base is its log end before the
	// first one, so "i" belongs at offset base+i.
	partition int32
	base      int64
	cl        *kgo.Client
	stop      chan struct{}
	done      chan struct{}
	sent      int

	mu     sync.Mutex
	offset map[string]int64
	ackAt  []time.Time
	failed []string
}

func startStream(t *testing.T, c *harness.Cluster, topic string, pace time.Duration) *stream {
	t.Helper()
	return startStreamAt(t, c, topic, 0, 0, pace)
}

// startStreamAt streams to partition, whose log ends at base.
func startStreamAt(t *testing.T, c *harness.Cluster, topic string, partition int32, base int64, pace time.Duration) *stream {
	t.Helper()
	s := &stream{
		partition: partition, base: base,
		t: t, stop: make(chan struct{}), done: make(chan struct{}), offset: map[string]int64{},
		cl: c.Client(
			kgo.DefaultProduceTopic(topic),
			kgo.RecordPartitioner(kgo.ManualPartitioner()),
			kgo.RequiredAcks(kgo.AllISRAcks()),
			kgo.ProducerLinger(2*time.Millisecond),
			kgo.RecordDeliveryTimeout(4*time.Minute),
			kgo.RetryTimeout(4*time.Minute),
		),
	}
	ctx := harness.Ctx(t, 15*time.Minute)
	go func() {
		defer close(s.done)
		tick := time.NewTicker(pace)
		defer tick.Stop()
		for i := 0; ; i++ {
			select {
			case <-s.stop:
				s.sent = i
				return
			case <-tick.C:
			}
			s.cl.Produce(ctx, &kgo.Record{Partition: s.partition, Value: []byte(strconv.Itoa(i))}, func(r *kgo.Record, err error) {
				s.mu.Lock()
				defer s.mu.Unlock()
				if err != nil {
					s.failed = append(s.failed, fmt.Sprintf("%s: %v", r.Value, err))
					return
				}
				s.offset[string(r.Value)] = r.Offset
				s.ackAt = append(s.ackAt, time.Now())
			})
		}
	}()
	t.Cleanup(func() {
		select {
		case <-s.stop:
		default:
			close(s.stop)
		}
		<-s.done
	})
	return s
}

func (s *stream) acked() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.offset)
}

// waitMore waits for n more acknowledgements than there are now; a failed
// record fails the test at once.
func (s *stream) waitMore(n int, timeout time.Duration, what string) {
	s.t.Helper()
	want := s.acked() + n
	harness.WaitFor(s.t, timeout, fmt.Sprintf("%s: %d acknowledgements", what, want), func() bool {
		s.mu.Lock()
		defer s.mu.Unlock()
		if len(s.failed) > 0 {
			s.t.Fatalf("%s: record failed: %s", what, s.failed[0])
		}
		return len(s.offset) >= want
	})
}

// finish stops producing, waits for every answer and fails the test if a
// record failed; it returns the longest time between acknowledgements.
func (s *stream) finish() time.Duration {
	s.t.Helper()
	close(s.stop)
	<-s.done
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	if err := s.cl.Flush(ctx); err != nil {
		s.t.Fatalf("flush: %v", err)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.failed) > 0 {
		s.t.Fatalf("%d records failed, first: %s", len(s.failed), s.failed[0])
	}
	if len(s.offset) != s.sent {
		s.t.Fatalf("%d of %d records acknowledged", len(s.offset), s.sent)
	}
	var gap time.Duration
	for i := 1; i < len(s.ackAt); i++ {
		gap = max(gap, s.ackAt[i].Sub(s.ackAt[i-1]))
	}
	return gap
}

// checkExactlyOnce reads the partition back: "0", "1", ... each once, in
// order, from offset base, every acknowledged value where its ack said.
func (s *stream) checkExactlyOnce(addrs []string, topic string) int {
	s.t.Helper()
	got := harness.PartitionValues(s.t, addrs, topic, s.partition)
	end := s.base
	for off := range got {
		end = max(end, off+1)
	}
	for off := s.base; off < end; off++ {
		if v, ok := got[off]; !ok || v != strconv.FormatInt(off-s.base, 10) {
			s.t.Fatalf("offset %d holds %q, want %d (a record lost, duplicated or reordered)", off, v, off-s.base)
		}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	for v, off := range s.offset {
		if got[off] != v {
			s.t.Fatalf("%s acknowledged at offset %d, the log holds %q there", v, off, got[off])
		}
	}
	n := int(end - s.base)
	if n < len(s.offset) {
		s.t.Fatalf("%d records read back, %d acknowledged", n, len(s.offset))
	}
	return n
}

// TestAddBrokerMoveThenDrain: a 3-node cluster under an idempotent
// acks=all stream gets a 4th broker; a reassignment moves a third of a
// topic's partitions onto it (the stream's partition among them, its
// leader replaced, so that leadership moves under the stream); then
// `weir cluster drain 1` moves everything off broker 1, which is stopped.
// Every acknowledged record is read back exactly once, in order; the
// removed replicas' logs are deleted; the final placement is the plan's.
func TestAddBrokerMoveThenDrain(t *testing.T) {
	c := harness.StartCluster(t, 3)
	const topic = "grow"
	var assignment [][]int32
	for p := range int32(6) {
		assignment = append(assignment, []int32{p%3 + 1, (p+1)%3 + 1, (p+2)%3 + 1})
	}
	createAssigned(t, c, topic, assignment, minISR2())
	fill(t, c, topic, []int32{1, 2, 3, 4, 5}, 200, 100)
	s := startStream(t, c, topic, 2*time.Millisecond)
	s.waitMore(300, opTimeout, "before the 4th broker")

	b4 := c.AddBrokerOnly()
	t.Cleanup(func() {
		if t.Failed() {
			out := b4.Output()
			t.Logf("broker 4 log tail:\n%s", out[max(0, len(out)-6000):])
		}
	})
	waitBrokerLive(t, c, 4)
	// A third of the partitions: 0 and 3 (both led by 1) go to 4 in
	// place of their leader.
	moves := []move{{topic, 0, []int32{4, 2, 3}}, {topic, 3, []int32{4, 2, 3}}}
	plan := planFile(t, moves)
	start := time.Now()
	out := mustWeir(t, c.Node(2), opTimeout, "topic", "reassign", "--execute", "--reassignment-json-file", plan)
	if rollback := proposedPlan(t, out, "Current partition replica assignment"); len(rollback) != 2 ||
		!slices.Equal(rollback[0].Replicas, assignment[0]) || !slices.Equal(rollback[1].Replicas, assignment[3]) {
		t.Fatalf("rollback plan %+v\n%s", rollback, out)
	}
	harness.WaitFor(t, moveTimeout, "--verify to report both moves completed", func() bool {
		out := mustWeir(t, c.Node(3), opTimeout, "topic", "reassign", "--verify", "--reassignment-json-file", plan)
		return strings.Count(out, "is completed") == 2
	})
	t.Logf("moved 2 partitions (%d+ records each) onto the new broker in %v", 200, time.Since(start).Round(time.Millisecond))
	for _, m := range moves {
		st := waitPlaced(t, c, topic, m.Partition, m.Replicas, opTimeout)
		if st.Leader == 1 {
			t.Fatalf("%s-%d still led by the removed replica 1", topic, m.Partition)
		}
		partitionDirGone(t, c.Node(1), topic, m.Partition)
	}
	s.waitMore(300, opTimeout, "after the move")

	// Drain broker 1 and stop it.
	start = time.Now()
	out = mustWeir(t, c.Node(4), moveTimeout, "cluster", "drain", "1", "--timeout", moveTimeout.String())
	drained := proposedPlan(t, out, "Proposed partition reassignment configuration")
	if !strings.Contains(out, "Broker 1 holds no replicas") {
		t.Fatalf("drain did not finish:\n%s", out)
	}
	t.Logf("drained broker 1 (%d partitions moved) in %v", len(drained), time.Since(start).Round(time.Millisecond))
	final := map[int32][]int32{}
	for p := range int32(6) {
		final[p] = assignment[p]
	}
	for _, m := range moves {
		final[m.Partition] = m.Replicas
	}
	for _, m := range drained {
		if m.Topic == topic {
			final[m.Partition] = m.Replicas
		}
	}
	for p := range int32(6) {
		if slices.Contains(final[p], 1) {
			t.Fatalf("the drain plan leaves %s-%d on broker 1: %v", topic, p, final[p])
		}
		waitPlaced(t, c, topic, p, final[p], opTimeout)
		partitionDirGone(t, c.Node(1), topic, p)
	}
	s.waitMore(300, opTimeout, "after the drain")
	c.Node(1).Stop()
	s.waitMore(300, opTimeout, "after broker 1 stopped")

	gap := s.finish()
	n := s.checkExactlyOnce([]string{c.Node(2).Addr, c.Node(3).Addr, c.Node(4).Addr}, topic)
	t.Logf("%d records, each read back once in order; longest gap between acknowledgements %v", n, gap.Round(time.Millisecond))
	// Generous: a leader move costs the client a metadata refresh and a
	// retry, far below this; the client's delivery timeout is minutes.
	if gap > 20*time.Second {
		t.Fatalf("produce stalled for %v", gap)
	}
	// The final placement, as every live node sees it, is the plan's.
	for p := range int32(6) {
		if st := waitPlaced(t, c, topic, p, final[p], opTimeout); st.Leader == 1 {
			t.Fatalf("%s-%d led by the stopped broker", topic, p)
		}
	}
}
