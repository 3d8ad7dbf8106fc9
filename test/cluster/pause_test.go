package cluster

import (
	"fmt"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/weir-project/weir/test/harness"
)

// How a paused follower is expected to leave the ISR.
type isrExit int

const (
	// byLag: the leader's ISR check finds it behind for
	// replica.lag.time.max.ms and proposes the shrink (AlterPartition);
	// the broker session is too long to expire meanwhile.
	byLag isrExit = iota
	// byFencing: its heartbeats stop too, and the controller fences it
	// when broker.session.timeout.ms passes; replica.lag.time.max.ms is
	// too long to act first.
	byFencing
)

// TestPausedFollowerLeavesAndRejoinsISR: RF 3, min.insync.replicas 2, an
// idempotent acks=all stream. One follower (never the leader) is stopped
// with SIGSTOP: it must leave the ISR, acks=all must go on with the two
// others while it is stopped, and after SIGCONT it must catch up and
// rejoin the ISR; every acknowledged record is read back exactly once, in
// order, and the three logs end identical. Each case pins one way out of
// the ISR through the timeouts, and checks in the logs that this one
// acted:
//   - lag: replica.lag.time.max.ms 3000, broker.session.timeout.ms 120000;
//   - fenced: replica.lag.time.max.ms 120000, broker.session.timeout.ms
//     2000 (the cluster default);
//   - fenced-controller: as fenced, but the paused follower is the active
//     controller, so the quorum elects another, which then fences it.
func TestPausedFollowerLeavesAndRejoinsISR(t *testing.T) {
	t.Run("lag", func(t *testing.T) {
		pausedFollower(t, byLag, false, "replica.lag.time.max.ms=3000", "broker.session.timeout.ms=120000")
	})
	t.Run("fenced", func(t *testing.T) {
		pausedFollower(t, byFencing, false, "replica.lag.time.max.ms=120000")
	})
	t.Run("fenced-controller", func(t *testing.T) {
		pausedFollower(t, byFencing, true, "replica.lag.time.max.ms=120000")
	})
}

func pausedFollower(t *testing.T, exit isrExit, pauseController bool, overrides ...string) {
	c := harness.StartCluster(t, 3, overrides...)
	guardNodes(t, c)
	const topic = "paused-follower"
	// The leader is not the controller, so one follower is: the case
	// picks which follower to pause.
	ctrl := c.AgreedController(opTimeout)
	leader := otherNodes(3, ctrl)[0]
	replicas := append([]int32{leader}, otherNodes(3, leader)...)
	createAssignedTopic(t, c, topic, [][]int32{replicas}, minISR2())

	s := harness.StartAckStream(t, c, harness.StreamConfig{Topic: topic, Pace: 2 * time.Millisecond})
	s.WaitAcks(t, 500, 2*time.Minute, "acks before the pause")

	// Choose the follower now: the controller may have moved since.
	ctrl = c.AgreedController(opTimeout)
	var victim int32
	for _, id := range otherNodes(3, leader) {
		if (id == ctrl) == pauseController {
			victim = id
		}
	}
	if victim == 0 {
		// Only if Raft leadership moved to the partition leader since
		// the topic was created; the guarantee is the same.
		victim = otherNodes(3, leader, ctrl)[0]
		t.Logf("the controller moved to the partition leader %d; pausing follower %d instead", leader, victim)
	}
	// The metadata keeps the ISR in replica order.
	kept := slices.DeleteFunc(slices.Clone(replicas), func(id int32) bool { return id == victim })
	since := logEnds(c)
	atPause := s.Count()
	pausedAt := time.Now()
	pauseNode(t, c.Node(victim))

	// As the leader sees it: acks=all goes on once it knows.
	waitSeenBy(t, c, []int32{leader}, topic, 0, 2*time.Minute, fmt.Sprintf("ISR %v without the paused %d", kept, victim), func(st harness.PartitionState) bool {
		return slices.Equal(st.ISR, kept)
	})
	shrunkAt := time.Now()
	atShrink := s.Count()
	// acks=all goes on without the paused follower.
	s.WaitAcks(t, atShrink+500, 2*time.Minute, "acks while the follower is paused and out of the ISR")
	resumedAt, atResume := time.Now(), s.Count()
	c.Node(victim).Resume()

	// Which mechanism took it out. The controller logs a fencing before
	// proposing it, so before the ISR changes; the leader logs its shrink
	// when the controller's answer reaches it, possibly after another
	// node's metadata showed the change: wait for that line.
	fenced := func() bool {
		for i, b := range c.Nodes {
			if len(logLines(b, since[i], "broker session expired", "broker="+strconv.Itoa(int(victim))+" ")) > 0 {
				return true
			}
		}
		return false
	}
	shrinkLine := []string{`msg="ISR changed"`, fmt.Sprintf(`isr="[%d %d]"`, kept[0], kept[1])}
	how := "the controller's fencing (session expired)"
	switch exit {
	case byLag:
		harness.WaitFor(t, opTimeout, "the leader to log its ISR shrink", func() bool {
			return len(logLines(c.Node(leader), since[leader-1], shrinkLine...)) > 0
		})
		if fenced() {
			t.Fatalf("want the leader's lag check to remove %d, but the controller fenced it", victim)
		}
		how = "the leader's lag check (AlterPartition)"
	case byFencing:
		if !fenced() {
			t.Fatalf("want the controller to fence %d: no node logged its session expiry", victim)
		}
	}

	st := waitEveryNode(t, c, topic, 0, 2*time.Minute, "a full ISR", fullISR)
	rejoinedAt := time.Now()
	if st.Leader != leader {
		t.Fatalf("leader moved from %d to %d, though it was never stopped", leader, st.Leader)
	}
	s.WaitMore(t, 200, 2*time.Minute, "acks after the follower rejoined")
	sent := s.Finish()
	if n := s.CheckExactlyOnce(c.Bootstrap(), 0); n != sent {
		t.Fatalf("%d records stored, %d sent", n, sent)
	}
	batches := waitSameLogs(t, c, topic, 0)
	stall, _ := s.LongestGap(pausedAt, resumedAt)
	t.Logf("paused follower %d (controller %v) of leader %d with %d acknowledged; out of the ISR after %v by %s; "+
		"%d acks while paused (%d after the shrink was seen), longest stall %v; rejoined %v after SIGCONT; %d records, %d batches, logs identical",
		victim, victim == ctrl, leader, atPause, shrunkAt.Sub(pausedAt).Round(10*time.Millisecond), how,
		s.AcksBetween(pausedAt, resumedAt), atResume-atShrink, stall.Round(10*time.Millisecond),
		rejoinedAt.Sub(resumedAt).Round(10*time.Millisecond), sent, len(batches))
}

