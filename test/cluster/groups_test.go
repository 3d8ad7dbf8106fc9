package cluster

import (
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/weir-project/weir/test/harness"
)

// TestGroupCoordinatorFailover: a consumer group of franz-go members on
// a six-partition topic (RF 3) that a producer keeps writing to, its
// offsets in __consumer_offsets with offsets.topic.replication.factor 3,
// consuming and committing after every poll. The coordinator's broker
// (FindCoordinator) is killed -9. The members re-join on the new
// coordinator and resume from the offsets they committed:
//
//   - no committed offset goes backwards: every OffsetFetch, on any
//     coordinator, returns at least every offset acknowledged before it;
//   - each partition handed out after the kill starts at or past the last
//     commit acknowledged for it, and at or before the first record no
//     member has read (nothing between the last commit and the restart is
//     skipped);
//   - every record is consumed at least once.
//
// The killed node restarts and rejoins; the group drains the topic.
func TestGroupCoordinatorFailover(t *testing.T) {
	c := harness.StartCluster(t, 3, "offsets.topic.replication.factor=3", "auto.leader.rebalance.enable=false")
	const topic, group, partitions = "grp-in", "grp-failover", 6
	createTopic(t, c, topic, partitions, 3, minISR2())
	log := newGroupLog()
	stopMonitor := monitorCommits(t, c, group, topic, partitions, log)
	prod := c.Client(kgo.RecordPartitioner(kgo.RoundRobinPartitioner()), kgo.RequiredAcks(kgo.AllISRAcks()),
		kgo.RecordDeliveryTimeout(2*time.Minute))
	producer := harness.StartAckStream(t, c, harness.StreamConfig{Topic: topic, Prefix: "r", Pace: 2 * time.Millisecond, Client: prod})
	for i := range 2 {
		startFranzMember(t, c, fmt.Sprintf("franz-%d", i), group, topic, log)
	}
	py := startPyMember(t, c, "confluent-0", group, topic, log)

	harness.WaitFor(t, 2*time.Minute, "a commit acknowledged on every partition, and 300 in all", func() bool {
		n := 0
		for _, e := range log.snapshot() {
			if e.kind == "commit" {
				n++
			}
		}
		return n >= 300 && len(log.since("commit", time.Time{})) == partitions
	})
	if py != nil {
		harness.WaitFor(t, 2*time.Minute, "a commit by the confluent-kafka member", func() bool {
			return slices.ContainsFunc(log.snapshot(), func(e groupEvent) bool { return e.kind == "commit" && e.member == "confluent-0" })
		})
	}
	coord := groupCoordinator(t, c, group, -1)
	for p := range int32(3) {
		c.WaitFullISR("__consumer_offsets", p, opTimeout)
	}
	victim := c.Node(coord)
	killed := time.Now()
	victim.Kill()
	if py != nil {
		// A member dies with the coordinator: its partitions must go on
		// from what it committed to the old one.
		py.kill()
	}
	// A member joins: every partition is handed out again (eager
	// rebalance), from the offsets the new coordinator loaded.
	startFranzMember(t, c, "franz-late", group, topic, log)
	harness.WaitFor(t, 2*time.Minute, "a commit acknowledged on every partition after the kill", func() bool {
		return len(log.since("commit", killed)) == partitions
	})
	resumed := time.Since(killed)
	next := groupCoordinator(t, c, group, coord)
	t.Logf("coordinator %d killed; node %d coordinates; every partition committed again %v after the kill",
		coord, next, resumed.Round(10*time.Millisecond))

	victim.Restart()
	for p := range int32(3) {
		c.WaitFullISR("__consumer_offsets", p, 2*time.Minute)
	}
	for p := range int32(partitions) {
		c.WaitFullISR(topic, p, 2*time.Minute)
	}
	producer.Stop()
	ends := endOffsets(t, c, topic)
	harness.WaitFor(t, 2*time.Minute, "the group to commit the end of every partition", func() bool {
		last := map[int32]int64{}
		for _, e := range log.snapshot() {
			if e.kind == "commit" {
				last[e.p] = max(last[e.p], e.offset)
			}
		}
		for p, end := range ends {
			if last[p] < end {
				return false
			}
		}
		return true
	})
	stopMonitor()
	events := log.snapshot()
	checkGroupEvents(t, events, ends, killed)
	perMember := map[string]map[string]int{}
	for _, e := range events {
		if e.member != "" {
			if perMember[e.member] == nil {
				perMember[e.member] = map[string]int{}
			}
			perMember[e.member][e.kind]++
		}
	}
	t.Logf("events per member: %v", perMember)
	log.mu.Lock()
	t.Logf("errors seen by members and monitor (expected around the kill): %v", log.errs)
	log.mu.Unlock()
}

