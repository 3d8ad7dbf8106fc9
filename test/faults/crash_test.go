package faults

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"testing"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/weir-project/weir/test/harness"
)

// killRounds is how many times each produce stream sees a SIGKILL; the
// run stays bounded because each round only waits for a few hundred acks.
const killRounds = 3

func TestKillDuringProduceAcks1FlushEveryMessage(t *testing.T) {
	b := harness.StartBroker(t, "log.flush.interval.messages=1")
	killDuringProduce(t, b, kgo.LeaderAck())
}

func TestKillDuringProduceAcksAll(t *testing.T) {
	b := harness.StartBroker(t)
	killDuringProduce(t, b, kgo.AllISRAcks())
}

// ack is one record the broker acknowledged.
type ack struct {
	partition int32
	offset    int64
	value     string
}

// ackLog collects the acknowledgements of a running producer.
type ackLog struct {
	mu       sync.Mutex
	acks     []ack
	failed   int
	firstErr error
}

func (l *ackLog) record(r *kgo.Record, err error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if err != nil {
		l.failed++
		if l.firstErr == nil {
			l.firstErr = err
		}
		return
	}
	l.acks = append(l.acks, ack{r.Partition, r.Offset, string(r.Value)})
}

func (l *ackLog) count() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.acks)
}

// killDuringProduce runs a producer that sends numbered records without
// pause while the broker is killed with SIGKILL and restarted several
// times, then checks that every acknowledged record is at its
// acknowledged offset with its value, and that offsets have no holes.
func killDuringProduce(t *testing.T, b *harness.Broker, acks kgo.Acks) {
	const topic = "stream"
	createTopic(t, b, topic, 3, nil)

	var log ackLog
	cl := b.Client(
		kgo.RequiredAcks(acks),
		kgo.DefaultProduceTopic(topic),
		kgo.RecordPartitioner(kgo.RoundRobinPartitioner()),
		// Small batches and a short buffer: many produce requests, so
		// the kill lands between and inside appends, not after a few.
		kgo.MaxBufferedRecords(100),
		kgo.ProducerBatchMaxBytes(2048),
	)
	ctx, stop := context.WithCancel(context.Background())
	defer stop()
	produced := make(chan struct{})
	go func() {
		defer close(produced)
		for i := 0; ctx.Err() == nil; i++ {
			cl.Produce(ctx, &kgo.Record{Value: fmt.Appendf(nil, "rec-%08d", i)}, log.record)
		}
	}()

	waitAcks := func(n int) {
		t.Helper()
		harness.WaitFor(t, 2*opTimeout, fmt.Sprintf("%d acknowledged records", n), func() bool { return log.count() >= n })
	}
	for round := range killRounds {
		waitAcks(log.count() + 300)
		b.Kill()
		t.Logf("round %d: killed after %d acks", round, log.count())
		b.Restart()
	}
	// The producer must carry on against the restarted broker.
	waitAcks(log.count() + 300)
	stop()
	<-produced
	flushCtx := harness.Ctx(t, 2*opTimeout)
	if err := cl.Flush(flushCtx); err != nil {
		t.Fatalf("flush: %v", err)
	}

	log.mu.Lock()
	acked, failed, firstErr := append([]ack(nil), log.acks...), log.failed, log.firstErr
	log.mu.Unlock()
	t.Logf("%d records acknowledged, %d failed, first with %v (unacknowledged records may or may not be stored)", len(acked), failed, firstErr)

	stored := readAll(t, b, topic)
	for _, a := range acked {
		got, ok := stored[a.partition][a.offset]
		switch {
		case !ok:
			t.Fatalf("acknowledged %q at %s-%d offset %d is missing", a.value, topic, a.partition, a.offset)
		case got != a.value:
			t.Fatalf("%s-%d offset %d holds %q, but %q was acknowledged there", topic, a.partition, a.offset, got, a.value)
		}
	}
	assertServes(t, b)
}

