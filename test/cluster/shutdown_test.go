package cluster

import (
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/weir-project/weir/test/harness"
)

// rollingSessionTimeout is broker.session.timeout.ms in the rolling
// restart: long, so that a broker that stopped without moving its
// leaderships first would stall the producer this long (the controller
// moves them only when the session expires), which the test would see.
const rollingSessionTimeout = 60 * time.Second

// TestRollingRestartControlledShutdown: RF 3, min.insync.replicas 2, an
// idempotent acks=all stream while each node in turn gets SIGTERM and is
// restarted, the next one only once the ISR is full again. Controlled
// shutdown must move the stopping node's leaderships before it stops:
// every stop logs "controlled shutdown done", acks go on while the node
// is down, no record fails, every acknowledged record is read back
// exactly once, in order, and the logs end identical. The longest gap
// between consecutive acks is reported, and must stay below the session
// timeout: a stop without controlled shutdown stalls the producer for
// all of it.
func TestRollingRestartControlledShutdown(t *testing.T) {
	c := harness.StartCluster(t, 3, "broker.session.timeout.ms="+strconv.FormatInt(rollingSessionTimeout.Milliseconds(), 10))
	guardNodes(t, c)
	const topic = "rolling-restart"
	createTopic(t, c, topic, 1, 3, minISR2())
	// Metadata at most 250 ms old: a producer told NOT_LEADER_OR_FOLLOWER
	// finds the new leader at once rather than after franz-go's 5 s.
	s := harness.StartAckStream(t, c, harness.StreamConfig{Topic: topic, Pace: 2 * time.Millisecond}, kgo.MetadataMinAge(250*time.Millisecond))
	s.WaitAcks(t, 500, 2*time.Minute, "acks before the first restart")

	streamStart := time.Now()
	var worst time.Duration
	for i, b := range c.Nodes {
		id := int32(i + 1)
		before := waitEveryNode(t, c, topic, 0, 2*time.Minute, "a full ISR", fullISR)
		_, since := b.OutputSince(-1)
		stopAt := time.Now()
		b.Stop()
		stopped := time.Now()
		if code, exited := b.ExitCode(); !exited || code != 0 {
			t.Fatalf("node %d: exit code %d (exited %v) after SIGTERM:\n%s", id, code, exited, tailOf(b.Output(), 6000))
		}
		done := logLines(b, since, "controlled shutdown done")
		if len(done) != 1 || len(logLines(b, since, "controlled shutdown incomplete")) > 0 {
			t.Fatalf("node %d did not log one \"controlled shutdown done\" when stopped:\n%s", id, tailOf(b.Output(), 6000))
		}
		// acks=all goes on with the two others.
		s.WaitMore(t, 300, 2*time.Minute, "acks while a node is stopped")
		b.Restart()
		waitEveryNode(t, c, topic, 0, 2*time.Minute, "a full ISR", fullISR)
		back := time.Now()
		s.WaitMore(t, 300, 2*time.Minute, "acks after the node is back")
		gap, _ := s.LongestGap(stopAt, time.Now())
		worst = max(worst, gap)
		t.Logf("node %d (led: %v) stopped in %v (%s); full ISR %v after its restart; longest ack gap around it %v",
			id, before.Leader == id, stopped.Sub(stopAt).Round(10*time.Millisecond), done[0],
			back.Sub(stopped).Round(10*time.Millisecond), gap.Round(time.Millisecond))
	}
	sent := s.Finish()
	if n := s.CheckExactlyOnce(c.Bootstrap(), 0); n != sent {
		t.Fatalf("%d records stored, %d sent", n, sent)
	}
	batches := waitSameLogs(t, c, topic, 0)
	overall, _ := s.LongestGap(streamStart, time.Now())
	t.Logf("%d records in %d batches, none failed; longest gap between acks during the rolling restart %v (session timeout %v)",
		sent, len(batches), overall.Round(time.Millisecond), rollingSessionTimeout)
	if worst >= rollingSessionTimeout {
		t.Fatalf("the producer stalled %v, as long as the session timeout: leadership did not move before the stop", worst)
	}
}

