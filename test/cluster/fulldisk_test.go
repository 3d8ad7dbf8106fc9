package cluster

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/weir-project/weir/internal/storage/checkpoint"
	"github.com/weir-project/weir/test/harness"
)

// TestFullDiskLeaderHandsOver: node 3's log dir is a small tmpfs; it
// leads two partitions and follows a third, each under an idempotent
// acks=all stream (franz-go on two, librdkafka on one; RF 3,
// min.insync.replicas 2). When the disk fills up, node 3's appends fail
// with a storage error: it hands both leaderships over to another member
// of the ISR, leaving the ISR itself, and as a follower it tells its
// leader it cannot write, which takes it out of that ISR at once
// (replica.lag.time.max.ms is ten minutes here, so nothing else could).
// The streams go on being acknowledged while node 3 cannot write. (Kafka
// would take the log dir offline and, as it is the node's only one, stop
// the broker.) Once space is freed, node 3 catches up, rejoins the ISRs
// and, elected preferred leader again, leads. Every acknowledged record is
// read back exactly once, in order, and the three replicas' logs hold the
// same batches.
func TestFullDiskLeaderHandsOver(t *testing.T) {
	disk := harness.MountTmpfs(t, 32)
	c := harness.StartClusterDisk(t, 3, 3, disk.Dir, "replica.lag.time.max.ms=600000", harness.MetricsListener)
	unwritable := func() float64 {
		return harness.ScrapeMetrics(t, c.Node(3).MetricsURL).Value("weir_log_unwritable_partitions", nil)
	}
	const franz, rdkafka, followed = "full-franz", "full-rdkafka", "full-followed"
	topics := []string{franz, rdkafka, followed}
	for _, topic := range topics[:2] {
		createAssignedTopic(t, c, topic, [][]int32{{3, 1, 2}}, minISR2())
	}
	createAssignedTopic(t, c, followed, [][]int32{{1, 3, 2}}, minISR2())
	franzAcks := harness.StartAckStream(t, c, harness.StreamConfig{Topic: franz, Pace: 5 * time.Millisecond})
	stop := filepath.Join(t.TempDir(), "stop")
	rdAcks := startRdkafkaStream(t, c, rdkafka, stop)
	followedAcks := harness.StartAckStream(t, c, harness.StreamConfig{Topic: followed, Pace: 5 * time.Millisecond})
	streams := []*harness.AckLog{franzAcks.AckLog, rdAcks.AckLog, followedAcks.AckLog}
	waitMore := func(what string) {
		t.Helper()
		for i, acks := range streams {
			acks.WaitMore(t, 100, 2*time.Minute, topics[i]+": "+what)
		}
	}
	waitMore("acknowledgements before the disk fills")

	filled := time.Now()
	if _, err := disk.Fill(); err != nil {
		t.Fatal(err)
	}
	for _, topic := range topics {
		c.WaitPartition(topic, 0, opTimeout, "a leader other than node 3, and node 3 out of the ISR", func(st harness.PartitionState) bool {
			return st.Leader > 0 && st.Leader != 3 && len(st.ISR) == 2 && !slices.Contains(st.ISR, 3)
		})
	}
	if lines := logLines(c.Node(1), 0, "follower cannot write; taking it out of the ISR", followed); len(lines) == 0 {
		t.Fatalf("node 1 did not log taking node 3 out of %s's ISR", followed)
	}
	if lines := logLines(c.Node(3), 0, "handing the leadership over after a storage error"); len(lines) < 2 {
		t.Fatalf("node 3 logged %d hand-overs, want one per partition:\n%s", len(lines), strings.Join(lines, "\n"))
	}
	moved := time.Now()
	// Node 3 says so in its metrics: every replica whose write failed.
	harness.WaitFor(t, opTimeout, "node 3 to count its three replicas as unwritable", func() bool { return unwritable() == 3 })
	waitMore("acknowledgements with node 3's disk full")
	for i, acks := range streams {
		gap, _ := acks.LongestGap(filled, time.Now())
		t.Logf("%s: node 3 out of the lead and the ISR %v after the disk filled; longest time without an acknowledgement %v",
			topics[i], moved.Sub(filled).Round(time.Millisecond), gap.Round(time.Millisecond))
	}

	if err := disk.Free(); err != nil {
		t.Fatal(err)
	}
	for _, topic := range topics {
		c.WaitFullISR(topic, 0, 2*time.Minute)
	}
	if n := unwritable(); n != 0 {
		t.Fatalf("node 3 back in every ISR still counts %v unwritable replicas", n)
	}
	adm := kadm.NewClient(c.Client())
	ctx := harness.Ctx(t, opTimeout)
	harness.WaitFor(t, opTimeout, "node 3 to lead both partitions again", func() bool {
		if _, err := adm.ElectLeaders(ctx, kadm.ElectPreferredReplica, kadm.TopicsSet{franz: {0: {}}, rdkafka: {0: {}}}); err != nil {
			t.Logf("elect preferred leaders: %v", err)
		}
		for _, topic := range topics[:2] {
			if st, err := c.Partition(topic, 0); err != nil || st.Leader != 3 {
				return false
			}
		}
		return true
	})
	waitMore("acknowledgements with node 3 leading again")

	n := franzAcks.Finish()
	nf := followedAcks.Finish()
	if err := os.WriteFile(stop, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	rdAcks.Wait(4 * time.Minute)
	if got, sent := rdAcks.Count(), rdAcks.Sent(); got != sent {
		t.Fatalf("librdkafka: %d of %d records acknowledged", got, sent)
	}
	if got := franzAcks.CheckExactlyOnce(c.Bootstrap(), 0); got != n {
		t.Fatalf("franz-go: %d records stored, want %d", got, n)
	}
	harness.CheckExactlyOnce(t, c.Bootstrap(), rdkafka, 0, 0, rdAcks.AckLog)
	if got := followedAcks.CheckExactlyOnce(c.Bootstrap(), 0); got != nf {
		t.Fatalf("%s: %d records stored, want %d", followed, got, nf)
	}
	for _, topic := range topics {
		waitSameLogs(t, c, topic, 0)
	}
}

// TestFullDiskFollowerHoldsDeletion: a follower whose disk is full cannot
// checkpoint a raised log start, and it is live, so a DeleteRecords waits
// for it and is answered REQUEST_TIMED_OUT. It keeps reporting its
// durable start without trying the write at every fetch (it once failed
// the fetch, and logged it, every round). With room again it takes the
// leader's start, writes it down and rejoins the ISR; the deletion then
// completes, and node 3's own checkpoint holds the new start.
func TestFullDiskFollowerHoldsDeletion(t *testing.T) {
	disk := harness.MountTmpfs(t, 32)
	c := harness.StartClusterDisk(t, 3, 3, disk.Dir, "replica.lag.time.max.ms=600000")
	guardNodes(t, c)
	const topic = "full-delete"
	createAssignedTopic(t, c, topic, [][]int32{{1, 3, 2}}, minISR2())
	produceSyncEach(t, acksAllProducer(c), topic, values("a", 100)...)
	waitSameLogs(t, c, topic, 0)

	since := logEnd(c.Node(3))
	if _, err := disk.Fill(); err != nil {
		t.Fatal(err)
	}
	// Node 3 cannot append these: 8 KiB each, past the page its log's
	// last write left room in.
	big := values("b", 4)
	for i := range big {
		big[i] += strings.Repeat("x", 8<<10)
	}
	produceSyncEach(t, acksAllProducer(c), topic, big...)
	c.WaitPartition(topic, 0, opTimeout, "node 3 out of the ISR", func(st harness.PartitionState) bool {
		return st.Leader == 1 && !slices.Contains(st.ISR, 3)
	})
	if got := deleteRecordsAt(t, c.Node(1), topic, 50, 1500); got.ErrorCode != kerr.RequestTimedOut.Code || got.LowWatermark != -1 {
		t.Fatalf("DeleteRecords with node 3's disk full: %v, low watermark %d; want REQUEST_TIMED_OUT, -1",
			kerr.ErrorForCode(got.ErrorCode), got.LowWatermark)
	}
	if lines := logLines(c.Node(3), since, "follow leader log start"); len(lines) > 0 {
		t.Fatalf("node 3 tried to raise its log start on a full disk:\n%s", strings.Join(lines, "\n"))
	}

	if err := disk.Free(); err != nil {
		t.Fatal(err)
	}
	c.WaitFullISR(topic, 0, 2*time.Minute)
	deleteBelow(t, c, topic, 50)
	starts, err := checkpoint.ReadOffsets(filepath.Join(disk.Dir, "log-start-offset-checkpoint"))
	if err != nil {
		t.Fatal(err)
	}
	if got := starts[checkpoint.TopicPartition{Topic: topic, Partition: 0}]; got < 50 {
		t.Fatalf("node 3's log-start-offset-checkpoint says %d, want 50 or more", got)
	}
}

// startRdkafkaStream streams "0", "1", ... to partition 0 of topic through
// librdkafka's idempotent acks=all producer (confluent-kafka-python), one
// record every 5 ms, until the file stop exists.
func startRdkafkaStream(t *testing.T, c *harness.Cluster, topic, stop string) *harness.PyProducer {
	t.Helper()
	needConfluentKafka(t)
	return harness.StartPyProducer(t, python, "../idempotence/testdata/idem_producer.py",
		strings.Join(c.Bootstrap(), ","), topic, "0", "5", stop)
}