// readAll consumes every partition of topic from offset 0 to its end and
// checks that the offsets have no holes; it returns offset -> value per
// partition.
func readAll(t *testing.T, b *harness.Broker, topic string) map[int32]map[int64]string {
	t.Helper()
	ends := endOffsets(t, b, topic)
	starts := map[int32]kgo.Offset{}
	out := map[int32]map[int64]string{}
	remaining := 0
	for p, end := range ends {
		starts[p] = kgo.NewOffset().At(0)
		out[p] = map[int64]string{}
		remaining += int(end)
	}
	cl := b.Client(kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{topic: starts}))
	defer cl.Close()
	ctx := harness.Ctx(t, 2*opTimeout)
	next := map[int32]int64{}
	for remaining > 0 {
		fs := cl.PollFetches(ctx)
		if ctx.Err() != nil {
			t.Fatalf("read %s: %d records still unread at the deadline (ends %v, next %v)", topic, remaining, ends, next)
		}
		fs.EachError(func(tp string, p int32, err error) { t.Logf("fetch %s-%d: %v", tp, p, err) })
		fs.EachRecord(func(r *kgo.Record) {
			if r.Offset != next[r.Partition] {
				t.Fatalf("%s-%d: offset %d follows %d: the log has a hole", topic, r.Partition, r.Offset, next[r.Partition]-1)
			}
			next[r.Partition] = r.Offset + 1
			if r.Offset < ends[r.Partition] {
				out[r.Partition][r.Offset] = string(r.Value)
				remaining--
			}
		})
	}
	return out
}

// TestTopicsSurviveKill checks that acknowledged topic creations, config
// changes and deletions are all durable across SIGKILL.
func TestTopicsSurviveKill(t *testing.T) {
	b := harness.StartBroker(t)
	ctx := harness.Ctx(t, 3*opTimeout)
	adm := kadm.NewClient(b.Client())

	retention := "123456789"
	createTopic(t, b, "keep", 3, map[string]*string{"retention.ms": &retention})
	createTopic(t, b, "gone", 2, nil)
	if _, err := b.Client().ProduceSync(ctx, &kgo.Record{Topic: "gone", Value: []byte("x")}).First(); err != nil {
		t.Fatalf("produce to gone: %v", err)
	}
	maxBytes := "65536"
	alter, err := adm.AlterTopicConfigs(ctx, []kadm.AlterConfig{{Op: kadm.SetConfig, Name: "max.message.bytes", Value: &maxBytes}}, "keep")
	if err == nil {
		err = alter[0].Err
	}
	if err != nil {
		t.Fatalf("alter configs of keep: %v", err)
	}
	if resp, err := adm.DeleteTopic(ctx, "gone"); err != nil || resp.Err != nil {
		t.Fatalf("delete gone: %v %v", err, resp.Err)
	}
	before, err := adm.ListTopics(ctx, "keep")
	if err != nil {
		t.Fatal(err)
	}

	b.Kill()
	b.Restart()

	adm = kadm.NewClient(b.Client())
	after, err := adm.ListTopics(ctx)
	if err != nil {
		t.Fatalf("list topics after restart: %v", err)
	}
	keep, ok := after["keep"]
	switch {
	case !ok:
		t.Fatalf("topic keep is gone after kill -9; topics: %v", after.Names())
	case len(keep.Partitions) != 3:
		t.Fatalf("topic keep has %d partitions after restart, want 3", len(keep.Partitions))
	case keep.ID != before["keep"].ID:
		t.Fatalf("topic keep changed id across restart: %v -> %v", before["keep"].ID, keep.ID)
	}
	if _, ok := after["gone"]; ok {
		t.Fatalf("deleted topic gone is back after kill -9")
	}
	cfgs, err := adm.DescribeTopicConfigs(ctx, "keep")
	if err != nil {
		t.Fatalf("describe configs of keep: %v", err)
	}
	rc, err := cfgs.On("keep", nil)
	if err != nil || rc.Err != nil {
		t.Fatalf("describe configs of keep: %v %v", err, rc.Err)
	}
	want := map[string]string{"retention.ms": retention, "max.message.bytes": maxBytes}
	for _, c := range rc.Configs {
		if w, ok := want[c.Key]; ok {
			if c.Value == nil || *c.Value != w {
				t.Errorf("config %s = %v after restart, want %s", c.Key, c.Value, w)
			}
			delete(want, c.Key)
		}
	}
	if len(want) > 0 {
		t.Errorf("configs missing after restart: %v", want)
	}

	// The deleted topic's data must not come back either.
	harness.WaitFor(t, opTimeout, "the deleted topic's partition dirs to disappear", func() bool {
		for _, p := range []string{"gone-0", "gone-1"} {
			if _, err := os.Stat(filepath.Join(b.Dir, p)); !errors.Is(err, os.ErrNotExist) {
				return false
			}
		}
		return true
	})
	md, err := adm.Metadata(ctx, "gone")
	if err != nil {
		t.Fatal(err)
	}
	if td := md.Topics["gone"]; !errors.Is(td.Err, kerr.UnknownTopicOrPartition) {
		t.Fatalf("metadata of the deleted topic: err %v, want UNKNOWN_TOPIC_OR_PARTITION", td.Err)
	}
	assertServes(t, b)
}