// endOffsets lists every partition's high watermark.
func endOffsets(t *testing.T, c *harness.Cluster, topic string) map[int32]int64 {
	t.Helper()
	adm := kadm.NewClient(c.Client())
	res, err := adm.ListEndOffsets(harness.Ctx(t, opTimeout), topic)
	if err == nil {
		err = res.Error()
	}
	if err != nil {
		t.Fatalf("end offsets of %s: %v", topic, err)
	}
	out := map[int32]int64{}
	res.Each(func(o kadm.ListedOffset) { out[o.Partition] = o.Offset })
	return out
}

// checkGroupEvents applies the test's three rules to what it saw.
func checkGroupEvents(t *testing.T, events []groupEvent, ends map[int32]int64, killed time.Time) {
	t.Helper()
	// The Python member stamps its own events; merge by time.
	slices.SortStableFunc(events, func(a, b groupEvent) int { return a.at.Compare(b.at) })
	type ack struct {
		offset int64
		at     time.Time
	}
	acked := map[int32][]ack{}      // acknowledged commits, in order
	maxAcked := map[int32]int64{}   // the largest so far
	maxRead := map[int32]int64{}    // the largest offset consumed so far, -1 if none
	awaiting := map[string]bool{}   // member/partition handed out, first record not yet seen
	bounds := map[string][2]int64{} // ... and the bounds its first record must be within
	consumed := map[int32]map[int64]bool{}
	resumes := 0
	for p := range ends {
		maxRead[p], maxAcked[p], consumed[p] = -1, -1, map[int64]bool{}
	}
	key := func(e groupEvent) string { return fmt.Sprintf("%s/%d", e.member, e.p) }
	var samples []groupEvent
	for _, e := range events {
		switch e.kind {
		case "commit":
			acked[e.p] = append(acked[e.p], ack{e.offset, e.at})
			maxAcked[e.p] = max(maxAcked[e.p], e.offset)
		case "assign":
			// The bounds at hand-out time: a resume below maxAcked would
			// read a committed offset gone backwards, one above maxRead+1
			// would skip records no one read.
			awaiting[key(e)] = true
			bounds[key(e)] = [2]int64{maxAcked[e.p], maxRead[e.p] + 1}
		case "consume":
			if awaiting[key(e)] {
				delete(awaiting, key(e))
				b := bounds[key(e)]
				if (b[0] >= 0 && e.offset < b[0]) || e.offset > max(b[1], 0) {
					t.Errorf("%s resumed partition %d at offset %d; the last acknowledged commit was %d and the first unread record %d",
						e.member, e.p, e.offset, b[0], b[1])
				}
				if e.at.After(killed) {
					resumes++
				}
			}
			consumed[e.p][e.offset] = true
			maxRead[e.p] = max(maxRead[e.p], e.offset)
		case "sample":
			samples = append(samples, e)
		}
	}
	for _, s := range samples {
		var floor int64 = -1
		for _, a := range acked[s.p] {
			if a.at.Before(s.at) {
				floor = max(floor, a.offset)
			}
		}
		if s.offset < floor {
			t.Errorf("OffsetFetch at %s returned %d for partition %d, below the commit of %d acknowledged before it",
				s.at.Format(time.StampMilli), s.offset, s.p, floor)
		}
	}
	for p, end := range ends {
		for off := int64(0); off < end; off++ {
			if !consumed[p][off] {
				t.Fatalf("partition %d: offset %d (of %d) never consumed", p, off, end)
			}
		}
	}
	if resumes == 0 {
		t.Fatalf("no partition was handed out again after the coordinator's kill: the members did not re-join")
	}
	t.Logf("%d offset samples checked; %d partition hand-outs after the kill resumed within bounds", len(samples), resumes)
}
