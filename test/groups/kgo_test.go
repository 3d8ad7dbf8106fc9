package groups

import (
	"fmt"
	"sort"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/weir-project/weir/test/harness"
)

// member is one franz-go group consumer (see harness.GroupMember).
type member = harness.GroupMember

func startMember(t *testing.T, b *harness.Broker, name, groupID, topic string, balancer kgo.GroupBalancer, extra ...kgo.Opt) *member {
	t.Helper()
	return harness.StartGroupMember(t, name, append([]kgo.Opt{
		kgo.SeedBrokers(b.Addr),
		kgo.ConsumerGroup(groupID),
		kgo.ConsumeTopics(topic),
		kgo.Balancers(balancer),
		kgo.SessionTimeout(sessionMs * time.Millisecond),
		kgo.HeartbeatInterval(500 * time.Millisecond),
	}, extra...)...)
}

func waitAllRead(t *testing.T, members []*member, values []string) map[string]string {
	t.Helper()
	return harness.WaitAllRead(t, members, values)
}

// TestKgoGroupShareAndTakeOver runs three franz-go members with each
// balancer: they split the partitions disjointly and together read every
// record exactly once; when one closes the others take its partitions
// and read on, still exactly once; a fresh member after all close starts
// at the committed offsets.
func TestKgoGroupShareAndTakeOver(t *testing.T) {
	b := startBroker(t)
	adm := newAdmin(t, b)
	for _, tc := range []struct {
		name     string
		balancer kgo.GroupBalancer
	}{
		{"range", kgo.RangeBalancer()},
		{"cooperative-sticky", kgo.CooperativeStickyBalancer()},
	} {
		t.Run(tc.name, func(t *testing.T) {
			topic, groupID := "share-"+tc.name, "g-"+tc.name
			const partitions = 6
			createTopic(t, adm, topic, partitions)
			var ms []*member
			for i := range 3 {
				ms = append(ms, startMember(t, b, fmt.Sprintf("%s-%d", tc.name, i), groupID, topic, tc.balancer))
			}
			d := waitStable(t, adm, groupID, topic, partitions, 3)
			if d.Protocol != tc.name {
				t.Errorf("protocol %q, want %q", d.Protocol, tc.name)
			}
			first := produce(t, b, topic, "a", 300)
			readers := waitAllRead(t, ms, first)
			byMember := map[string]int{}
			for _, who := range readers {
				byMember[who]++
			}
			if len(byMember) != 3 {
				t.Errorf("records read by %v, want all three members", byMember)
			}

			// One member leaves: the other two take over its partitions.
			ms[0].Close()
			waitStable(t, adm, groupID, topic, partitions, 2)
			second := produce(t, b, topic, "b", 300)
			// All three (the closed one's reads count) read each record once.
			readers = waitAllRead(t, ms, append(first, second...))
			for _, v := range second {
				if readers[v] == ms[0].Name() {
					t.Errorf("%s read by the member that left", v)
				}
			}

			for _, m := range ms[1:] {
				m.Close()
			}
			offs := committed(t, adm, groupID, topic)
			var total int64
			for _, o := range offs {
				total += o
			}
			if total != 600 {
				t.Fatalf("committed offsets %v sum to %d, want 600", offs, total)
			}

			// A fresh member resumes exactly there: it reads only new records.
			third := produce(t, b, topic, "c", 60)
			fresh := startMember(t, b, tc.name+"-fresh", groupID, topic, tc.balancer)
			waitAllRead(t, []*member{fresh}, third)
			got, _ := fresh.Snapshot()
			var stale []string
			for v := range got {
				if v[0] != 'c' {
					stale = append(stale, v)
				}
			}
			sort.Strings(stale)
			if len(stale) > 0 {
				t.Errorf("fresh member re-read %d committed records, e.g. %v", len(stale), stale[:min(5, len(stale))])
			}
		})
	}
}
