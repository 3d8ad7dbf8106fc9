package faults

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/weir-project/weir/test/harness"
)

// Short client timeouts, so that a pause of a few seconds is longer than
// every request's deadline: the clients give up on their connections,
// reconnect, and retry, while the paused broker still holds the old
// requests in its socket buffers and serves them when it resumes.
const (
	pauseRequestOverhead = time.Second
	pauseProduceTimeout  = 2 * time.Second
)

func pauseClientOpts() []kgo.Opt {
	return []kgo.Opt{
		kgo.RequestTimeoutOverhead(pauseRequestOverhead),
		kgo.ProduceRequestTimeout(pauseProduceTimeout),
		kgo.FetchMaxWait(500 * time.Millisecond),
		kgo.MetadataMinAge(250 * time.Millisecond),
	}
}

// pause stops the broker process with SIGSTOP for d, then resumes it.
// The wait is the fault itself, not a wait for a condition. A failing
// test still resumes it, so that the harness's cleanup stops it.
func pause(t *testing.T, b *harness.Broker, d time.Duration) {
	t.Helper()
	pid := b.PID()
	t.Cleanup(func() { syscall.Kill(pid, syscall.SIGCONT) })
	if err := syscall.Kill(pid, syscall.SIGSTOP); err != nil {
		t.Fatalf("SIGSTOP broker %d: %v", pid, err)
	}
	time.Sleep(d)
	if err := syscall.Kill(pid, syscall.SIGCONT); err != nil {
		t.Fatalf("SIGCONT broker %d: %v", pid, err)
	}
}

// readErrors counts a client's failed response reads (timeouts, closed
// connections): proof that a pause really outlasted the request timeout.
type readErrors struct{ n atomic.Int64 }

func (r *readErrors) OnBrokerRead(_ kgo.BrokerMetadata, _ int16, _ int, _, _ time.Duration, err error) {
	if err != nil {
		r.n.Add(1)
	}
}

// tailLog collects what a partition consumer reads, in order.
type tailLog struct {
	mu   sync.Mutex
	recs map[int32][]*kgo.Record
	err  error // first ordering violation
}

func (l *tailLog) add(r *kgo.Record) {
	l.mu.Lock()
	defer l.mu.Unlock()
	prev := l.recs[r.Partition]
	if want := int64(len(prev)); r.Offset != want && l.err == nil {
		l.err = fmt.Errorf("consumer read %s-%d offset %d after %d records: skipped or repeated offsets", r.Topic, r.Partition, r.Offset, want)
	}
	l.recs[r.Partition] = append(prev, r)
}

func (l *tailLog) count() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	n := 0
	for _, rs := range l.recs {
		n += len(rs)
	}
	return n
}

