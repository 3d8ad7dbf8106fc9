package cluster

import (
	"bytes"
	"fmt"
	"os/exec"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/weir-project/weir/test/harness"
)

// TestStaleLeaderSendsConsumersAway: a leader stopped (SIGSTOP) long
// enough to be fenced is replaced, and the new leader commits records
// beyond the old one's log end, and deletes offsets below 5 (DeleteRecords
// does not wait for the fenced old leader). The old leader is resumed while the two
// others are stopped in turn, so no heartbeat of its gets through and its
// metadata still shows it leading the old epoch. Asked by a consumer for
// an offset it does not hold, it must not answer OFFSET_OUT_OF_RANGE (the
// consumer would reset its position and read the partition again from the
// start, a history no broker that ever committed those records may show):
// it answers NOT_LEADER_OR_FOLLOWER (naming no leader: its metadata would
// name itself), to Fetch, to a consumer's OffsetForLeaderEpoch, and to a
// consumer's ListOffsets (its log start 0 would bring the deleted records
// back, its high watermark is behind). Then
// kcat (librdkafka) and a franz-go consumer start at that offset,
// bootstrapped on the old leader only; once it has refused each at least
// three times the others are resumed, and each must read the record at
// that offset first. (Seen in weir verify, seed 225: kill, restart and
// pause overlapping on three nodes.)
//
// It runs twice: with the old leader a broker only, and with it the
// active controller too. Resumed, that one still counts itself the Raft
// leader until its lease runs out, and must not answer its own broker's
// heartbeat "unfenced" from the image it kept.
func TestStaleLeaderSendsConsumersAway(t *testing.T) {
	t.Run("broker", func(t *testing.T) { staleLeaderSendsConsumersAway(t, false) })
	t.Run("controller", func(t *testing.T) { staleLeaderSendsConsumersAway(t, true) })
}

