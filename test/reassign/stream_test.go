package reassign

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/weir-project/weir/test/harness"
)

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
	c.CreateAssignedTopic(topic, assignment, minISR2(), opTimeout)
	fill(t, c, topic, []int32{1, 2, 3, 4, 5}, 200, 100)
	s := harness.StartAckStream(t, c, harness.StreamConfig{Topic: topic, Pace: 2 * time.Millisecond})
	s.WaitMore(t, 300, opTimeout, "before the 4th broker")

	b4 := c.AddBrokerOnly()
	t.Cleanup(func() {
		if t.Failed() {
			out := b4.Output()
			t.Logf("broker 4 log tail:\n%s", out[max(0, len(out)-6000):])
		}
	})
	c.WaitBrokerLive(4, opTimeout)
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
	s.WaitMore(t, 300, opTimeout, "after the move")

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
	s.WaitMore(t, 300, opTimeout, "after the drain")
	c.Node(1).Stop()
	s.WaitMore(t, 300, opTimeout, "after broker 1 stopped")

	s.Finish()
	gap := s.MaxGap()
	n := s.CheckExactlyOnce([]string{c.Node(2).Addr, c.Node(3).Addr, c.Node(4).Addr}, 0)
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
