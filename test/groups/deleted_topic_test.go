package groups

import (
	"context"
	"fmt"
	"os/exec"
	"syscall"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/weir-project/weir/test/harness"
)

// A deleted topic's committed offsets go with it, as in Kafka: a group
// that committed on a topic, which is then deleted and re-created under
// the same name, reads the new topic from its start. With the offsets
// left in place it would resume at the old ones and skip the new
// topic's first records. The old topic gets 3 records per partition and
// the new one 4: a consumer resuming at the old offsets reads one record
// per partition, not none (the old offsets are inside the new log, so no
// OFFSET_OUT_OF_RANGE resets it).
const (
	delPartitions = 2
	delOld        = 3 * delPartitions
	delNew        = 4 * delPartitions
)

// groupReader reads topic in group from the given node(s) until it has
// read every one of values, each exactly once, then stops (committing).
type groupReader func(t *testing.T, name, group, topic string, values []string)

func kgoReader(seeds func() []string) groupReader {
	return func(t *testing.T, name, group, topic string, values []string) {
		t.Helper()
		m := harness.StartGroupMember(t, name,
			kgo.SeedBrokers(seeds()...),
			kgo.ConsumerGroup(group),
			kgo.ConsumeTopics(topic),
			kgo.SessionTimeout(sessionMs*time.Millisecond),
			kgo.HeartbeatInterval(500*time.Millisecond),
		)
		harness.WaitAllRead(t, []*member{m}, values)
		m.Close()
	}
}

func pythonReader(b *harness.Broker) groupReader {
	return func(t *testing.T, name, group, topic string, values []string) {
		t.Helper()
		p := pyStarter("kafka-python")(t, b, name, group, topic)
		defer func() {
			if t.Failed() {
				t.Logf("%s stderr:\n%s", p.name, p.logs())
			}
		}()
		waitRead(t, []*proc{p}, values, name+" reads "+topic)
		p.signal(syscall.SIGTERM)
	}
}

// deletedOffsetsGone waits until the group's coordinator answers, for
// every partition of the deleted topic, offset -1 when asked by name,
// and lists none of them when asked for all the group's offsets.
func deletedOffsetsGone(t *testing.T, cl *kgo.Client, group, topic string) {
	t.Helper()
	var last string
	defer func() {
		if t.Failed() {
			t.Logf("last answer: %s", last)
		}
	}()
	harness.WaitFor(t, opTimeout, fmt.Sprintf("OffsetFetch of deleted %s to answer -1", topic), func() bool {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		req := kmsg.NewPtrOffsetFetchRequest()
		req.Version, req.Group = 7, group
		rt := kmsg.NewOffsetFetchRequestTopic()
		rt.Topic = topic
		for p := range int32(delPartitions) {
			rt.Partitions = append(rt.Partitions, p)
		}
		req.Topics = append(req.Topics, rt)
		resp, err := req.RequestWith(ctx, cl)
		if err != nil || resp.ErrorCode != 0 {
			last = fmt.Sprintf("named fetch: %v %v", err, resp)
			return false
		}
		for _, rt := range resp.Topics {
			for _, rp := range rt.Partitions {
				if rp.Offset != -1 || rp.ErrorCode != 0 {
					last = fmt.Sprintf("%s-%d: offset %d, %v", rt.Topic, rp.Partition, rp.Offset, kerr.ErrorForCode(rp.ErrorCode))
					return false
				}
			}
		}
		all, err := kadm.NewClient(cl).FetchOffsets(ctx, group)
		if err != nil {
			last = fmt.Sprintf("fetch all: %v", err)
			return false
		}
		if ps, ok := all[topic]; ok {
			last = fmt.Sprintf("fetch all lists %s: %v", topic, ps)
			return false
		}
		return true
	})
}

// deleteTopic deletes topic and waits for its answer.
func deleteTopic(t *testing.T, adm *kadm.Client, topic string) {
	t.Helper()
	resp, err := adm.DeleteTopics(harness.Ctx(t, opTimeout), topic)
	if err == nil {
		err = resp[topic].Err
	}
	if err != nil {
		t.Fatalf("delete topic %s: %v", topic, err)
	}
}

// testDeletedTopicOffsets runs the scenario on one broker: commit on a
// topic, delete it (restarting the broker then if asked), re-create it,
// and read all of the new topic in the same group.
func testDeletedTopicOffsets(t *testing.T, b *harness.Broker, read groupReader, topic, group string, restart bool) {
	adm := newAdmin(t, b)
	createTopic(t, adm, topic, delPartitions)
	read(t, group+"-old", group, topic, produce(t, b, topic, "old", delOld))
	waitCommitted(t, adm, group, topic, delOld)

	deleteTopic(t, adm, topic)
	deletedOffsetsGone(t, b.Client(), group, topic)
	if restart {
		b.Kill()
		b.Restart()
		adm = newAdmin(t, b)
		deletedOffsetsGone(t, b.Client(), group, topic)
	}

	harness.WaitFor(t, opTimeout, "the topic re-created", func() bool {
		resp, err := adm.CreateTopic(context.Background(), delPartitions, 1, nil, topic)
		return err == nil && resp.Err == nil
	})
	read(t, group+"-new", group, topic, produce(t, b, topic, "new", delNew))
	waitCommitted(t, adm, group, topic, delNew)
}

