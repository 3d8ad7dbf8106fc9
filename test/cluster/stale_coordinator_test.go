package cluster

import (
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/weir-project/weir/internal/group"
	"github.com/weir-project/weir/test/harness"
)

// TestStaleCoordinatorSendsMembersAway: the coordinator of a group
// (the leader of its __consumer_offsets partition) holds a commit of
// offset 5 when it is stopped (SIGSTOP) long enough to be fenced; its
// successor acknowledges a commit of offset 10. The old coordinator is
// resumed while the two others are stopped, so no heartbeat of its gets
// through and its metadata still shows it leading the group's partition
// with the group's state as it was.
//
// A member joining the group there gets no assignment (the assignment
// is written to __consumer_offsets and waits for followers that no longer
// follow it), but a consumer that assigns itself partitions and reads the
// group's committed offsets (Kafka's assign() with a group.id, an admin
// tool) asks OffsetFetch only, and offset 5 is now a stale read: it would
// read offsets 5-9 again, and for a group with no commit there yet it
// would start from auto.offset.reset. So, out of its session, the
// coordinator answers OffsetFetch COORDINATOR_LOAD_IN_PROGRESS, which
// clients retry, until it knows. A commit it accepts meanwhile waits on
// the same followers and must never be acknowledged.
//
// kafka-python (assign() with a group_id) and franz-go (kadm's
// FetchOffsets), each with a group of its own on that partition,
// bootstrapped on the old coordinator only; once it has refused each
// the others are resumed: kafka-python must read offset 10 first, and
// franz-go must be told 10.
func TestStaleCoordinatorSendsMembersAway(t *testing.T) {
	const partitions = 3
	c := harness.StartCluster(t, 3, harness.MetricsListener,
		"offsets.topic.num.partitions="+strconv.Itoa(partitions), "offsets.topic.replication.factor=3",
		"metrics.partition.level.enable=true") // kafka_log_log_size
	guardNodes(t, c)
	const topic, offsets = "stale-coord", "__consumer_offsets"
	ctrl := c.AgreedController(opTimeout)
	createAssignedTopic(t, c, topic, [][]int32{append([]int32{ctrl}, otherNodes(3, ctrl)...)}, minISR2())
	if base := produceDirect(t, c.Node(ctrl), topic, 0, -1, values("r", 20)...); base != 0 {
		t.Fatalf("first batch at offset %d, want 0", base)
	}
	groupCoordinator(t, c, "stale-coord-probe", -1) // creates the offsets topic

	// A group coordinated by a node other than the controller, so that
	// the others fence it without first electing a controller.
	// Two groups on it: kafka-python's and franz-go's.
	var groups []string
	var p, coord int32
	for i := 0; coord == 0; i++ {
		grp := fmt.Sprintf("stale-coord-%d", i)
		p = group.PartitionFor(grp, partitions)
		if st := c.WaitFullISR(offsets, p, opTimeout); st.Leader != ctrl {
			coord = st.Leader
			groups = append(groups, grp)
		}
	}
	for i := 0; len(groups) < 2; i++ {
		if grp := fmt.Sprintf("stale-coord-b%d", i); group.PartitionFor(grp, partitions) == p {
			groups = append(groups, grp)
		}
	}
	grp := groups[0]
	old := c.Node(coord)
	for _, g := range groups {
		harness.WaitFor(t, opTimeout, fmt.Sprintf("offset 5 committed for %s on coordinator %d", g, coord), func() bool {
			return commitOffset(t, old, g, topic, 5) == 0 // it may not have taken the partition up yet
		})
	}
	// Acknowledged: both followers hold it.

	pauseNode(t, old)
	others := otherNodes(3, coord)
	st := waitSeenBy(t, c, others, offsets, p, 2*time.Minute, "a new leader", func(st harness.PartitionState) bool {
		return st.Leader > 0 && st.Leader != coord
	})
	for _, g := range groups {
		harness.WaitFor(t, opTimeout, fmt.Sprintf("offset 10 committed for %s on the new coordinator %d", g, st.Leader), func() bool {
			return commitOffset(t, c.Node(st.Leader), g, topic, 10) == 0 // it may be loading the group
		})
	}
	for _, id := range others {
		pauseNode(t, c.Node(id))
	}
	old.Resume()

	if got, err := fetchCommittedOn(harness.Ctx(t, opTimeout), old, coord, groups[1], topic, 1); !errors.Is(err, kerr.CoordinatorLoadInProgress) {
		t.Fatalf("OffsetFetch on the stale coordinator %d: offsets %v, %v; want COORDINATOR_LOAD_IN_PROGRESS", coord, got, err)
	}
	// A commit it accepts is appended to its log, then waits.
	m := harness.ScrapeMetrics(t, old.MetricsURL)
	sizeOf := map[string]string{"topic": offsets, "partition": strconv.Itoa(int(p))}
	sizeBefore := m.Value("kafka_log_log_size", sizeOf)
	staleCommit := make(chan int16, 1)
	go func() { staleCommit <- commitOffset(t, old, grp, topic, 3) }()
	harness.WaitFor(t, time.Minute, "the stale coordinator to append the commit of offset 3", func() bool {
		return harness.ScrapeMetrics(t, old.MetricsURL).Value("kafka_log_log_size", sizeOf) > sizeBefore
	})

	refused := func() float64 {
		return harness.ScrapeMetrics(t, old.MetricsURL).Value(fetchErrors, map[string]string{"request": "OffsetFetch", "error": "COORDINATOR_LOAD_IN_PROGRESS"})
	}
	before := refused()
	pyFirst := committedFirstRecord(t, old, groups[0], topic)
	harness.WaitFor(t, time.Minute, "an OffsetFetch refused to kafka-python", func() bool { return refused() >= before+1 })
	before = refused()
	ctx := harness.Ctx(t, 3*time.Minute)
	fetched := make(chan kadm.OffsetResponses, 1)
	go func() {
		adm := kadm.NewClient(old.Client(kgo.RetryTimeout(2 * time.Minute)))
		res, err := adm.FetchOffsets(ctx, groups[1])
		if err != nil {
			t.Errorf("franz-go's OffsetFetch: %v", err)
		}
		fetched <- res
	}()
	harness.WaitFor(t, time.Minute, "an OffsetFetch refused to franz-go", func() bool { return refused() >= before+1 })
	select {
	case code := <-staleCommit:
		t.Fatalf("the stale coordinator answered a commit while the others were stopped: %v", kerr.ErrorForCode(code))
	default:
	}

	for _, id := range others {
		c.Node(id).Resume()
	}
	select {
	case code := <-staleCommit:
		if code == 0 {
			t.Fatal("the stale coordinator acknowledged a commit of offset 3 its successor never saw")
		}
		t.Logf("the commit on the stale coordinator failed: %v", kerr.ErrorForCode(code))
	case <-ctx.Done():
		t.Fatal("the commit on the stale coordinator was never answered")
	}
	select {
	case res := <-fetched:
		if o, ok := res.Lookup(topic, 0); !ok || o.Err != nil || o.At != 10 {
			t.Fatalf("franz-go was told offset %d (%v, found %v), want 10", o.At, o.Err, ok)
		}
	case <-ctx.Done():
		t.Fatal("franz-go's OffsetFetch was never answered")
	}
	if got := pyFirst(); got != "10 r10" {
		t.Fatalf("kafka-python's first record: %q, want \"10 r10\"", got)
	}
	for _, g := range groups {
		id := groupCoordinator(t, c, g, -1)
		if got, err := fetchCommittedOn(harness.Ctx(t, opTimeout), c.Node(id), id, g, topic, 1); err != nil || got[0] != 10 {
			t.Fatalf("%s's committed offsets at the end: %v (%v), want offset 10", g, got, err)
		}
	}
}

