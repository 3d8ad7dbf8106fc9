package cluster

import (
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/weir-project/weir/test/harness"
)

// The KIP-101 tests place a two-replica partition on nodes 1 (leader A)
// and 2 (follower B); node 3 only completes the metadata quorum. Leader
// rebalancing is off so that leadership moves only when a test makes it.

// TestKIP101LeaderAndFollowerCrashInTurn reproduces the two failures of
// KIP-101 ("use leader epoch rather than high watermark for truncation")
// with real processes and kill -9.
func TestKIP101LeaderAndFollowerCrashInTurn(t *testing.T) {
	t.Run("scenario1", testKIP101StaleHighWatermark)
	t.Run("scenario2", testKIP101DivergenceAfterBothFail)
}

// testKIP101StaleHighWatermark is KIP-101 scenario 1, "high watermark
// truncation followed by immediate leader election". Follower B holds
// every record the producer was told is written (acks=all,
// min.insync.replicas=2: the leader acknowledged only once B had them),
// but the high watermark B has on disk does not cover them: B learns the
// HW from the next fetch response and writes it to
// replication-offset-checkpoint only every
// replica.high.watermark.checkpoint.interval.ms, set here to an hour so
// that the stale HW is forced, and checked on disk, not hoped for.
//
// Leader A crashes (kill -9); B becomes leader with ISR {B}. B crashes
// and restarts while A is still down (the metadata quorum is lost in
// between: only node 3 runs); B, alone in the ISR, is elected again.
//
// The old rule, "a restarted replica truncates its log to its
// checkpointed high watermark", cuts the acknowledged records off B at
// this restart, and B then leads without them: they are lost for good
// (A, returning, truncates to its own HW and copies B, or keeps its
// copies at offsets where B now writes other records: the replicas
// diverge). By leader epoch, B truncates nothing at start (a leader has
// no one to ask and nothing to cut), and A, following B, asks B where its
// latest epoch ends and cuts only what B lacks. So: every acknowledged
// record is still there, at its offset, and both logs end identical.
func testKIP101StaleHighWatermark(t *testing.T) {
	c := harness.StartCluster(t, 3,
		"replica.high.watermark.checkpoint.interval.ms=3600000",
		"log.flush.offset.checkpoint.interval.ms=3600000", // Checkpoint writes the HWs too
		"auto.leader.rebalance.enable=false")
	const topic = "kip101-s1"
	a, b := c.Node(1), c.Node(2)
	createAssignedTopic(t, c, topic, [][]int32{{1, 2}}, minISR2())

	const n = 40
	values := make([]string, n)
	for i := range values {
		values[i] = fmt.Sprintf("m%d", i)
	}
	acked := produceSyncEach(t, acksAllProducer(c), topic, values...)
	e0 := c.WaitFullISR(topic, 0, opTimeout).LeaderEpoch

	// A crashes; B leads, alone in the ISR.
	a.Kill()
	st := c.WaitPartition(topic, 0, opTimeout, "B leading alone", func(st harness.PartitionState) bool {
		return st.Leader == 2 && st.LeaderEpoch > e0 && slices.Equal(st.ISR, []int32{2})
	})
	// B crashes too. The state KIP-101 describes is now on B's disk: every
	// acknowledged record, and a high watermark that does not cover them.
	b.Kill()
	onB := harness.StoredBatches(t, b.Dir, topic, 0)
	if len(onB) == 0 || onB[len(onB)-1].LastOffset != n-1 {
		t.Fatalf("B holds %v, want every acknowledged record (offsets 0..%d)", onB, n-1)
	}
	hw := checkpointedHW(t, b.Dir, topic, 0)
	if hw >= n {
		t.Fatalf("B's checkpointed high watermark is %d: the scenario needs one below %d", hw, n)
	}
	t.Logf("B down with offsets 0..%d on disk and a checkpointed high watermark of %d: truncating to it would drop %d acknowledged records", n-1, hw, n-hw)

	// B restarts and is elected again: it alone is in the ISR.
	restarted := logEnd(b)
	b.Restart()
	st = c.WaitPartition(topic, 0, 2*time.Minute, "B leading again", func(ps harness.PartitionState) bool {
		return ps.Leader == 2 && ps.LeaderEpoch > st.LeaderEpoch
	})
	if got := harness.StoredBatches(t, b.Dir, topic, 0); !slices.Equal(got, onB) {
		t.Fatalf("B leads epoch %d with %d batches, %d before its restart; first difference at %s", st.LeaderEpoch, len(got), len(onB), firstDiff(got, onB))
	}
	if cut := logLines(b, restarted, "component=replication", "truncated"); len(cut) > 0 {
		t.Fatalf("B truncated its log at restart:\n%s", cut[0])
	}
	// The new leader takes writes (acks=1: the ISR is below
	// min.insync.replicas until A is back), in its own epoch.
	one := c.Client(kgo.RequiredAcks(kgo.LeaderAck()), kgo.RecordPartitioner(kgo.ManualPartitioner()), kgo.ProducerLinger(0))
	after := produceSyncEach(t, one, topic, "after-0", "after-1", "after-2")

	a.Restart()
	c.WaitFullISR(topic, 0, 2*time.Minute)
	batches := waitLogsAgreeOn(t, c, topic, 0, 1, 2)
	if last := batches[len(batches)-1].LastOffset; last != n+2 {
		t.Fatalf("the logs end at offset %d, want %d", last, n+2)
	}
	got := readCommitted(t, c, topic, 0, n+3)
	checkAcked(t, got, acked, "acks=all")
	checkAcked(t, got, after, "acks=1 after the failover")
}