// TestPausedBrokerProducerConsumer pauses the broker (SIGSTOP) for longer
// than the clients' request timeouts while an idempotent acks=all producer
// and a consumer run, then resumes it (SIGCONT). The clients must recover
// by themselves, no record may fail, every acknowledged record must be in
// the log exactly once and in send order, nothing unacknowledged may be
// stored, and the consumer must have read the log without gaps or repeats.
func TestPausedBrokerProducerConsumer(t *testing.T) {
	b := harness.StartBroker(t)
	const topic = "paused"
	const partitions = 3
	createTopic(t, b, topic, partitions, nil)

	var log ackLog
	var prodReadErrs readErrors
	prod := b.Client(append(pauseClientOpts(),
		kgo.WithHooks(&prodReadErrs),
		kgo.RequiredAcks(kgo.AllISRAcks()),
		kgo.DefaultProduceTopic(topic),
		kgo.RecordPartitioner(kgo.RoundRobinPartitioner()),
		kgo.MaxBufferedRecords(100),
		kgo.ProducerBatchMaxBytes(2048),
	)...)
	starts := map[int32]kgo.Offset{}
	for p := range int32(partitions) {
		starts[p] = kgo.NewOffset().At(0)
	}
	cons := b.Client(append(pauseClientOpts(),
		kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{topic: starts}),
	)...)

	stop := make(chan struct{})
	produced := make(chan struct{})
	go func() {
		defer close(produced)
		for i := 0; ; i++ {
			select {
			case <-stop:
				return
			default:
			}
			// Produce blocks while the buffer is full; a background
			// context means no record is failed by our own cancellation.
			prod.Produce(context.Background(), &kgo.Record{Value: fmt.Appendf(nil, "p-%08d", i)}, log.record)
		}
	}()
	tail := tailLog{recs: map[int32][]*kgo.Record{}}
	consCtx, stopCons := context.WithCancel(context.Background())
	consumed := make(chan struct{})
	go func() {
		defer close(consumed)
		for consCtx.Err() == nil {
			fs := cons.PollFetches(consCtx)
			fs.EachRecord(tail.add)
		}
	}()
	defer func() { stopCons(); <-consumed }()

	harness.WaitFor(t, 2*opTimeout, "300 acknowledged records", func() bool { return log.count() >= 300 })
	before := log.count()
	pause(t, b, pauseProduceTimeout+pauseRequestOverhead+3*time.Second)
	resumed := log.count()
	harness.WaitFor(t, 2*opTimeout, "300 more acknowledged records after the pause", func() bool { return log.count() >= resumed+300 })
	close(stop)
	<-produced
	if err := prod.Flush(harness.Ctx(t, 2*opTimeout)); err != nil {
		t.Fatalf("flush: %v", err)
	}

	log.mu.Lock()
	acked, failed, firstErr := append([]ack(nil), log.acks...), log.failed, log.firstErr
	log.mu.Unlock()
	t.Logf("%d acks before the pause, %d when it ended, %d in all", before, resumed, len(acked))
	if failed > 0 {
		t.Fatalf("%d records failed across the pause, first with %v: the client should have retried", failed, firstErr)
	}
	if prodReadErrs.n.Load() == 0 {
		t.Fatal("no producer request timed out: the pause did not outlast the request timeout")
	}

	stored := readAll(t, b, topic)
	total := 0
	for p, recs := range stored {
		total += len(recs)
		// Send order per partition is the order of the numbers.
		last := -1
		for _, off := range slices.Sorted(maps.Keys(recs)) {
			var n int
			if _, err := fmt.Sscanf(recs[off], "p-%08d", &n); err != nil {
				t.Fatalf("%s-%d offset %d holds %s, which was never produced", topic, p, off, quote(recs[off]))
			}
			if n <= last {
				t.Fatalf("%s-%d offset %d holds record %d after record %d: duplicated or reordered", topic, p, off, n, last)
			}
			last = n
		}
	}
	seen := map[string]bool{}
	for _, a := range acked {
		if got := stored[a.partition][a.offset]; got != a.value {
			t.Fatalf("%s-%d offset %d holds %s, but %s was acknowledged there", topic, a.partition, a.offset, quote(got), quote(a.value))
		}
		if seen[a.value] {
			t.Fatalf("%s acknowledged twice", a.value)
		}
		seen[a.value] = true
	}
	if total != len(acked) {
		t.Fatalf("the log holds %d records but %d were acknowledged: something unacknowledged was stored, or stored twice", total, len(acked))
	}

	// The consumer, which lived through the pause too, read the same log.
	harness.WaitFor(t, 2*opTimeout, "the consumer to read every record", func() bool { return tail.count() >= total })
	stopCons()
	<-consumed
	tail.mu.Lock()
	defer tail.mu.Unlock()
	if tail.err != nil {
		t.Fatal(tail.err)
	}
	for p, recs := range tail.recs {
		for _, r := range recs {
			if want := stored[p][r.Offset]; string(r.Value) != want {
				t.Fatalf("consumer read %s at %s-%d offset %d, the log holds %s", quote(string(r.Value)), topic, p, r.Offset, quote(want))
			}
		}
	}
	assertServes(t, b)
}

