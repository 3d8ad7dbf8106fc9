package cluster

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/weir-project/weir/internal/storage/checkpoint"
	"github.com/weir-project/weir/internal/storage/recordbatch"
	"github.com/weir-project/weir/test/harness"
)

// TestPowerLossHoleInFollowerLog: a follower loses power. What it had
// not fsynced is lost, and not necessarily from the end: the kernel
// writes files back in any order, so a segment created by a roll may
// survive while the older segment's tail does not. The follower's log
// then has a hole, and every batch in it still parses.
//
// Follower truncation compares leader epochs, and one epoch spans the
// hole, so truncation alone keeps it: the follower would fetch on from
// its end, rejoin the ISR with acknowledged records missing, and serve a
// log without them once it leads. Recovery must find the hole and cut
// there, so the follower fetches the lost records again.
//
// Everything is forced, not hoped for: the segments are small (a roll
// every dozen records), the hole is cut by hand while the follower is
// down, and its recovery point is set below the hole (the checkpoint is
// written once a minute, so a crash may find it that far behind).
func TestPowerLossHoleInFollowerLog(t *testing.T) {
	c := harness.StartCluster(t, 3, "auto.leader.rebalance.enable=false")
	const topic, n = "powerloss", 120
	createAssignedTopic(t, c, topic, [][]int32{{1, 3, 2}}, map[string]*string{
		"min.insync.replicas": kmsg.StringPtr("2"),
		"segment.bytes":       kmsg.StringPtr("1024"),
	})
	values := make([]string, n)
	for i := range values {
		values[i] = fmt.Sprintf("v%03d", i)
	}
	acked := produceSyncEach(t, acksAllProducer(c), topic, values...)
	waitLogsAgreeOn(t, c, topic, 0, 1, 2, 3)

	f := c.Node(3)
	f.Kill()
	from, to := cutHole(t, f.Dir, topic, 0)
	rps, err := checkpoint.ReadOffsets(filepath.Join(f.Dir, "recovery-point-offset-checkpoint"))
	if err != nil {
		t.Fatal(err)
	}
	rps[checkpoint.TopicPartition{Topic: topic, Partition: 0}] = 0
	if err := checkpoint.WriteOffsets(filepath.Join(f.Dir, "recovery-point-offset-checkpoint"), rps); err != nil {
		t.Fatal(err)
	}
	t.Logf("node 3 lost offsets %d..%d and kept the segments after them", from, to-1)

	since := logEnd(f)
	f.Restart()
	c.WaitFullISR(topic, 0, 2*time.Minute)
	waitLogsAgreeOn(t, c, topic, 0, 1, 2, 3)

	// The leader dies and node 3, next in replica order, leads: what it
	// serves is what the cluster keeps.
	c.Node(1).Kill()
	c.WaitPartition(topic, 0, opTimeout, "node 3 leading", func(st harness.PartitionState) bool {
		return st.Leader == 3
	})
	checkAcked(t, readCommitted(t, c, topic, 0, n), acked, "acks=all")
	if cut := logLines(f, since, "recovery truncated segment", "tail was lost"); len(cut) == 0 {
		t.Fatalf("node 3 did not log its cut at the hole:\n%s", f.Output())
	}
}

// cutHole cuts a middle segment of a stopped broker's replica back to its
// first batch and keeps the later segments whole, and returns the offsets
// lost: [from, to).
func cutHole(t *testing.T, dir, topic string, partition int32) (from, to int64) {
	t.Helper()
	segs, err := filepath.Glob(filepath.Join(dir, fmt.Sprintf("%s-%d", topic, partition), "*.log"))
	if err != nil || len(segs) < 5 {
		t.Fatalf("segments of %s-%d in %s: %v (%d found, want at least 5)", topic, partition, dir, err, len(segs))
	}
	slices.Sort(segs)
	victim := segs[2]
	data, err := os.ReadFile(victim)
	if err != nil {
		t.Fatal(err)
	}
	h, err := recordbatch.ParseHeader(data)
	if err != nil || h.Size() >= int64(len(data)) {
		t.Fatalf("%s: %d bytes, a first batch of %d: %v", victim, len(data), h.Size(), err)
	}
	next, err := recordbatch.ParseHeader(data[h.Size():])
	if err != nil {
		t.Fatal(err)
	}
	later, err := os.ReadFile(segs[3])
	if err != nil {
		t.Fatal(err)
	}
	lh, err := recordbatch.ParseHeader(later)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Truncate(victim, h.Size()); err != nil {
		t.Fatal(err)
	}
	return next.BaseOffset, lh.BaseOffset
}
