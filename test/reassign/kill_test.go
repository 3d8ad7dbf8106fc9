package reassign

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"

	"github.com/weir-project/weir/test/harness"
)

// stillMoving fails the test unless every running node lists topic-p as
// being reassigned.
func stillMoving(t *testing.T, c *harness.Cluster, topic string, p int32, when string) {
	t.Helper()
	for i, b := range c.Nodes {
		if !b.Running() {
			continue
		}
		found := false
		for _, rp := range inProgress(t, b.Dial()) {
			found = found || rp.Partition == p
		}
		if !found {
			t.Fatalf("%s: node %d lists no reassignment of %s-%d", when, i+1, topic, p)
		}
	}
}

// TestReassignSurvivesKills: a move of a partition under an acks=all
// stream, from [1 2 3] to [2 3 4], throttled so that it is still copying,
// survives kill -9 of the adding replica (4), of the leader (1, which the
// move also removes, as a rule), and of the active controller, each
// restarted, and
// completes once the adding replica is back: the partition ends on
// [2 3 4], broker 1's copy is deleted, and every acknowledged record is
// read back exactly once, in order.
func TestReassignSurvivesKills(t *testing.T) {
	c := harness.StartCluster(t, 3)
	const topic = "kills"
	c.CreateAssignedTopic(topic, [][]int32{{1, 2, 3}}, minISR2(), opTimeout)
	fill(t, c, topic, []int32{0}, 300, 10000) // ~3 MB to copy
	base := int64(300)
	s := harness.StartAckStream(t, c, harness.StreamConfig{Topic: topic, Pace: 2 * time.Millisecond})
	s.WaitMore(t, 200, opTimeout, "before the move")
	b4 := c.AddBrokerOnly()
	c.WaitBrokerLive(4, opTimeout)
	// 100 KB/s: the 3 MB cannot be copied in less than about 20 s.
	plan := planFile(t, []move{{topic, 0, []int32{2, 3, 4}}})
	mustWeir(t, c.Node(2), opTimeout, "topic", "reassign", "--execute", "--reassignment-json-file", plan, "--throttle", "100000")
	harness.WaitFor(t, opTimeout, "the adding replica to start copying", func() bool {
		return logBytes(b4.Dir, topic, []int32{0}) > 0
	})

	b4.Kill()
	stillMoving(t, c, topic, 0, "adding replica killed")
	s.WaitMore(t, 200, opTimeout, "after the adding replica's kill")

	// The leader (broker 1, the replica the move removes, unless a missed
	// heartbeat moved the leadership before).
	st, err := c.Partition(topic, 0)
	if err != nil || st.Leader < 1 || st.Leader > 3 {
		t.Fatalf("leader of %s-0: %+v %v", topic, st, err)
	}
	leader := st.Leader
	c.Node(leader).Kill()
	c.WaitPartition(topic, 0, opTimeout, "a new leader", func(st harness.PartitionState) bool { return st.Leader > 0 && st.Leader != leader })
	stillMoving(t, c, topic, 0, fmt.Sprintf("leader %d killed", leader))
	s.WaitMore(t, 200, opTimeout, "after the leader's kill")
	c.Node(leader).Restart()
	c.WaitPartition(topic, 0, opTimeout, "the old leader back in the ISR", func(st harness.PartitionState) bool { return len(st.ISR) == 3 })

	ctrl := c.AgreedController(opTimeout)
	c.Node(ctrl).Kill()
	next := c.AgreedController(opTimeout, ctrl)
	stillMoving(t, c, topic, 0, fmt.Sprintf("controller %d killed", ctrl))
	s.WaitMore(t, 200, opTimeout, "after the controller's kill")
	t.Logf("controller %d killed, %d took over", ctrl, next)
	c.Node(ctrl).Restart()
	c.WaitPartition(topic, 0, opTimeout, "every live replica in the ISR", func(st harness.PartitionState) bool { return len(st.ISR) == 3 })
	stillMoving(t, c, topic, 0, "before the adding replica's return")

	// Lift the throttle and bring the adding replica back: it resumes
	// from its partial copy, joins the ISR, and the move completes.
	adm := kadm.NewClient(c.Client())
	ctx, cancel := context.WithTimeout(context.Background(), opTimeout)
	defer cancel()
	if _, err := adm.AlterBrokerConfigs(ctx, []kadm.AlterConfig{{Op: kadm.DeleteConfig, Name: "replica.reassignment.throttle.bytes.per.sec"}}); err != nil {
		t.Fatal(err)
	}
	b4.Restart()
	start := time.Now()
	st = waitPlaced(t, c, topic, 0, []int32{2, 3, 4}, moveTimeout)
	t.Logf("move completed %v after the adding replica's restart; leader %d", time.Since(start).Round(time.Millisecond), st.Leader)
	partitionDirGone(t, c.Node(1), topic, 0)
	out := mustWeir(t, c.Node(3), opTimeout, "topic", "reassign", "--verify", "--reassignment-json-file", plan)
	if !strings.Contains(out, "is completed") {
		t.Fatalf("--verify:\n%s", out)
	}
	s.WaitMore(t, 200, opTimeout, "after the move")
	s.Finish()
	gap := s.MaxGap()
	n := s.CheckExactlyOnce([]string{c.Node(2).Addr, c.Node(3).Addr, c.Node(4).Addr}, base)
	t.Logf("%d records, each read back once in order; longest gap between acknowledgements %v", n, gap.Round(time.Millisecond))
}