// TestDeletedTopicOffsetsRemoved: franz-go and kafka-python groups, with
// and without a broker restart (SIGKILL) between the delete and the
// re-creation.
func TestDeletedTopicOffsetsRemoved(t *testing.T) {
	b := startBroker(t)
	for _, tc := range []struct {
		name    string
		read    groupReader
		restart bool
		check   *exec.Cmd
	}{
		{"franz-go", kgoReader(func() []string { return []string{b.Addr} }), false, nil},
		{"franz-go-restart", kgoReader(func() []string { return []string{b.Addr} }), true, nil},
		{"kafka-python", pythonReader(b), false, exec.Command(python, "-c", "import kafka")},
		{"kafka-python-restart", pythonReader(b), true, exec.Command(python, "-c", "import kafka")},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if tc.check != nil {
				needTool(t, "kafka-python", tc.check)
			}
			testDeletedTopicOffsets(t, b, tc.read, "t9-"+tc.name, "g3-"+tc.name, tc.restart)
		})
	}
}

// TestDeletedTopicOffsetsAfterCoordinatorFailover: on three nodes, with
// __consumer_offsets replicated three times, a group commits on a topic
// and the topic is deleted. The coordinator's tombstones for the group's
// offsets are seen committed in __consumer_offsets (a consumer reads up
// to the high watermark, which only passes what every replica in the
// ISR holds). The coordinator is then killed (SIGKILL): its successor
// loads the partition and answers -1 for the deleted partitions, and
// once the topic is re-created a member of the group reads it from the
// start.
func TestDeletedTopicOffsetsAfterCoordinatorFailover(t *testing.T) {
	const offsetsTopic, topic, group = "__consumer_offsets", "t9", "g3"
	c := harness.StartCluster(t, 3, "offsets.topic.replication.factor=3", "offsets.topic.num.partitions=1")
	for _, b := range c.Nodes {
		// Raft logs the votes it cannot send to the killed node as
		// errors.
		checkLog(t, b, `msg="failed to make requestVote RPC"`)
	}
	adm := kadm.NewClient(c.Client())
	create := func() {
		t.Helper()
		harness.WaitFor(t, opTimeout, "topic "+topic+" created", func() bool {
			resp, err := adm.CreateTopic(context.Background(), delPartitions, 3, nil, topic)
			return err == nil && resp.Err == nil
		})
	}
	read := kgoReader(c.Bootstrap)
	create()
	read(t, group+"-old", group, topic, harness.ProduceValues(t, c.Nodes[0], topic, "old", delOld))
	waitCommitted(t, adm, group, topic, delOld)

	deleteTopic(t, adm, topic)
	harness.WaitFor(t, opTimeout, "the offsets' tombstones committed in "+offsetsTopic, func() bool {
		return len(committedTombstones(t, c.Bootstrap(), group, topic)) == delPartitions
	})

	coord := c.Leader(offsetsTopic, 0, opTimeout)
	coord.Kill()
	c.WaitPartition(offsetsTopic, 0, opTimeout, "a new leader", func(st harness.PartitionState) bool {
		return st.Leader > 0 && c.Node(st.Leader) != coord
	})
	deletedOffsetsGone(t, c.Client(), group, topic)
	coord.Restart()
	c.WaitFullISR(offsetsTopic, 0, opTimeout)

	create()
	read(t, group+"-new", group, topic, harness.ProduceValues(t, c.Nodes[0], topic, "new", delNew))
	waitCommitted(t, adm, group, topic, delNew)
}

// committedTombstones reads partition 0 of __consumer_offsets up to its
// high watermark and returns the partitions of topic whose offset
// tombstone for group it holds.
func committedTombstones(t *testing.T, seeds []string, group, topic string) map[int32]bool {
	t.Helper()
	const offsetsTopic = "__consumer_offsets"
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	cl, err := kgo.NewClient(kgo.SeedBrokers(seeds...), kgo.FetchMaxWait(200*time.Millisecond),
		kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{offsetsTopic: {0: kgo.NewOffset().AtStart()}}))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ends, err := kadm.NewClient(cl).ListEndOffsets(ctx, offsetsTopic)
	if err != nil {
		return nil
	}
	end, ok := ends.Lookup(offsetsTopic, 0)
	if !ok || end.Err != nil {
		return nil
	}
	out := map[int32]bool{}
	for next := int64(0); next < end.Offset; {
		fs := cl.PollFetches(ctx)
		if ctx.Err() != nil {
			return nil
		}
		fs.EachRecord(func(r *kgo.Record) {
			next = max(next, r.Offset+1)
			var k kmsg.OffsetCommitKey
			if len(r.Key) < 2 || r.Key[0] != 0 || r.Key[1] > 1 || k.ReadFrom(r.Key) != nil {
				return // not an offset commit
			}
			if k.Group == group && k.Topic == topic && r.Offset < end.Offset {
				if r.Value == nil {
					out[k.Partition] = true
				} else {
					delete(out, k.Partition)
				}
			}
		})
	}
	return out
}
