package cluster

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/weir-project/weir/test/harness"
)

// TestDeleteRecordsSurvivesFailover: a DeleteRecords answered is a
// deletion no failover undoes. RF 3, 100 records on every replica.
//
//  1. The leader's proxy holds every byte (its followers' fetches stall,
//     though they stay live: heartbeats do not cross the proxy), and a
//     DeleteRecords below 40 sent to the leader itself with a 1.5 s
//     timeout is answered REQUEST_TIMED_OUT: the followers cannot have
//     raised their log starts. Answered at the leader's own step, it
//     would have said "done" while both followers still served offset 0.
//  2. Released, franz-go's DeleteRecords below 70 is answered with a low
//     watermark of at least 70, and the leader is killed -9 at once. The
//     new leader's log starts at 70 or later: franz-go's ListOffsets and
//     kcat's first record from the beginning both say so.
//  3. The old leader restarts, rejoins the ISR and leads again (preferred
//     election): it took the log start up from its leader's fetch
//     answers, and its log too starts at 70 or later.
func TestDeleteRecordsSurvivesFailover(t *testing.T) {
	c, proxies := harness.StartProxiedCluster(t, 3)
	guardNodes(t, c)
	const topic = "delete-records"
	leader := int32(1)
	createAssignedTopic(t, c, topic, [][]int32{{1, 2, 3}}, nil)
	s := harness.StartAckStream(t, c, harness.StreamConfig{Topic: topic, Records: 100, Pace: time.Millisecond})
	<-s.Done()
	s.Finish()
	waitSameLogs(t, c, topic, 0)

	// 1. Followers live but not fetching: the deletion cannot complete.
	proxies[leader-1].Hold(harness.BothWays)
	if got := deleteRecordsAt(t, c.Node(leader), topic, 40, 1500); got.ErrorCode != kerr.RequestTimedOut.Code || got.LowWatermark != -1 {
		t.Fatalf("DeleteRecords with both followers' fetches held: %v, low watermark %d; want REQUEST_TIMED_OUT, -1",
			kerr.ErrorForCode(got.ErrorCode), got.LowWatermark)
	}
	c.WaitBrokerLive(2, opTimeout) // held fetches, live brokers: what the wait was for
	c.WaitBrokerLive(3, opTimeout)
	proxies[leader-1].Resume(harness.BothWays)

	// 2. An answered deletion, then the leader's loss.
	deleteBelow(t, c, topic, 70)
	c.Node(leader).Kill()
	st := waitSeenBy(t, c, otherNodes(3, leader), topic, 0, 2*time.Minute, "a new leader", func(st harness.PartitionState) bool {
		return st.Leader > 0 && st.Leader != leader
	})
	checkLogStart(t, c, topic, st.Leader, 70)

	// 3. The old leader back, and leading again.
	c.Node(leader).Restart()
	waitEveryNode(t, c, topic, 0, 2*time.Minute, "a full ISR", fullISR)
	if code := electOne(t, c.Client(), 0, topic); code != 0 && code != kerr.ElectionNotNeeded.Code {
		t.Fatalf("preferred election: %v", kerr.ErrorForCode(code))
	}
	waitEveryNode(t, c, topic, 0, 2*time.Minute, fmt.Sprintf("leader %d", leader), func(st harness.PartitionState) bool {
		return st.Leader == leader
	})
	checkLogStart(t, c, topic, leader, 70)
}

// checkLogStart checks, through franz-go's ListOffsets and kcat's first
// record from the beginning, that partition 0 of topic, led by node
// leader, starts at or past atLeast.
func checkLogStart(t *testing.T, c *harness.Cluster, topic string, leader int32, atLeast int64) {
	t.Helper()
	adm := kadm.NewClient(c.Client())
	var start int64
	harness.WaitFor(t, opTimeout, "the log start offset", func() bool {
		so, err := adm.ListStartOffsets(harness.Ctx(t, opTimeout), topic)
		if err != nil {
			return false
		}
		o, ok := so.Lookup(topic, 0)
		start = o.Offset
		return ok && o.Err == nil
	})
	if start < atLeast {
		t.Fatalf("leader %d: log start %d, want %d or later: deleted records are readable again", leader, start, atLeast)
	}
	requireKcat(t)
	first := clientOutput(t, "kcat", "-C", "-b", c.Node(leader).Addr, "-t", topic, "-p", "0", "-o", "beginning",
		"-c", "1", "-q", "-f", "%o %s\n")()
	off, _, _ := strings.Cut(first, " ")
	if off != fmt.Sprint(start) {
		t.Fatalf("leader %d: kcat's first record %q, want offset %d", leader, first, start)
	}
}