// testKIP101DivergenceAfterBothFail is KIP-101 scenario 2, "replica
// divergence on restart after multiple hard failures": both replicas
// fail, and the one that comes back first has lost writes that never
// reached its disk. Kafka promises nothing for records when every
// replica fails, but the replicas must not diverge.
//
// A and B hold records 0..n-1 (acks=all, min.insync.replicas=1), A's
// checkpointed high watermark covers all of them (waited for on disk).
// A crashes; B leads alone. B crashes too, and a power failure is
// simulated on it: its last batches, written but never flushed (nothing
// forces a flush), are cut from its segment file while it is down. B
// restarts and, the only ISR member, leads again with a shorter log, and
// takes new records at the offsets it lost. A restarts.
//
// The old rule makes A truncate to its high watermark, which covers its
// whole log: it keeps its old records where B now has the new ones, and
// fetches on from its end. The logs differ from offset L (where B's loss
// starts) on, for good. By leader epoch, A asks B where A's latest epoch
// ends on B, is told L, cuts there, and copies B's new records.
func testKIP101DivergenceAfterBothFail(t *testing.T) {
	c := harness.StartCluster(t, 3,
		"replica.high.watermark.checkpoint.interval.ms=100",
		"auto.leader.rebalance.enable=false")
	const topic = "kip101-s2"
	a, b := c.Node(1), c.Node(2)
	createAssignedTopic(t, c, topic, [][]int32{{1, 2}}, map[string]*string{"min.insync.replicas": kmsg.StringPtr("1")})

	const n, lost = 40, 10
	values := make([]string, n)
	for i := range values {
		values[i] = fmt.Sprintf("m%d", i)
	}
	acked := produceSyncEach(t, acksAllProducer(c), topic, values...)
	e0 := c.WaitFullISR(topic, 0, opTimeout).LeaderEpoch
	harness.WaitFor(t, opTimeout, "A's checkpointed high watermark to cover every record", func() bool {
		return checkpointedHW(t, a.Dir, topic, 0) == n
	})

	a.Kill()
	if hw := checkpointedHW(t, a.Dir, topic, 0); hw != n {
		t.Fatalf("A's checkpointed high watermark is %d after its crash, want %d", hw, n)
	}
	alone := c.WaitPartition(topic, 0, opTimeout, "B leading alone", func(st harness.PartitionState) bool {
		return st.Leader == 2 && st.LeaderEpoch > e0 && slices.Equal(st.ISR, []int32{2})
	})
	b.Kill()
	l := loseUnflushedTail(t, b.Dir, topic, 0, lost)
	if l != n-lost {
		t.Fatalf("B's loss starts at offset %d, want %d (one batch per record)", l, n-lost)
	}

	b.Restart()
	c.WaitPartition(topic, 0, 2*time.Minute, "B leading again", func(st harness.PartitionState) bool {
		return st.Leader == 2 && st.LeaderEpoch > alone.LeaderEpoch
	})
	newer := make([]string, lost+5)
	for i := range newer {
		newer[i] = fmt.Sprintf("new%d", i)
	}
	after := produceSyncEach(t, acksAllProducer(c), topic, newer...)
	for v, off := range after {
		if off < l {
			t.Fatalf("%s written at offset %d, below B's log end %d after the loss", v, off, l)
		}
	}

	restarted := logEnd(a)
	a.Restart()
	c.WaitFullISR(topic, 0, 2*time.Minute)
	batches := waitLogsAgreeOn(t, c, topic, 0, 1, 2)
	end := l + int64(len(newer))
	if last := batches[len(batches)-1].LastOffset; last != end-1 {
		t.Fatalf("the logs end at offset %d, want %d", last, end-1)
	}
	cut := logLines(a, restarted, "truncated by leader epoch", fmt.Sprintf("from=%d", n), fmt.Sprintf("to=%d", l))
	if len(cut) == 0 {
		t.Fatalf("A did not log its truncation from %d to %d by leader epoch:\n%s", n, l, a.Output())
	}
	got := readCommitted(t, c, topic, 0, end)
	checkAcked(t, got, after, "acks=all after the failures")
	survived := maps.Clone(acked)
	maps.DeleteFunc(survived, func(_ string, off int64) bool { return off >= l })
	checkAcked(t, got, survived, "acks=all below the lost tail")
	t.Logf("A cut %d records (offsets %d..%d) that only it still held: %s", n-l, l, n-1, cut[0])
}