func staleLeaderSendsConsumersAway(t *testing.T, onController bool) {
	c := harness.StartCluster(t, 3, harness.MetricsListener)
	guardNodes(t, c)
	const topic = "stale-leader"
	ctrl := c.AgreedController(opTimeout)
	leader := otherNodes(3, ctrl)[0]
	if onController {
		leader = ctrl
	}
	createAssignedTopic(t, c, topic, [][]int32{append([]int32{leader}, otherNodes(3, leader)...)}, minISR2())
	old := c.Node(leader)
	tid := topicID(t, c, topic)
	if base := produceDirect(t, old, topic, 0, -1, values("a", 10)...); base != 0 {
		t.Fatalf("first batch at offset %d, want 0", base)
	}
	// Acknowledged with acks=all: both followers hold offsets 0-9.

	pauseNode(t, old)
	others := otherNodes(3, leader)
	st := waitSeenBy(t, c, others, topic, 0, 2*time.Minute, "a new leader", func(st harness.PartitionState) bool {
		return st.Leader > 0 && st.Leader != leader
	})
	if base := produceDirect(t, c.Node(st.Leader), topic, 0, -1, values("b", 10)...); base != 10 {
		t.Fatalf("second batch at offset %d on the new leader %d, want 10", base, st.Leader)
	}
	// Offsets 10-19 are committed; the old leader's log ends at 10. And
	// offsets below 5 are deleted: the old leader, fenced, is not waited
	// for.
	if got := deleteRecordsAt(t, c.Node(st.Leader), topic, 5, 60_000); got.ErrorCode != 0 || got.LowWatermark < 5 {
		t.Fatalf("DeleteRecords below 5 on the new leader %d: %v, low watermark %d", st.Leader, kerr.ErrorForCode(got.ErrorCode), got.LowWatermark)
	}
	for _, id := range others {
		pauseNode(t, c.Node(id))
	}
	old.Resume()

	const beyond = 15
	sp, err := consumerFetch(old.Dial(), tid, beyond)
	if err != nil {
		t.Fatal(err)
	}
	if sp.ErrorCode != kerr.NotLeaderForPartition.Code || sp.CurrentLeader.LeaderID == leader {
		t.Fatalf("consumer fetch at %d from the stale leader %d (log end 10): %v naming leader %d, want NOT_LEADER_OR_FOLLOWER naming no leader or another",
			beyond, leader, kerr.ErrorForCode(sp.ErrorCode), sp.CurrentLeader.LeaderID)
	}
	if sp := consumerEpochEnd(t, old, topic, st.LeaderEpoch); sp.ErrorCode != kerr.NotLeaderForPartition.Code {
		t.Fatalf("consumer OffsetForLeaderEpoch(%d) on the stale leader %d: %v (epoch %d end %d), want NOT_LEADER_OR_FOLLOWER",
			st.LeaderEpoch, leader, kerr.ErrorForCode(sp.ErrorCode), sp.LeaderEpoch, sp.EndOffset)
	}
	// Its log start (0) is below the deletion, its high watermark (10)
	// below what is committed: a consumer would start or reset there.
	for _, ts := range []int64{-2, -1} {
		if sp := consumerListOffset(t, old, topic, ts); sp.ErrorCode != kerr.NotLeaderForPartition.Code {
			t.Fatalf("consumer ListOffsets(%d) on the stale leader %d: %v (offset %d), want NOT_LEADER_OR_FOLLOWER",
				ts, leader, kerr.ErrorForCode(sp.ErrorCode), sp.Offset)
		}
	}

	// kcat (librdkafka) first, alone, so that every NOT_LEADER_OR_FOLLOWER
	// Fetch answer the old leader counts from here on is to it.
	refused := func() float64 {
		return harness.ScrapeMetrics(t, old.MetricsURL).Value(fetchErrors, map[string]string{"request": "Fetch", "error": "NOT_LEADER_OR_FOLLOWER"})
	}
	before := refused()
	kcatFirst := kcatFirstRecord(t, old, topic, beyond)
	harness.WaitFor(t, time.Minute, "three Fetch answers NOT_LEADER_OR_FOLLOWER from the stale leader to kcat", func() bool { return refused() >= before+3 })

	var fromOld atomic.Int32
	cl := old.Client(
		kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{topic: {0: kgo.NewOffset().At(beyond)}}),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
		kgo.FetchMaxWait(100*time.Millisecond),
		kgo.WithHooks(fetchAnswers{node: leader, n: &fromOld}),
	)
	ctx := harness.Ctx(t, 3*time.Minute)
	polled := make(chan *kgo.Record, 1)
	go func() {
		for ctx.Err() == nil {
			if recs := cl.PollFetches(ctx).Records(); len(recs) > 0 {
				polled <- recs[0]
				return
			}
		}
	}()
	harness.WaitFor(t, time.Minute, "three Fetch answers from the stale leader to the consumer", func() bool { return fromOld.Load() >= 3 })
	for _, id := range others {
		c.Node(id).Resume()
	}
	select {
	case r := <-polled:
		if r.Offset != beyond || string(r.Value) != "b5" {
			t.Fatalf("the consumer's first record: offset %d %q, want offset %d \"b5\"", r.Offset, r.Value, beyond)
		}
	case <-ctx.Done():
		t.Fatal("the consumer read nothing once the others were back")
	}
	if got := kcatFirst(); got != fmt.Sprintf("%d b5", beyond) {
		t.Fatalf("kcat's first record: %q, want \"%d b5\"", got, beyond)
	}
	waitEveryNode(t, c, topic, 0, 2*time.Minute, "a full ISR under the new leader", func(now harness.PartitionState) bool {
		return now.Leader != leader && fullISR(now)
	})
	waitSameLogs(t, c, topic, 0)
	t.Logf("stale leader %d answered franz-go %d times and kcat %v times without sending them back; the new leader %d (epoch %d) served offset %d",
		leader, fromOld.Load(), refused()-before, st.Leader, st.LeaderEpoch, beyond)
}

const fetchErrors = "kafka_network_requestmetrics_errors_total"

// kcatFirstRecord starts kcat consuming partition 0 of topic from offset,
// bootstrapped on b only, resetting to the earliest offset if told the
// offset is out of range; the function returned waits for kcat's first
// record and returns it as "offset value".
func kcatFirstRecord(t *testing.T, b *harness.Broker, topic string, offset int64) func() string {
	t.Helper()
	requireKcat(t)
	return clientOutput(t, "kcat", "-C", "-b", b.Addr, "-t", topic, "-p", "0", "-o", strconv.FormatInt(offset, 10),
		"-c", "1", "-q", "-f", "%o %s\n", "-X", "auto.offset.reset=earliest")
}