// TestPausedLeaderIsReplaced: RF 3, min.insync.replicas 2, an idempotent
// acks=all stream whose client gives up on a silent broker within a few
// seconds. The partition's leader (not the controller) is stopped with
// SIGSTOP: the controller fences it when its session expires and elects
// another ISR member, and the stream goes on there. On SIGCONT the old
// leader finds, still queued in its sockets, requests from before the
// pause (produce requests its clients gave up on, fetches of followers
// that moved on) and serves them in the epoch it believes it still leads
// until the metadata tells it otherwise: nothing it appends then may be
// acknowledged or survive. It must become a follower, truncate to the new
// leader's log and rejoin the ISR; every acknowledged record is read back
// exactly once, in order, and the logs end identical.
func TestPausedLeaderIsReplaced(t *testing.T) {
	c := harness.StartCluster(t, 3)
	guardNodes(t, c)
	const topic = "paused-leader"
	ctrl := c.AgreedController(opTimeout)
	leader := otherNodes(3, ctrl)[0]
	createAssignedTopic(t, c, topic, [][]int32{append([]int32{leader}, otherNodes(3, leader)...)}, minISR2())
	s := harness.StartAckStream(t, c, harness.StreamConfig{Topic: topic, Pace: 2 * time.Millisecond},
		kgo.RequestTimeoutOverhead(time.Second), kgo.ProduceRequestTimeout(2*time.Second),
		kgo.MetadataMinAge(250*time.Millisecond))
	s.WaitAcks(t, 500, 2*time.Minute, "acks before the pause")

	old := c.Node(leader)
	since := logEnds(c)
	pausedAt := time.Now()
	pauseNode(t, old)
	st := waitSeenBy(t, c, otherNodes(3, leader), topic, 0, 2*time.Minute, "a new leader", func(st harness.PartitionState) bool {
		return st.Leader > 0 && st.Leader != leader
	})
	electedAt := time.Now()
	s.WaitMore(t, 500, 2*time.Minute, "acks on the new leader")
	resumedAt := time.Now()
	old.Resume()

	// Just resumed, the old leader answers Metadata from its stale image
	// (itself leading the old epoch with a full ISR) until it has applied
	// the metadata log.
	waitEveryNode(t, c, topic, 0, 2*time.Minute, "a full ISR under the new leader", func(now harness.PartitionState) bool {
		return now.LeaderEpoch >= st.LeaderEpoch && now.Leader != leader && fullISR(now)
	})
	rejoinedAt := time.Now()
	s.WaitMore(t, 300, 2*time.Minute, "acks after the old leader rejoined")
	sent := s.Finish()
	if n := s.CheckExactlyOnce(c.Bootstrap(), 0); n != sent {
		t.Fatalf("%d records stored, %d sent", n, sent)
	}
	batches := waitSameLogs(t, c, topic, 0)
	truncated := logLines(old, since[leader-1], "truncated by leader epoch")
	stall, _ := s.LongestGap(pausedAt, resumedAt)
	t.Logf("leader %d paused; %d leads (epoch %d) %v later; longest stall %v; rejoined %v after SIGCONT as a follower, truncations logged: %d %q; %d records, %d batches, logs identical",
		leader, st.Leader, st.LeaderEpoch, electedAt.Sub(pausedAt).Round(10*time.Millisecond), stall.Round(10*time.Millisecond),
		rejoinedAt.Sub(resumedAt).Round(10*time.Millisecond), len(truncated), truncated, sent, len(batches))
}
