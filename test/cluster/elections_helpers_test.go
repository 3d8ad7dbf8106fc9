package cluster

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/weir-project/weir/internal/storage/checkpoint"
	"github.com/weir-project/weir/internal/storage/recordbatch"
	"github.com/weir-project/weir/test/harness"
)

// Helpers of the election tests (epochs_test.go, controller_test.go,
// groups_test.go, unclean_test.go): topics placed on chosen nodes, writes
// that bypass clients' routing, and what the nodes keep on disk.

// batchOf builds one record batch holding values.
func batchOf(t *testing.T, values ...string) []byte {
	t.Helper()
	batch, err := buildBatch(values...)
	if err != nil {
		t.Fatal(err)
	}
	return batch
}

// buildBatch is batchOf for goroutines other than the test's.
func buildBatch(values ...string) ([]byte, error) {
	recs := make([]recordbatch.Record, len(values))
	for i, v := range values {
		recs[i] = recordbatch.Record{Value: []byte(v)}
	}
	return recordbatch.Build(recordbatch.BuildOptions{
		BaseTimestamp: time.Now().UnixMilli(), ProducerID: -1, ProducerEpoch: -1, BaseSequence: -1,
	}, recs)
}

// produceOn writes values as one batch to a partition with a raw Produce
// request to b's own listener, not through the address b advertises
// (which may be a proxy that holds everything), and returns the answer.
func produceOn(t *testing.T, b *harness.Broker, topic string, partition int32, acks int16, values ...string) kmsg.ProduceResponseTopicPartition {
	t.Helper()
	req := kmsg.NewPtrProduceRequest()
	req.Version = 9
	req.Acks, req.TimeoutMillis = acks, 30000
	rt := kmsg.NewProduceRequestTopic()
	rt.Topic = topic
	rp := kmsg.NewProduceRequestTopicPartition()
	rp.Partition, rp.Records = partition, batchOf(t, values...)
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	resp, _ := b.Dial().Request(req)
	return resp.(*kmsg.ProduceResponse).Topics[0].Partitions[0]
}

// produceDirect is produceOn failing the test on any error; it returns
// the batch's base offset.
func produceDirect(t *testing.T, b *harness.Broker, topic string, partition int32, acks int16, values ...string) int64 {
	t.Helper()
	r := produceOn(t, b, topic, partition, acks, values...)
	if err := kerr.ErrorForCode(r.ErrorCode); err != nil {
		t.Fatalf("produce %d records to %s-%d on %s: %v", len(values), topic, partition, b.Addr, err)
	}
	return r.BaseOffset
}

// produceSyncEach writes each value as its own batch (one synchronous
// produce per record) through cl and returns the offsets acknowledged.
func produceSyncEach(t *testing.T, cl *kgo.Client, topic string, values ...string) map[string]int64 {
	t.Helper()
	out := map[string]int64{}
	for _, v := range values {
		r := &kgo.Record{Topic: topic, Partition: 0, Value: []byte(v)}
		if err := cl.ProduceSync(harness.Ctx(t, opTimeout), r).FirstErr(); err != nil {
			t.Fatalf("produce %s to %s: %v", v, topic, err)
		}
		out[v] = r.Offset
	}
	return out
}

// acksAllProducer is a franz-go client for partition 0 of whatever topic
// a record names: acks=all, idempotent, every record its own batch.
func acksAllProducer(c *harness.Cluster) *kgo.Client {
	return c.Client(kgo.RecordPartitioner(kgo.ManualPartitioner()), kgo.RequiredAcks(kgo.AllISRAcks()),
		kgo.ProducerLinger(0), kgo.RecordDeliveryTimeout(2*time.Minute))
}

