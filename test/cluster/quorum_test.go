package cluster

import (
	"fmt"
	"maps"
	"slices"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/weir-project/weir/internal/storage/recordbatch"
	"github.com/weir-project/weir/test/harness"
)

// TestTwoOfThreeDownNoAcks: RF 3, min.insync.replicas 2. Two of the three
// nodes are killed -9, which also loses the metadata quorum (two of three
// voters). The survivor leads partition 0 (whose ISR it still believes is
// all three) and follows partition 1, led by a killed node. acks=all
// produce requests sent to it meanwhile must never be acknowledged: each
// answer is an error (REQUEST_TIMED_OUT while the survivor waits for
// followers that never come, NOT_LEADER_OR_FOLLOWER where it does not
// lead, NOT_ENOUGH_REPLICAS if its ISR had shrunk) or no answer at all.
// The requests go on until the survivor has tried to shrink the ISR
// (replica.lag.time.max.ms 3000) and failed for want of a controller, so
// that the attempt is covered. Then both nodes restart: the partitions
// regain a full ISR, a fresh acks=all producer succeeds on both, and
// every record acknowledged before the kill is still where its
// acknowledgement said, exactly once; the logs end identical.
//
// The two cases differ in whether the survivor was the active controller
// (the Raft leader, which must step down without a quorum) or a
// follower of the metadata log.
func TestTwoOfThreeDownNoAcks(t *testing.T) {
	t.Run("survivor-is-controller", func(t *testing.T) { twoOfThreeDown(t, true) })
	t.Run("survivor-not-controller", func(t *testing.T) { twoOfThreeDown(t, false) })
}

// outageCodes are the answers an acks=all produce may get while two of
// three replicas and the quorum are gone. Anything else, success above
// all, fails the test.
var outageCodes = map[int16]bool{
	kerr.RequestTimedOut.Code:              true,
	kerr.NotLeaderForPartition.Code:        true,
	kerr.NotEnoughReplicas.Code:            true,
	kerr.NotEnoughReplicasAfterAppend.Code: true,
	kerr.LeaderNotAvailable.Code:           true,
}

func twoOfThreeDown(t *testing.T, survivorIsController bool) {
	c := harness.StartCluster(t, 3, "replica.lag.time.max.ms=3000")
	guardNodes(t, c)
	const topic = "two-down"
	ctrl := c.AgreedController(opTimeout)
	survivor := ctrl
	if !survivorIsController {
		survivor = otherNodes(3, ctrl)[0]
	}
	killed := otherNodes(3, survivor)
	createAssignedTopic(t, c, topic, [][]int32{
		{survivor, killed[0], killed[1]}, // led by the survivor
		{killed[0], survivor, killed[1]}, // led by a killed node
	}, minISR2())

	cl := c.Client(kgo.DefaultProduceTopic(topic), kgo.RecordPartitioner(kgo.ManualPartitioner()),
		kgo.RequiredAcks(kgo.AllISRAcks()))
	before := map[int32]map[string]int64{}
	for p := range int32(2) {
		before[p] = produceAcked(t, cl, topic, p, "before", 300)
	}

	if now := c.AgreedController(opTimeout); (now == survivor) != survivorIsController {
		t.Logf("the controller moved to %d before the kill; the survivor %d is controller: %v", now, survivor, now == survivor)
	}
	since := logEnds(c)[survivor-1]
	killedAt := time.Now()
	for _, id := range killed {
		c.Node(id).Kill()
	}

	// No acks=all produce is acknowledged while the quorum is gone.
	conn := c.Node(survivor).Dial()
	codes := map[string]int{}
	rounds := 0
	sawShrinkFail := func() bool {
		return len(logLines(c.Node(survivor), since, "ISR change not made")) > 0
	}
	deadline := time.Now().Add(2 * time.Minute)
	for rounds < 5 || !sawShrinkFail() {
		if time.Now().After(deadline) {
			t.Fatalf("after %d rounds in %v the survivor %d never logged a failed ISR change:\n%s",
				rounds, time.Since(killedAt), survivor, tailOf(c.Node(survivor).Output(), 6000))
		}
		req := outageProduce(t, topic, rounds)
		resp, _, err := conn.TryRequest(req)
		rounds++
		if err != nil {
			// No answer is no acknowledgement; open a new connection.
			codes["no answer"]++
			conn = c.Node(survivor).Dial()
			continue
		}
		for _, rt := range resp.(*kmsg.ProduceResponse).Topics {
			for _, rp := range rt.Partitions {
				name := kerr.ErrorForCode(rp.ErrorCode)
				if rp.ErrorCode == 0 {
					t.Fatalf("round %d: acks=all produce to %s-%d acknowledged at offset %d with two of three nodes and the quorum down",
						rounds, topic, rp.Partition, rp.BaseOffset)
				}
				if !outageCodes[rp.ErrorCode] {
					t.Fatalf("round %d: %s-%d answered %v, want one of REQUEST_TIMED_OUT, NOT_LEADER_OR_FOLLOWER, NOT_ENOUGH_REPLICAS(_AFTER_APPEND), LEADER_NOT_AVAILABLE",
						rounds, topic, rp.Partition, name)
				}
				codes[fmt.Sprintf("p%d %s", rp.Partition, name.(*kerr.Error).Message)]++
			}
		}
	}
	outage := time.Since(killedAt)
	t.Logf("the survivor's failed ISR change: %s", logLines(c.Node(survivor), since, "ISR change not made")[0])

	restartedAt := time.Now()
	for _, id := range killed {
		c.Node(id).Restart()
	}
	for p := range int32(2) {
		waitEveryNode(t, c, topic, p, 2*time.Minute, "a full ISR", fullISR)
	}
	healedAt := time.Now()
	cl2 := c.Client(kgo.DefaultProduceTopic(topic), kgo.RecordPartitioner(kgo.ManualPartitioner()),
		kgo.RequiredAcks(kgo.AllISRAcks()))
	after := map[int32]map[string]int64{}
	for p := range int32(2) {
		after[p] = produceAcked(t, cl2, topic, p, "after", 300)
	}

	stored := 0
	for p := range int32(2) {
		got := harness.PartitionValues(t, c.Bootstrap(), topic, p)
		checkOnceEach(t, topic, p, got, before[p], after[p])
		waitSameLogs(t, c, topic, p)
		stored += len(got)
	}
	t.Logf("survivor %d (controller %v): %d acks=all rounds in %v of outage, none acknowledged (%v); "+
		"quorum and full ISRs back %v after the restarts began; %d records stored on both partitions, logs identical",
		survivor, survivorIsController, rounds, outage.Round(10*time.Millisecond), codes,
		healedAt.Sub(restartedAt).Round(10*time.Millisecond), stored)
}

