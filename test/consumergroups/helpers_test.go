package consumergroups

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/weir-project/weir/test/harness"
)

// Generous bounds: the machine is slow and shared, and the broker runs
// with the race detector.
const opTimeout = 60 * time.Second

// brokerOverrides keep __consumer_offsets small and make a silent
// KIP-848 member expire quickly.
var brokerOverrides = []string{
	"offsets.topic.num.partitions=3",
	"group.consumer.session.timeout.ms=6000",
	"group.consumer.heartbeat.interval.ms=500",
}

func startBroker(t *testing.T, extra ...string) *harness.Broker {
	t.Helper()
	b := harness.StartBroker(t, append(append([]string{}, brokerOverrides...), extra...)...)
	t.Cleanup(func() {
		out := b.Output()
		for _, bad := range []string{"WARNING: DATA RACE", "panic:", "level=ERROR"} {
			if i := strings.Index(out, bad); i >= 0 {
				t.Errorf("broker log has %q:\n%s", bad, out[max(0, i-2000):min(len(out), i+4000)])
			}
		}
	})
	return b
}

func createTopic(t *testing.T, adm *kadm.Client, topic string, partitions int32) {
	t.Helper()
	resp, err := adm.CreateTopic(harness.Ctx(t, opTimeout), partitions, 1, nil, topic)
	if err == nil {
		err = resp.Err
	}
	if err != nil {
		t.Fatalf("create topic %s: %v", topic, err)
	}
}

// produce writes n records "<prefix>-<i>" round-robin and waits for acks.
func produce(t *testing.T, b *harness.Broker, topic, prefix string, n int) []string {
	t.Helper()
	return harness.ProduceValues(t, b, topic, prefix, n)
}

// describeCG is the group as ConsumerGroupDescribe reports it.
func describeCG(ctx context.Context, cl *kgo.Client, g string) (kmsg.ConsumerGroupDescribeResponseGroup, error) {
	req := kmsg.NewPtrConsumerGroupDescribeRequest()
	req.Groups = []string{g}
	resp, err := req.RequestWith(ctx, cl)
	if err != nil {
		return kmsg.ConsumerGroupDescribeResponseGroup{}, err
	}
	if len(resp.Groups) != 1 {
		return kmsg.ConsumerGroupDescribeResponseGroup{}, fmt.Errorf("%d groups described", len(resp.Groups))
	}
	return resp.Groups[0], nil
}

// waitStable waits until ConsumerGroupDescribe shows the group Stable with
// want members, every partition of topic assigned to exactly one of them
// (current assignments, which is what members consume).
func waitStable(t *testing.T, cl *kgo.Client, g, topic string, partitions int32, want int) kmsg.ConsumerGroupDescribeResponseGroup {
	t.Helper()
	var last kmsg.ConsumerGroupDescribeResponseGroup
	harness.WaitFor(t, 90*time.Second, fmt.Sprintf("group %s stable with %d members", g, want), func() bool {
		d, err := describeCG(context.Background(), cl, g)
		if err != nil || d.ErrorCode != 0 {
			return false
		}
		last = d
		if d.State != "Stable" || len(d.Members) != want {
			return false
		}
		owners := map[int32]int{}
		for _, m := range d.Members {
			for _, tp := range m.Assignment.TopicPartitions {
				if tp.Topic != topic {
					continue
				}
				for _, p := range tp.Partitions {
					owners[p]++
				}
			}
		}
		for p, n := range owners {
			if n != 1 {
				t.Fatalf("partition %d owned by %d members: %+v", p, n, d.Members)
			}
		}
		return int32(len(owners)) == partitions
	})
	return last
}

// committed is the group's committed offsets of topic, by partition.
func committed(t *testing.T, adm *kadm.Client, g, topic string) map[int32]int64 {
	t.Helper()
	return harness.Committed(t, adm, g, topic)
}