// requireKcat skips the test where kcat is not installed.
func requireKcat(t *testing.T) {
	t.Helper()
	if _, err := exec.LookPath("kcat"); err != nil {
		t.Skip("kcat not installed (scripts/install-test-deps.sh installs it)")
	}
}

// clientOutput starts a client (name and args) that prints records as
// "offset value" lines and exits; the function returned waits for it to
// exit and returns what it printed, trimmed. The test's cleanup kills it
// if it still runs.
func clientOutput(t *testing.T, name string, args ...string) func() string {
	t.Helper()
	ctx := harness.Ctx(t, 3*time.Minute)
	cmd := exec.CommandContext(ctx, name, args...)
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	var waitErr error
	exited := make(chan struct{})
	go func() { waitErr = cmd.Wait(); close(exited) }()
	t.Cleanup(func() {
		select {
		case <-exited:
		default:
			cmd.Process.Kill()
			<-exited
		}
	})
	return func() string {
		t.Helper()
		<-exited
		if waitErr != nil {
			t.Fatalf("%s: %v: %s", name, waitErr, errOut.String())
		}
		return strings.TrimSpace(out.String())
	}
}

// values are n record values prefix0, prefix1, ...
func values(prefix string, n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = fmt.Sprintf("%s%d", prefix, i)
	}
	return out
}

// consumerEpochEnd asks b, as a consumer (ReplicaID -1), where leader
// epoch ended for partition 0.
func consumerEpochEnd(t *testing.T, b *harness.Broker, topic string, epoch int32) kmsg.OffsetForLeaderEpochResponseTopicPartition {
	t.Helper()
	req := kmsg.NewPtrOffsetForLeaderEpochRequest()
	req.SetVersion(4)
	req.ReplicaID = -1
	rt := kmsg.NewOffsetForLeaderEpochRequestTopic()
	rt.Topic = topic
	rp := kmsg.NewOffsetForLeaderEpochRequestTopicPartition()
	rp.Partition, rp.CurrentLeaderEpoch, rp.LeaderEpoch = 0, -1, epoch
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	resp, _ := b.Dial().Request(req)
	r := resp.(*kmsg.OffsetForLeaderEpochResponse)
	if len(r.Topics) != 1 || len(r.Topics[0].Partitions) != 1 {
		t.Fatalf("OffsetForLeaderEpoch answer shape: %d topics", len(r.Topics))
	}
	return r.Topics[0].Partitions[0]
}

// consumerListOffset asks b, as a consumer, for partition 0's offset at
// timestamp ts (-2 earliest, -1 latest).
func consumerListOffset(t *testing.T, b *harness.Broker, topic string, ts int64) kmsg.ListOffsetsResponseTopicPartition {
	t.Helper()
	req := kmsg.NewPtrListOffsetsRequest()
	req.SetVersion(7)
	req.ReplicaID = -1
	rt := kmsg.NewListOffsetsRequestTopic()
	rt.Topic = topic
	rp := kmsg.NewListOffsetsRequestTopicPartition()
	rp.Partition, rp.CurrentLeaderEpoch, rp.Timestamp = 0, -1, ts
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	resp, _ := b.Dial().Request(req)
	r := resp.(*kmsg.ListOffsetsResponse)
	if len(r.Topics) != 1 || len(r.Topics[0].Partitions) != 1 {
		t.Fatalf("ListOffsets answer shape: %d topics", len(r.Topics))
	}
	return r.Topics[0].Partitions[0]
}

// fetchAnswers counts the Fetch responses a client read from one node.
type fetchAnswers struct {
	node int32
	n    *atomic.Int32
}

func (h fetchAnswers) OnBrokerRead(meta kgo.BrokerMetadata, key int16, _ int, _, _ time.Duration, err error) {
	if meta.NodeID == h.node && key == kmsg.Fetch.Int16() && err == nil {
		h.n.Add(1)
	}
}

var _ kgo.HookBrokerRead = fetchAnswers{}