// produceAcked writes n records "<prefix>-<p>-<i>" to partition p with
// acks=all, all of which must be acknowledged, and returns their offsets.
func produceAcked(t *testing.T, cl *kgo.Client, topic string, p int32, prefix string, n int) map[string]int64 {
	t.Helper()
	recs := make([]*kgo.Record, n)
	for i := range recs {
		recs[i] = &kgo.Record{Topic: topic, Partition: p, Value: fmt.Appendf(nil, "%s-%d-%d", prefix, p, i)}
	}
	out := map[string]int64{}
	for _, r := range cl.ProduceSync(harness.Ctx(t, 3*time.Minute), recs...) {
		if r.Err != nil {
			t.Fatalf("produce %s to %s-%d: %v", r.Record.Value, topic, p, r.Err)
		}
		out[string(r.Record.Value)] = r.Record.Offset
	}
	return out
}

// outageProduce is a Produce v9, acks=-1 with a 2 s timeout, of one
// batch to each of partitions 0 and 1, valued "outage-<p>-<round>".
func outageProduce(t *testing.T, topic string, round int) *kmsg.ProduceRequest {
	t.Helper()
	req := kmsg.NewPtrProduceRequest()
	req.SetVersion(9)
	req.Acks, req.TimeoutMillis = -1, 2000
	rt := kmsg.NewProduceRequestTopic()
	rt.Topic = topic
	for p := range int32(2) {
		batch, err := recordbatch.Build(recordbatch.BuildOptions{
			BaseTimestamp: time.Now().UnixMilli(),
			ProducerID:    -1, ProducerEpoch: -1, BaseSequence: -1,
		}, []recordbatch.Record{{Value: fmt.Appendf(nil, "outage-%d-%d", p, round)}})
		if err != nil {
			t.Fatal(err)
		}
		rp := kmsg.NewProduceRequestTopicPartition()
		rp.Partition, rp.Records = p, batch
		rt.Partitions = append(rt.Partitions, rp)
	}
	req.Topics = append(req.Topics, rt)
	return req
}

// checkOnceEach checks a partition read back (offset -> value): no offset
// missing below its end, no value twice, and every acknowledged value at
// the offset its acknowledgement gave. Values never acknowledged (the
// outage's) may be there or not.
func checkOnceEach(t *testing.T, topic string, p int32, got map[int64]string, acked ...map[string]int64) {
	t.Helper()
	seen := map[string]int64{}
	offsets := slices.Sorted(maps.Keys(got))
	for i, off := range offsets {
		if i > 0 && off != offsets[i-1]+1 {
			t.Fatalf("%s-%d: offsets jump from %d to %d", topic, p, offsets[i-1], off)
		}
		if prev, dup := seen[got[off]]; dup {
			t.Fatalf("%s-%d: %q stored twice, at %d and %d", topic, p, got[off], prev, off)
		}
		seen[got[off]] = off
	}
	for _, m := range acked {
		for v, off := range m {
			if got[off] != v {
				t.Fatalf("%s-%d: %s acknowledged at offset %d, which holds %q (%d records stored)", topic, p, v, off, got[off], len(got))
			}
		}
	}
}

// tailOf is the last n bytes of s.
func tailOf(s string, n int) string { return s[max(0, len(s)-n):] }
