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