// commitOffset commits offset for partition 0 of topic as group's admin
// (no member, generation -1) on b, returning the partition's error code.
func commitOffset(t *testing.T, b *harness.Broker, grp, topic string, offset int64) int16 {
	t.Helper()
	req := kmsg.NewPtrOffsetCommitRequest()
	req.Group, req.Generation = grp, -1
	rt := kmsg.NewOffsetCommitRequestTopic()
	rt.Topic = topic
	rp := kmsg.NewOffsetCommitRequestTopicPartition()
	rp.Partition, rp.Offset, rp.LeaderEpoch = 0, offset, -1
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	resp, err := requestOn(harness.Ctx(t, 3*time.Minute), b, req)
	if err != nil {
		return kerr.RequestTimedOut.Code
	}
	r := resp.(*kmsg.OffsetCommitResponse)
	if len(r.Topics) != 1 || len(r.Topics[0].Partitions) != 1 {
		t.Errorf("OffsetCommit answer shape: %d topics", len(r.Topics))
		return kerr.UnknownServerError.Code
	}
	return r.Topics[0].Partitions[0].ErrorCode
}

// committedFirstRecord starts a kafka-python consumer that assigns
// itself partition 0 of topic and starts at grp's committed offset,
// bootstrapped on b only; the function returned waits for its first
// record and returns it as "offset value".
func committedFirstRecord(t *testing.T, b *harness.Broker, grp, topic string) func() string {
	t.Helper()
	spec, _ := json.Marshal(map[string]string{"bootstrap": b.Addr, "group": grp, "topic": topic})
	return clientOutput(t, python, "testdata/committed_first.py", string(spec))
}