// TestPausedBrokerConsumerGroup pauses the broker for longer than a group
// member's session timeout (6 s). On resume the coordinator may expire
// the member: the group must re-form by itself and consume every record at
// least once, and no committed offset may ever go backwards.
func TestPausedBrokerConsumerGroup(t *testing.T) {
	const sessionTimeout = 6 * time.Second
	b := harness.StartBroker(t, "group.initial.rebalance.delay.ms=0", "offsets.topic.num.partitions=1")
	const topic, group = "paused-group", "pause-group"
	createTopic(t, b, topic, 2, nil)
	produceRange := func(from, to int) {
		t.Helper()
		var recs []*kgo.Record
		for i := from; i < to; i++ {
			recs = append(recs, &kgo.Record{Topic: topic, Value: fmt.Appendf(nil, "g-%06d", i)})
		}
		cl := b.Client(kgo.RecordPartitioner(kgo.RoundRobinPartitioner()))
		if err := cl.ProduceSync(harness.Ctx(t, 2*opTimeout), recs...).FirstErr(); err != nil {
			t.Fatalf("produce records %d-%d: %v", from, to, err)
		}
	}

	var mu sync.Mutex
	seen := map[string]int{}
	var assigned, revoked, lost int
	member := b.Client(append(pauseClientOpts(),
		kgo.ConsumerGroup(group),
		kgo.ConsumeTopics(topic),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
		kgo.SessionTimeout(sessionTimeout),
		kgo.HeartbeatInterval(500*time.Millisecond),
		kgo.AutoCommitInterval(300*time.Millisecond),
		kgo.OnPartitionsAssigned(func(context.Context, *kgo.Client, map[string][]int32) { mu.Lock(); assigned++; mu.Unlock() }),
		kgo.OnPartitionsRevoked(func(ctx context.Context, cl *kgo.Client, _ map[string][]int32) {
			mu.Lock()
			revoked++
			mu.Unlock()
			// As franz-go does by default: commit what was read before
			// giving the partitions up.
			cl.CommitMarkedOffsets(ctx)
		}),
		kgo.OnPartitionsLost(func(context.Context, *kgo.Client, map[string][]int32) { mu.Lock(); lost++; mu.Unlock() }),
	)...)
	ctx, stopConsume := context.WithCancel(context.Background())
	consumed := make(chan struct{})
	go func() {
		defer close(consumed)
		for ctx.Err() == nil {
			fs := member.PollFetches(ctx)
			fs.EachRecord(func(r *kgo.Record) {
				mu.Lock()
				seen[string(r.Value)]++
				mu.Unlock()
			})
		}
	}()
	defer func() { stopConsume(); <-consumed }()

	// Committed offsets are watched all along from a separate client.
	watcher := kadm.NewClient(b.Client(pauseClientOpts()...))
	var wmu sync.Mutex
	committed := map[int32]int64{}
	var regression error
	pollCommitted := func() {
		wctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		defer cancel()
		resp, err := watcher.FetchOffsets(wctx, group)
		if err != nil {
			return // the broker may be paused; try again later
		}
		wmu.Lock()
		defer wmu.Unlock()
		resp.Each(func(o kadm.OffsetResponse) {
			if o.Err != nil || o.Topic != topic {
				return
			}
			if prev, ok := committed[o.Partition]; ok && o.At < prev && regression == nil {
				regression = fmt.Errorf("committed offset of %s-%d went back from %d to %d", topic, o.Partition, prev, o.At)
			}
			committed[o.Partition] = o.At
		})
	}
	watched := make(chan struct{})
	go func() {
		defer close(watched)
		tick := time.NewTicker(100 * time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-tick.C:
				pollCommitted()
			}
		}
	}()
	defer func() { stopConsume(); <-watched }()

	// waitAll waits until the member has read records [0, n) and
	// committed up to the end of every partition.
	waitAll := func(n int, what string) {
		t.Helper()
		ends := endOffsets(t, b, topic)
		harness.WaitFor(t, 2*opTimeout, what, func() bool {
			mu.Lock()
			for i := range n {
				if seen[fmt.Sprintf("g-%06d", i)] == 0 {
					mu.Unlock()
					return false
				}
			}
			mu.Unlock()
			wmu.Lock()
			defer wmu.Unlock()
			for p, end := range ends {
				if committed[p] != end {
					return false
				}
			}
			return true
		})
	}

	produceRange(0, 400)
	waitAll(400, "the group to consume and commit 400 records")
	pause(t, b, sessionTimeout+3*time.Second)
	produceRange(400, 800)
	waitAll(800, "the group to consume and commit all 800 records after the pause")

	wmu.Lock()
	err := regression
	wmu.Unlock()
	if err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	dups := 0
	for _, n := range seen {
		dups += n - 1
	}
	t.Logf("assigned %d, revoked %d, lost %d times; %d records read more than once", assigned, revoked, lost, dups)
	mu.Unlock()

	desc, err := kadm.NewClient(b.Client()).DescribeGroups(harness.Ctx(t, opTimeout), group)
	if err != nil {
		t.Fatalf("describe group: %v", err)
	}
	if g := desc[group]; g.Err != nil || g.State != "Stable" || len(g.Members) != 1 {
		t.Fatalf("group after the pause: state %s, %d members, err %v; want Stable with 1 member", g.State, len(g.Members), g.Err)
	}
	assertServes(t, b)
}
