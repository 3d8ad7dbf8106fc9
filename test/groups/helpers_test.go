package groups

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"

	"github.com/weir-project/weir/test/harness"
)

// Generous bounds: the machine is slow and shared, and the broker runs
// with the race detector.
const (
	opTimeout = 60 * time.Second
	// sessionMs is the session timeout the tests' consumers use: the
	// broker's minimum, so a dead member is noticed quickly.
	sessionMs = 6000
)

// brokerOverrides make groups form at once (no initial rebalance delay)
// and keep __consumer_offsets small.
var brokerOverrides = []string{
	"group.initial.rebalance.delay.ms=0",
	"offsets.topic.num.partitions=5",
}

func startBroker(t *testing.T, extra ...string) *harness.Broker {
	t.Helper()
	b := harness.StartBroker(t, append(append([]string{}, brokerOverrides...), extra...)...)
	checkLog(t, b)
	return b
}

// checkLog fails the test if the broker (built with -race) reported a
// data race, a panic or an error, but for errors logged on lines holding
// one of the allowed strings (what a test provokes on purpose).
func checkLog(t *testing.T, b *harness.Broker, allowed ...string) {
	t.Cleanup(func() {
		out := b.Output()
		for _, bad := range []string{"WARNING: DATA RACE", "panic:", "level=ERROR"} {
			for from := 0; ; {
				i := strings.Index(out[from:], bad)
				if i < 0 {
					break
				}
				i += from
				end := strings.IndexByte(out[i:], '\n')
				if end < 0 {
					end = len(out) - i
				}
				line := out[i : i+end]
				if bad == "level=ERROR" && slices.ContainsFunc(allowed, func(a string) bool { return strings.Contains(line, a) }) {
					from = i + end
					continue
				}
				t.Errorf("broker log has %q:\n%s", bad, out[max(0, i-2000):min(len(out), i+4000)])
				break
			}
		}
	})
}

func newAdmin(t *testing.T, b *harness.Broker) *kadm.Client {
	t.Helper()
	return kadm.NewClient(b.Client())
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

// describe returns the group as DescribeGroups reports it.
func describe(t *testing.T, adm *kadm.Client, g string) kadm.DescribedGroup {
	t.Helper()
	ds, err := adm.DescribeGroups(harness.Ctx(t, opTimeout), g)
	if err != nil {
		t.Fatalf("describe group %s: %v", g, err)
	}
	return ds[g]
}

// assignedPartitions maps each assigned partition of topic to the member
// ids that own it, from a consumer-protocol group description.
func assignedPartitions(d kadm.DescribedGroup, topic string) map[int32][]string {
	out := map[int32][]string{}
	for _, m := range d.Members {
		ca, ok := m.Assigned.AsConsumer()
		if !ok {
			continue
		}
		for _, t := range ca.Topics {
			if t.Topic != topic {
				continue
			}
			for _, p := range t.Partitions {
				out[p] = append(out[p], m.MemberID)
			}
		}
	}
	return out
}

// waitStable waits until the group is Stable with want members, each
// partition of topic (0..partitions-1) assigned to exactly one member.
func waitStable(t *testing.T, adm *kadm.Client, g, topic string, partitions int32, want int) kadm.DescribedGroup {
	t.Helper()
	var last kadm.DescribedGroup
	harness.WaitFor(t, 90*time.Second, fmt.Sprintf("group %s stable with %d members", g, want), func() bool {
		ds, err := adm.DescribeGroups(context.Background(), g)
		if err != nil {
			return false
		}
		last = ds[g]
		if last.State != "Stable" || len(last.Members) != want {
			return false
		}
		assigned := assignedPartitions(last, topic)
		if int32(len(assigned)) != partitions {
			return false
		}
		for _, owners := range assigned {
			if len(owners) != 1 {
				t.Fatalf("partition owned by %v", owners)
			}
		}
		return true
	})
	return last
}

// committed is the group's committed offsets of topic, by partition.
func committed(t *testing.T, adm *kadm.Client, g, topic string) map[int32]int64 {
	t.Helper()
	return harness.Committed(t, adm, g, topic)
}