// TestFastRepeatedElections (KIP-279): leadership moves several times in
// quick succession while two producers write, one with acks=all
// (idempotent), one with acks=1, and each deposed leader takes with it
// records no one else has, so that the replicas' logs diverge at a new
// epoch every time.
//
// The divergence is forced: every node's client listener is reached
// through a proxy (harness.StartProxiedCluster), so holding the leader's
// proxy stops its followers' fetches while it stays a live member of the
// cluster (heartbeats are not proxied). The leader then takes a few
// acks=1 batches sent to it directly, is killed -9, and the controller
// elects one of the followers, which never saw them. replica.lag.time.max.ms
// is an hour, so the leader cannot drop its followers from the ISR during
// the hold. The next round starts as soon as the new leader has a
// follower in sync, while the node just killed is still restarting or
// truncating.
//
// Unclean election is off (Kafka's default), so Kafka promises: every
// acknowledged acks=all record survives, at its offset; acks=1 records
// may be lost; the replicas converge on one log. The forced tails are the
// acks=1 records that must be lost: each was on a dead leader only, and
// its node truncates it by epoch when it follows again.
func TestFastRepeatedElections(t *testing.T) {
	c, proxies := harness.StartProxiedCluster(t, 3,
		"replica.lag.time.max.ms=3600000",
		"auto.leader.rebalance.enable=false")
	const topic, rounds = "elections", 5
	createTopic(t, c, topic, 1, 3, minISR2())
	allAcks := harness.StartAckStream(t, c, harness.StreamConfig{Topic: topic, Prefix: "all", Pace: 5 * time.Millisecond, Client: acksAllProducer(c)})
	oneAcks := harness.StartAckStream(t, c, harness.StreamConfig{Topic: topic, Prefix: "one", Pace: 5 * time.Millisecond,
		Client: c.Client(kgo.RequiredAcks(kgo.LeaderAck()), kgo.RecordPartitioner(kgo.ManualPartitioner()), kgo.RecordDeliveryTimeout(2*time.Minute))})

	type round struct {
		killed      *harness.Broker
		tail        []string
		tailAt      int64
		restartedAt int // the killed node's log end when it restarted
	}
	var done []round
	var epochs []int32
	for r := range rounds {
		st := waitAgreedPartition(t, c, topic, 0, 2*time.Minute, "a leader with a follower in sync", func(st harness.PartitionState) bool {
			return st.Leader > 0 && len(st.ISR) >= 2
		})
		epochs = append(epochs, st.LeaderEpoch)
		leader := c.Node(st.Leader)
		oneAcks.WaitAcks(t, oneAcks.Count()+20, 2*time.Minute, fmt.Sprintf("round %d: acks=1 writes on leader %d", r, st.Leader))

		// Cut the leader's followers off, give it a tail of its own, kill it.
		proxies[st.Leader-1].Hold(harness.BothWays)
		tail := []string{fmt.Sprintf("tail%d-0", r), fmt.Sprintf("tail%d-1", r), fmt.Sprintf("tail%d-2", r)}
		at := produceDirect(t, leader, topic, 0, 1, tail[:2]...)
		produceDirect(t, leader, topic, 0, 1, tail[2])
		leader.Kill()
		killed := time.Now()
		proxies[st.Leader-1].Cut(harness.Refuse)
		next := c.WaitPartition(topic, 0, 2*time.Minute, "a new leader", func(ns harness.PartitionState) bool {
			return ns.Leader > 0 && ns.Leader != st.Leader && ns.LeaderEpoch > st.LeaderEpoch
		})
		t.Logf("round %d: leader %d (epoch %d) killed with its tail at offset %d; node %d leads epoch %d %v later",
			r, st.Leader, st.LeaderEpoch, at, next.Leader, next.LeaderEpoch, time.Since(killed).Round(10*time.Millisecond))
		proxies[st.Leader-1].Heal()
		from := logEnd(leader)
		leader.Restart()
		done = append(done, round{killed: leader, tail: tail, tailAt: at, restartedAt: from})
	}

	c.WaitFullISR(topic, 0, 2*time.Minute)
	sentAll, sentOne := allAcks.Stop(), oneAcks.Stop()
	batches := waitSameLogs(t, c, topic, 0)
	got := readCommitted(t, c, topic, 0, batches[len(batches)-1].LastOffset+1)

	checkAcked(t, got, allAcks.Offsets(), "acks=all")
	nAll, failedAll := allAcks.Count(), len(allAcks.Failed())
	seen := map[string]int64{}
	for off, v := range got {
		if prev, dup := seen[v]; dup && v[:4] == "all-" {
			t.Fatalf("%s stored twice (offsets %d and %d) by an idempotent producer", v, prev, off)
		}
		seen[v] = off
	}
	for r, rd := range done {
		for _, v := range rd.tail {
			if off, ok := seen[v]; ok {
				t.Fatalf("round %d: %s, written only to the leader that was killed, is at offset %d", r, v, off)
			}
		}
		cuts := logLines(rd.killed, rd.restartedAt, "truncated by leader epoch", "topic="+topic)
		if !slices.ContainsFunc(cuts, func(l string) bool { return truncatedTo(l) <= rd.tailAt }) {
			t.Fatalf("round %d: the killed leader did not truncate its tail (from offset %d) by epoch; it logged %q", r, rd.tailAt, cuts)
		}
	}
	lostOne := 0
	for v, off := range oneAcks.Offsets() {
		if got[off] != v {
			lostOne++
		}
	}
	nOne, failedOne := oneAcks.Count(), len(oneAcks.Failed())
	walkBacks := 0
	for _, b := range c.Nodes {
		if u := logLines(b, 0, "unclean leader election"); len(u) > 0 {
			t.Fatalf("an unclean election with unclean.leader.election.enable=false:\n%s", u[0])
		}
		walkBacks += len(logLines(b, 0, "truncated by leader epoch", "done=false"))
	}
	t.Logf("leader epochs %v; acks=all: %d sent, %d acknowledged, all present, %d failed; acks=1: %d sent, %d acknowledged, %d of them lost, %d failed; %d KIP-279 walk-back steps; logs agree on %d batches",
		epochs, sentAll, nAll, failedAll, sentOne, nOne, lostOne, failedOne, walkBacks, len(batches))
	nodeFigures(t, c)
}

// truncatedTo reads the offset a "truncated by leader epoch" line cut to.
func truncatedTo(line string) int64 {
	for _, f := range strings.Fields(line) {
		if v, ok := strings.CutPrefix(f, "to="); ok {
			if n, err := strconv.ParseInt(v, 10, 64); err == nil {
				return n
			}
		}
	}
	return 1 << 62 // not found: never at or below an offset
}