// TestDeleteRecordsWaitsForEligibleReplicas: a replica that may be
// elected as it is, without fetching first, is waited for even while its
// broker is down. Replicas {1, 2, 3}, min.insync.replicas 3: node 2
// stopped (SIGTERM, a clean shutdown) leaves the ISR {1, 3} below its
// minimum, so node 2 holds every committed record and is an eligible
// leader replica (KIP-966), electable once it is back. A DeleteRecords
// sent meanwhile is answered REQUEST_TIMED_OUT: answered from the live
// replicas alone, as Kafka does, node 2 could come back with its old log
// start and be elected before its first fetch raised it. Once node 2 is
// back and in sync, a deletion below 70 is answered; the leader is
// killed -9, and the new leader's log starts at 70 or later.
func TestDeleteRecordsWaitsForEligibleReplicas(t *testing.T) {
	c := harness.StartCluster(t, 3, "auto.leader.rebalance.enable=false")
	guardNodes(t, c)
	const topic = "delete-records-elr"
	createAssignedTopic(t, c, topic, [][]int32{{1, 2, 3}}, map[string]*string{"min.insync.replicas": kmsg.StringPtr("3")})
	s := harness.StartAckStream(t, c, harness.StreamConfig{Topic: topic, Records: 100, Pace: time.Millisecond})
	<-s.Done()
	s.Finish()
	waitSameLogs(t, c, topic, 0)

	c.Node(2).Stop()
	waitELR(t, c, topic, elrView{1, []int32{1, 3}, []int32{2}})
	if got := deleteRecordsAt(t, c.Node(1), topic, 40, 1500); got.ErrorCode != kerr.RequestTimedOut.Code || got.LowWatermark != -1 {
		t.Fatalf("DeleteRecords with node 2 eligible and down: %v, low watermark %d; want REQUEST_TIMED_OUT, -1",
			kerr.ErrorForCode(got.ErrorCode), got.LowWatermark)
	}

	c.Node(2).Restart()
	waitELR(t, c, topic, elrView{1, []int32{1, 2, 3}, []int32{}})
	deleteBelow(t, c, topic, 70)
	c.Node(1).Kill()
	st := waitSeenBy(t, c, otherNodes(3, 1), topic, 0, 2*time.Minute, "a new leader", func(st harness.PartitionState) bool {
		return st.Leader > 1
	})
	checkLogStart(t, c, topic, st.Leader, 70)
}

// deleteBelow deletes partition 0 of topic below offset through
// franz-go's admin client, which must answer a low watermark at or past
// it.
func deleteBelow(t *testing.T, c *harness.Cluster, topic string, offset int64) {
	t.Helper()
	offsets := kadm.Offsets{}
	offsets.AddOffset(topic, 0, offset, -1)
	dr, err := kadm.NewClient(c.Client()).DeleteRecords(harness.Ctx(t, opTimeout), offsets)
	if err != nil {
		t.Fatal(err)
	}
	if d, ok := dr.Lookup(topic, 0); !ok || d.Err != nil || d.LowWatermark < offset {
		t.Fatalf("DeleteRecords below %d: %+v (found %v)", offset, d, ok)
	}
}

// deleteRecordsAt sends a DeleteRecords of partition 0 of topic below
// offset to node b itself, with the given timeout, and returns its answer.
func deleteRecordsAt(t *testing.T, b *harness.Broker, topic string, offset int64, timeoutMillis int32) kmsg.DeleteRecordsResponseTopicPartition {
	t.Helper()
	req := kmsg.NewPtrDeleteRecordsRequest()
	req.SetVersion(2)
	req.TimeoutMillis = timeoutMillis
	rt := kmsg.NewDeleteRecordsRequestTopic()
	rt.Topic = topic
	rp := kmsg.NewDeleteRecordsRequestTopicPartition()
	rp.Partition, rp.Offset = 0, offset
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	r, _ := b.Dial().Request(req)
	return r.(*kmsg.DeleteRecordsResponse).Topics[0].Partitions[0]
}