// TestPreferredLeaderComesBack: auto.leader.rebalance.enable (the
// default) with leader.imbalance.check.interval.seconds 1, the smallest
// allowed. The leader of a partition, its preferred replica
// (replicas[0]), is killed -9 during an acks=all stream; another replica
// takes over. Once the old leader is restarted, has caught up and is back
// in the ISR, the controller hands leadership back to it. Every metadata
// answer seen on the way names a leader inside the ISR; no record fails;
// every acknowledged record is read back exactly once, in order; the logs
// end identical.
func TestPreferredLeaderComesBack(t *testing.T) {
	c := harness.StartCluster(t, 3, "leader.imbalance.check.interval.seconds=1")
	guardNodes(t, c)
	const topic = "preferred-leader"
	createTopic(t, c, topic, 1, 3, minISR2())
	st := c.WaitFullISR(topic, 0, opTimeout)
	preferred := st.Replicas[0]
	if st.Leader != preferred {
		st = c.WaitPartition(topic, 0, opTimeout, "the preferred replica leading", func(st harness.PartitionState) bool {
			return st.Leader == preferred
		})
	}
	epoch0 := st.LeaderEpoch
	s := harness.StartAckStream(t, c, harness.StreamConfig{Topic: topic, Pace: 2 * time.Millisecond}, kgo.MetadataMinAge(250*time.Millisecond))
	s.WaitAcks(t, 500, 2*time.Minute, "acks before the kill")

	b := c.Node(preferred)
	b.Kill()
	killedAt := time.Now()
	st = c.WaitPartition(topic, 0, 2*time.Minute, "a leader other than the killed one", func(st harness.PartitionState) bool {
		return st.Leader > 0 && st.Leader != preferred
	})
	interim, interimAt := st.Leader, time.Now()
	// Records the restarted replica does not have: it must catch up.
	s.WaitMore(t, 500, 2*time.Minute, "acks on the interim leader")

	since := logEnds(c)
	b.Restart()
	restartedAt := time.Now()
	var inISRAt time.Time
	st = c.WaitPartition(topic, 0, 2*time.Minute, "leadership back on the preferred replica", func(st harness.PartitionState) bool {
		if st.Leader > 0 && !slices.Contains(st.ISR, st.Leader) {
			t.Fatalf("metadata names leader %d outside the ISR %v", st.Leader, st.ISR)
		}
		if inISRAt.IsZero() && slices.Contains(st.ISR, preferred) {
			inISRAt = time.Now()
		}
		return st.Leader == preferred
	})
	backAt := time.Now()
	if st.LeaderEpoch < epoch0+2 {
		t.Fatalf("leader epoch %d after two leader changes from %d", st.LeaderEpoch, epoch0)
	}
	// The controller logs its election once committed, possibly after
	// another node's metadata showed it.
	harness.WaitFor(t, opTimeout, "a controller to log the preferred leader election", func() bool {
		for i, n := range c.Nodes {
			if len(logLines(n, since[i], "moved leadership back to preferred replicas")) > 0 {
				return true
			}
		}
		return false
	})
	s.WaitMore(t, 300, 2*time.Minute, "acks on the preferred leader again")
	sent := s.Finish()
	if n := s.CheckExactlyOnce(c.Bootstrap(), 0); n != sent {
		t.Fatalf("%d records stored, %d sent", n, sent)
	}
	batches := waitSameLogs(t, c, topic, 0)
	t.Logf("preferred leader %d killed; %d led %v later; restarted, in the ISR %v and leading again %v after its restart (leader epoch %d -> %d); "+
		"longest ack gap at the kill %v, at the hand-back %v; %d records, %d batches, logs identical",
		preferred, interim, interimAt.Sub(killedAt).Round(10*time.Millisecond),
		inISRAt.Sub(restartedAt).Round(10*time.Millisecond), backAt.Sub(restartedAt).Round(10*time.Millisecond), epoch0, st.LeaderEpoch,
		gapRound(s.LongestGap(killedAt, restartedAt)), gapRound(s.LongestGap(restartedAt, time.Now())), sent, len(batches))
}

func gapRound(d time.Duration, _ time.Time) time.Duration { return d.Round(time.Millisecond) }