// waitLogsAgreeOn waits until the replicas of topic-partition on the
// given nodes hold the same batches (offsets, epochs, CRCs), and returns
// them.
func waitLogsAgreeOn(t *testing.T, c *harness.Cluster, topic string, partition int32, nodes ...int32) []harness.StoredBatch {
	t.Helper()
	deadline := time.Now().Add(2 * time.Minute)
	for {
		ref := harness.StoredBatches(t, c.Node(nodes[0]).Dir, topic, partition)
		diff := ""
		for _, id := range nodes[1:] {
			if got := harness.StoredBatches(t, c.Node(id).Dir, topic, partition); !slices.Equal(got, ref) {
				diff = fmt.Sprintf("node %d holds %d batches, node %d %d; first difference at %s", id, len(got), nodes[0], len(ref), firstDiff(got, ref))
				break
			}
		}
		if diff == "" {
			return ref
		}
		if time.Now().After(deadline) {
			t.Fatalf("the replicas of %s-%d on nodes %v still differ: %s", topic, partition, nodes, diff)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// checkpointedHW is the high watermark of topic-partition in a log dir's
// replication-offset-checkpoint (0 when the file or the entry is absent:
// what a broker starting from that dir takes as its high watermark).
func checkpointedHW(t *testing.T, dir, topic string, partition int32) int64 {
	t.Helper()
	offs, err := checkpoint.ReadOffsets(filepath.Join(dir, "replication-offset-checkpoint"))
	if os.IsNotExist(err) || (err != nil && strings.Contains(err.Error(), "no such file")) {
		return 0
	}
	if err != nil {
		t.Fatalf("read high watermarks of %s: %v", dir, err)
	}
	return offs[checkpoint.TopicPartition{Topic: topic, Partition: partition}]
}

// loseUnflushedTail cuts the last n batches off the newest segment of a
// stopped broker's replica, as a power failure loses writes that never
// reached the disk, and returns the first offset lost.
func loseUnflushedTail(t *testing.T, dir, topic string, partition int32, n int) int64 {
	t.Helper()
	segs, err := filepath.Glob(filepath.Join(dir, topic+"-"+strconv.Itoa(int(partition)), "*.log"))
	if err != nil || len(segs) == 0 {
		t.Fatalf("segments of %s-%d in %s: %v (%d found)", topic, partition, dir, err, len(segs))
	}
	slices.Sort(segs)
	seg := segs[len(segs)-1]
	data, err := os.ReadFile(seg)
	if err != nil {
		t.Fatal(err)
	}
	type at struct {
		pos  int64
		base int64
	}
	var batches []at
	for pos := int64(0); pos < int64(len(data)); {
		h, err := recordbatch.ParseHeader(data[pos:])
		if err != nil || pos+h.Size() > int64(len(data)) {
			break
		}
		batches = append(batches, at{pos, h.BaseOffset})
		pos += h.Size()
	}
	if len(batches) <= n {
		t.Fatalf("%s holds %d batches; cannot lose the last %d and keep some", seg, len(batches), n)
	}
	cut := batches[len(batches)-n]
	if err := os.Truncate(seg, cut.pos); err != nil {
		t.Fatal(err)
	}
	return cut.base
}

// logEnd is the current end of b's log output, for logLines.
func logEnd(b *harness.Broker) int {
	_, n := b.OutputSince(-1)
	return n
}

// checkAcked checks that every value in want is, in got (a partition's
// values by offset), at the offset it was acknowledged at.
func checkAcked(t *testing.T, got map[int64]string, want map[string]int64, what string) {
	t.Helper()
	for v, off := range want {
		if got[off] != v {
			t.Fatalf("%s: %s acknowledged at offset %d, but the log holds %q there (%d records)", what, v, off, got[off], len(got))
		}
	}
}

// nodeFigures logs each running node's resident memory and open file
// descriptors, for the report.
func nodeFigures(t *testing.T, c *harness.Cluster) {
	t.Helper()
	for i, b := range c.Nodes {
		if !b.Running() {
			continue
		}
		rss, err1 := harness.RSS(b.PID())
		fds, err2 := harness.FDCount(b.PID())
		if err1 != nil || err2 != nil {
			continue
		}
		t.Logf("node %d: VmRSS %d MiB, %d fds", i+1, rss>>20, fds)
	}
}

// waitAgreedPartition waits until every running node's metadata shows
// the same leader, leader epoch and ISR for a partition, satisfying
// cond, and returns that state: a test about to act on the leader must
// not act on one node's stale view.
func waitAgreedPartition(t *testing.T, c *harness.Cluster, topic string, partition int32, timeout time.Duration, what string, cond func(harness.PartitionState) bool) harness.PartitionState {
	t.Helper()
	var st harness.PartitionState
	harness.WaitFor(t, timeout, fmt.Sprintf("%s-%d on every running node: %s", topic, partition, what), func() bool {
		var seen []harness.PartitionState
		for _, b := range c.Nodes {
			if !b.Running() {
				continue
			}
			parts, err := b.TopicMetadata(topic)
			if err != nil {
				return false
			}
			i := slices.IndexFunc(parts, func(mp kmsg.MetadataResponseTopicPartition) bool { return mp.Partition == partition })
			if i < 0 {
				return false
			}
			mp := parts[i]
			seen = append(seen, harness.PartitionState{Leader: mp.Leader, LeaderEpoch: mp.LeaderEpoch, Replicas: mp.Replicas, ISR: mp.ISR})
		}
		if len(seen) == 0 {
			return false
		}
		for _, s := range seen[1:] {
			if s.Leader != seen[0].Leader || s.LeaderEpoch != seen[0].LeaderEpoch || !slices.Equal(s.ISR, seen[0].ISR) {
				return false
			}
		}
		st = seen[0]
		return cond(st)
	})
	return st
}

// waitCommittedEnd waits until a partition's high watermark is end: the
// leader has learnt that its followers hold everything.
func waitCommittedEnd(t *testing.T, c *harness.Cluster, topic string, partition int32, end int64) {
	t.Helper()
	adm := kadm.NewClient(c.Client())
	harness.WaitFor(t, 2*time.Minute, fmt.Sprintf("the high watermark of %s-%d to reach %d", topic, partition, end), func() bool {
		res, err := adm.ListEndOffsets(harness.Ctx(t, opTimeout), topic)
		if err != nil {
			return false
		}
		o, ok := res.Lookup(topic, partition)
		return ok && o.Err == nil && o.Offset == end
	})
}

// readCommitted waits until a partition's high watermark reaches end (a
// high watermark read too early, as the ISR has just grown, shows less),
// then reads every record below it by offset.
func readCommitted(t *testing.T, c *harness.Cluster, topic string, partition int32, end int64) map[int64]string {
	t.Helper()
	waitCommittedEnd(t, c, topic, partition, end)
	got := harness.PartitionValues(t, c.Bootstrap(), topic, partition)
	if int64(len(got)) != end {
		t.Fatalf("%d records of %s-%d read below the high watermark %d", len(got), topic, partition, end)
	}
	return got
}
