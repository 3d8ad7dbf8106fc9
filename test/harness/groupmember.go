package harness

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

// GroupMember is one franz-go group consumer that records what it read.
// It commits after each poll while holding off rebalances, so no record is
// read twice when partitions move between members.
type GroupMember struct {
	name   string
	cl     *kgo.Client
	cancel context.CancelFunc
	done   chan struct{}

	mu   sync.Mutex
	read map[string]int // value -> times read
	errs []error
}

// StartGroupMember starts a group consumer with opts (seed brokers, group,
// topics, balancer, timeouts) plus what makes reads countable: manual
// commits after each poll, rebalances blocked while polling, reading from
// the start. It is closed when the test ends.
func StartGroupMember(t testing.TB, name string, opts ...kgo.Opt) *GroupMember {
	t.Helper()
	all := append([]kgo.Opt{
		kgo.ClientID(name),
		kgo.DisableAutoCommit(),
		kgo.BlockRebalanceOnPoll(),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
		kgo.FetchMaxWait(200 * time.Millisecond),
		kgo.RetryTimeout(30 * time.Second),
	}, opts...)
	cl, err := kgo.NewClient(all...)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	m := &GroupMember{name: name, cl: cl, cancel: cancel, done: make(chan struct{}), read: map[string]int{}}
	go m.run(ctx)
	t.Cleanup(m.Close)
	return m
}

// Name is the member's client id.
func (m *GroupMember) Name() string { return m.name }

func (m *GroupMember) run(ctx context.Context) {
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
		// The commit must not be cut short by Close: a record counted
		// here but left uncommitted is read again by the partition's
		// next owner, which is the at-least-once redelivery Kafka makes
		// too, not a broker fault. So it gets a context of its own.
		cctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
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

// Close stops polling, waits for the last commit, and leaves the group.
func (m *GroupMember) Close() {
	select {
	case <-m.done:
		return
	default:
	}
	m.cancel()
	<-m.done
	m.cl.Close()
}

// Snapshot returns how often each value was read, and the errors seen.
func (m *GroupMember) Snapshot() (map[string]int, []error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	out := make(map[string]int, len(m.read))
	for k, v := range m.read {
		out[k] = v
	}
	return out, append([]error(nil), m.errs...)
}

// WaitAllRead waits until the members together read every value, then
// checks each was read exactly once, by one member. It returns who read
// each value.
func WaitAllRead(t testing.TB, members []*GroupMember, values []string) map[string]string {
	t.Helper()
	want := map[string]bool{}
	for _, v := range values {
		want[v] = true
	}
	var readers map[string]string
	WaitFor(t, 90*time.Second, fmt.Sprintf("%d records read by the group", len(values)), func() bool {
		readers = map[string]string{}
		for _, m := range members {
			got, _ := m.Snapshot()
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
		got, errs := m.Snapshot()
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

// ProduceValues writes n records "<prefix>-<i>" (i zero-padded to 5
// digits) round-robin over the topic's partitions, waits for every ack
// and returns the values in order.
func ProduceValues(t testing.TB, b *Broker, topic, prefix string, n int) []string {
	t.Helper()
	cl := b.Client(kgo.RecordPartitioner(kgo.RoundRobinPartitioner()), kgo.ProducerLinger(0))
	defer cl.Close()
	ctx := Ctx(t, 60*time.Second)
	var (
		wg       sync.WaitGroup
		mu       sync.Mutex
		firstErr error
	)
	values := make([]string, n)
	for i := range n {
		values[i] = fmt.Sprintf("%s-%05d", prefix, i)
		wg.Add(1)
		cl.Produce(ctx, &kgo.Record{Topic: topic, Value: []byte(values[i])}, func(_ *kgo.Record, err error) {
			defer wg.Done()
			if err != nil {
				mu.Lock()
				firstErr = err
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	if firstErr != nil {
		t.Fatalf("produce to %s: %v", topic, firstErr)
	}
	return values
}
