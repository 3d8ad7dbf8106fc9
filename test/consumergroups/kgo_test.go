package consumergroups

import (
	"context"
	"fmt"
	"sort"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/weir-project/weir/test/harness"
)

// member is one franz-go consumer using the KIP-848 consumer protocol
// (kgo.ServerSideBalancer). It commits after each poll while holding off
// rebalances, and finishes that commit before it stops, so no record is
// read twice when partitions move.
type member struct {
	name   string
	cl     *kgo.Client
	cancel context.CancelFunc
	done   chan struct{}

	mu   sync.Mutex
	read map[string]int // value -> times read
	errs []error
}

func startMember(t *testing.T, b *harness.Broker, name, groupID, topic string, balancer kgo.GroupBalancer, extra ...kgo.Opt) *member {
	t.Helper()
	opts := append([]kgo.Opt{
		kgo.SeedBrokers(b.Addr),
		kgo.ClientID(name),
		kgo.ConsumerGroup(groupID),
		kgo.ConsumeTopics(topic),
		kgo.Balancers(balancer),
		kgo.ServerSideBalancer(),
		kgo.DisableAutoCommit(),
		kgo.BlockRebalanceOnPoll(),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
		kgo.FetchMaxWait(200 * time.Millisecond),
		kgo.RetryTimeout(30 * time.Second),
	}, extra...)
	cl, err := kgo.NewClient(opts...)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	m := &member{name: name, cl: cl, cancel: cancel, done: make(chan struct{}), read: map[string]int{}}
	go m.run(ctx)
	t.Cleanup(m.close)
	return m
}

func (m *member) run(ctx context.Context) {
	defer close(m.done)
	for ctx.Err() == nil {
		fs := m.cl.PollFetches(ctx)
		if ctx.Err() != nil {
			m.cl.AllowRebalance()
			return
		}
		m.mu.Lock()
		fs.EachError(func(topic string, p int32, err error) {
			m.errs = append(m.errs, fmt.Errorf("%s/%d: %w", topic, p, err))
		})
		fs.EachRecord(func(r *kgo.Record) { m.read[string(r.Value)]++ })
		m.mu.Unlock()
		// The commit must not be cut short by close: a record counted
		// here but left uncommitted is read again by the partition's
		// next owner, which is the at-least-once redelivery Kafka makes
		// too, not a broker fault. So it gets a context of its own.
		cctx, cancel := context.WithTimeout(context.Background(), opTimeout)
		err := m.cl.CommitUncommittedOffsets(cctx)
		cancel()
		if err != nil {
			m.mu.Lock()
			m.errs = append(m.errs, fmt.Errorf("commit: %w", err))
			m.mu.Unlock()
		}
		m.cl.AllowRebalance()
	}
}

// close stops polling, waits for the last commit, and leaves the group
// (a heartbeat with epoch -1).
func (m *member) close() {
	select {
	case <-m.done:
		return
	default:
	}
	m.cancel()
	<-m.done
	m.cl.Close()
}

func (m *member) snapshot() (map[string]int, []error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	out := make(map[string]int, len(m.read))
	for k, v := range m.read {
		out[k] = v
	}
	return out, append([]error(nil), m.errs...)
}

// waitAllRead waits until the members together read every value, then
// checks each was read exactly once, by one member.
func waitAllRead(t *testing.T, members []*member, values []string) map[string]string {
	t.Helper()
	want := map[string]bool{}
	for _, v := range values {
		want[v] = true
	}
	var readers map[string]string
	harness.WaitFor(t, 90*time.Second, fmt.Sprintf("%d records read by the group", len(values)), func() bool {
		readers = map[string]string{}
		for _, m := range members {
			got, _ := m.snapshot()
			for v := range got {
				if want[v] {
					readers[v] = m.name
				}
			}
		}
		return len(readers) == len(want)
	})
	seen := map[string]string{}
	for _, m := range members {
		got, errs := m.snapshot()
		for v, n := range got {
			if !want[v] {
				continue
			}
			if n != 1 {
				t.Errorf("%s read %s %d times", m.name, v, n)
			}
			if other, dup := seen[v]; dup {
				t.Errorf("%s read by %s and %s", v, other, m.name)
			}
			seen[v] = m.name
		}
		for _, err := range errs {
			t.Logf("%s: %v", m.name, err)
		}
	}
	return readers
}

// TestKgoConsumerProtocol runs three franz-go members on the consumer
// protocol with each server-side assignor: they split the partitions
// disjointly and together read every record exactly once; when one
// leaves, the others take its partitions and read on, still exactly once;
// a fresh member after all left starts at the committed offsets.
func TestKgoConsumerProtocol(t *testing.T) {
	b := startBroker(t)
	adm := kadm.NewClient(b.Client())
	for _, tc := range []struct {
		assignor string
		balancer kgo.GroupBalancer
	}{
		{"uniform", kgo.CooperativeStickyBalancer()},
		{"range", kgo.RangeBalancer()},
	} {
		t.Run(tc.assignor, func(t *testing.T) {
			topic, groupID := "kip848-"+tc.assignor, "g848-"+tc.assignor
			const partitions = 6
			createTopic(t, adm, topic, partitions)
			var ms []*member
			for i := range 3 {
				ms = append(ms, startMember(t, b, fmt.Sprintf("%s-%d", tc.assignor, i), groupID, topic, tc.balancer))
			}
			d := waitStable(t, b.Client(), groupID, topic, partitions, 3)
			if d.AssignorName != tc.assignor {
				t.Errorf("assignor %q, want %q", d.AssignorName, tc.assignor)
			}
			for _, m := range d.Members {
				if n := len(m.Assignment.TopicPartitions); n != 1 || len(m.Assignment.TopicPartitions[0].Partitions) != 2 {
					t.Errorf("member %s owns %+v, want 2 partitions", m.MemberID, m.Assignment.TopicPartitions)
				}
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
			ms[0].close()
			waitStable(t, b.Client(), groupID, topic, partitions, 2)
			second := produce(t, b, topic, "b", 300)
			readers = waitAllRead(t, ms, append(first, second...))
			for _, v := range second {
				if readers[v] == ms[0].name {
					t.Errorf("%s read by the member that left", v)
				}
			}

			for _, m := range ms[1:] {
				m.close()
			}
			offs := committed(t, adm, groupID, topic)
			var total int64
			for _, o := range offs {
				total += o
			}
			if total != 600 {
				t.Fatalf("committed offsets %v sum to %d, want 600", offs, total)
			}

			// A fresh member resumes exactly there.
			third := produce(t, b, topic, "c", 60)
			fresh := startMember(t, b, tc.assignor+"-fresh", groupID, topic, tc.balancer)
			waitAllRead(t, []*member{fresh}, third)
			got, _ := fresh.snapshot()
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