// TestLastNodeStopsWithoutQuorum: a cluster stopped one node after
// another (as `weir cluster up` or a fleet tool stopping every node at
// once may end up doing) leaves the last node with no controller to
// answer its controlled shutdown. It must not wait out
// controlled.shutdown.timeout.ms (ten minutes here, far beyond the
// harness's 60 s stop bound): once no controller has answered for
// broker.session.timeout.ms it stops anyway, cleanly, and every record
// acknowledged before is still there when the cluster comes back.
func TestLastNodeStopsWithoutQuorum(t *testing.T) {
	c := harness.StartCluster(t, 3, "controlled.shutdown.timeout.ms=600000", "broker.session.timeout.ms=3000")
	guardNodes(t, c)
	const topic = "last-node-stops"
	createTopic(t, c, topic, 1, 3, minISR2())
	c.WaitFullISR(topic, 0, opTimeout)
	s := harness.StartAckStream(t, c, harness.StreamConfig{Topic: topic, Pace: time.Millisecond})
	s.WaitAcks(t, 300, 2*time.Minute, "acks before the stops")
	sent := s.Finish()

	// Nodes 3 and 2 stop with a quorum still there: a normal controlled
	// shutdown each.
	for _, id := range []int32{3, 2} {
		b := c.Node(id)
		_, since := b.OutputSince(-1)
		b.Stop()
		if code, exited := b.ExitCode(); !exited || code != 0 {
			t.Fatalf("node %d: exit code %d (exited %v):\n%s", id, code, exited, tailOf(b.Output(), 6000))
		}
		if len(logLines(b, since, "controlled shutdown done")) != 1 {
			t.Fatalf("node %d did not log \"controlled shutdown done\":\n%s", id, tailOf(b.Output(), 6000))
		}
	}
	// Node 1 is alone: one voter of three, no controller anywhere.
	last := c.Node(1)
	_, since := last.OutputSince(-1)
	stopAt := time.Now()
	last.Stop()
	took := time.Since(stopAt)
	if code, exited := last.ExitCode(); !exited || code != 0 {
		t.Fatalf("last node: exit code %d (exited %v):\n%s", code, exited, tailOf(last.Output(), 6000))
	}
	if len(logLines(last, since, "controlled shutdown incomplete", "no controller answered")) != 1 ||
		len(logLines(last, since, "logs closed", "clean=true")) != 1 {
		t.Fatalf("the last node did not give up its controlled shutdown for want of a controller and close its logs cleanly:\n%s", tailOf(last.Output(), 6000))
	}

	c.RestartAll()
	if n := s.CheckExactlyOnce(c.Bootstrap(), 0); n != sent {
		t.Fatalf("%d records stored, %d acknowledged", n, sent)
	}
	t.Logf("last node stopped %v after SIGTERM without a controller; %d acknowledged records all back after the restart", took.Round(10*time.Millisecond), sent)
}

// TestControllerStopsBesideAPausedNode: the active controller gets SIGTERM
// while another node is paused (SIGSTOP: its sockets stay open, nothing
// answers). Raft's replication to the paused node waits for it up to the
// transport's 10 s I/O timeout, and used to hold the stop that long;
// now the connections to the peers are cut once raft has had half a
// second. The stop must come well within the timeout, cleanly, and the
// remaining two nodes go on with a new controller.
func TestControllerStopsBesideAPausedNode(t *testing.T) {
	c := harness.StartCluster(t, 3)
	guardNodes(t, c)
	ctrl := c.AgreedController(opTimeout)
	paused := otherNodes(3, ctrl)[0]
	pauseNode(t, c.Node(paused))
	b := c.Node(ctrl)
	_, since := b.OutputSince(-1)
	start := time.Now()
	b.Stop()
	took := time.Since(start)
	if code, exited := b.ExitCode(); !exited || code != 0 {
		t.Fatalf("controller %d: exit code %d (exited %v) after SIGTERM:\n%s", ctrl, code, exited, tailOf(b.Output(), 6000))
	}
	// Far below the 10 s it waited before, with room for a slow machine.
	if took >= 8*time.Second {
		t.Fatalf("controller %d took %v to stop beside paused node %d:\n%s", ctrl, took, paused, tailOf(b.Output(), 6000))
	}
	t.Logf("controller %d stopped in %v beside paused node %d; raft connections cut: %q", ctrl, took.Round(time.Millisecond), paused,
		logLines(b, since, "closed the connections to its peers"))
	c.Node(paused).Resume()
	c.AgreedController(opTimeout, ctrl)
}
