// Package cluster proves replication end to end on real clusters of weir
// processes: failover when a leader is killed -9, followers that pause and
// come back, quorums that are lost and regained, the controller's loss,
// controlled shutdown, and consumer groups moving with their coordinator,
// checking every time that each acknowledged record is read back exactly
// once, in order, and that the replicas' logs agree batch for batch.
package cluster

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/weir-project/weir/test/harness"
)

func TestMain(m *testing.M) { harness.Main(m) }

// opTimeout bounds one client operation on a slow, shared machine.
const opTimeout = 60 * time.Second

// python is the interpreter that sees the Debian client packages.
const python = "/usr/bin/python3"

// createTopic creates a topic and waits until every partition has a
// leader and a full ISR.
func createTopic(t *testing.T, c *harness.Cluster, topic string, partitions int32, rf int16, configs map[string]*string) {
	t.Helper()
	adm := kadm.NewClient(c.Client())
	resp, err := adm.CreateTopic(harness.Ctx(t, opTimeout), partitions, rf, configs, topic)
	if err == nil {
		err = resp.Err
	}
	if err != nil {
		t.Fatalf("create topic %s: %v", topic, err)
	}
	for p := range partitions {
		c.WaitFullISR(topic, p, opTimeout)
	}
}

// minISR2 is min.insync.replicas=2 as a topic config.
func minISR2() map[string]*string {
	v := "2"
	return map[string]*string{"min.insync.replicas": &v}
}

// ackLog records what a producer was told: each value's offset.
type ackLog struct {
	mu     sync.Mutex
	offset map[string]int64
	failed []string
	ch     chan struct{} // signalled (non-blocking) on each ack
}

func newAckLog() *ackLog { return &ackLog{offset: map[string]int64{}, ch: make(chan struct{}, 1)} }

func (l *ackLog) ack(v string, off int64) {
	l.mu.Lock()
	l.offset[v] = off
	l.mu.Unlock()
	select {
	case l.ch <- struct{}{}:
	default:
	}
}

func (l *ackLog) fail(what string) {
	l.mu.Lock()
	l.failed = append(l.failed, what)
	l.mu.Unlock()
}

func (l *ackLog) count() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.offset)
}

// waitAcks waits until at least n records are acknowledged.
func (l *ackLog) waitAcks(t *testing.T, n int, timeout time.Duration, what string) {
	t.Helper()
	deadline := time.After(timeout)
	for l.count() < n {
		select {
		case <-l.ch:
		case <-deadline:
			t.Fatalf("%s: %d of %d records acknowledged within %v", what, l.count(), n, timeout)
		}
	}
}

// checkExactlyOnce reads partition 0 of topic and checks that it holds
// values "0", "1", ... each exactly once, in order, from offset 0, and
// that every acknowledged value is where its acknowledgement said.
func checkExactlyOnce(t *testing.T, c *harness.Cluster, addrs []string, topic string, acks *ackLog) int {
	t.Helper()
	got := harness.PartitionValues(t, addrs, topic, 0)
	for off := int64(0); off < int64(len(got)); off++ {
		v, ok := got[off]
		if !ok {
			t.Fatalf("offset %d missing below the end %d", off, len(got))
		}
		if v != strconv.FormatInt(off, 10) {
			t.Fatalf("offset %d holds %q, want %d (a record lost, duplicated or reordered)", off, v, off)
		}
	}
	acks.mu.Lock()
	defer acks.mu.Unlock()
	for v, off := range acks.offset {
		if got[off] != v {
			t.Fatalf("value %s acknowledged at offset %d, but the log holds %q there (%d records stored)", v, off, got[off], len(got))
		}
	}
	return len(got)
}

// sameLogs checks that the replicas on the given nodes (all stopped) hold
// the same batches: offsets, leader epochs and CRCs.
func sameLogs(t *testing.T, c *harness.Cluster, topic string, partition int32, nodes ...int32) {
	t.Helper()
	var ref []harness.StoredBatch
	for i, id := range nodes {
		got := harness.StoredBatches(t, c.Node(id).Dir, topic, partition)
		if i == 0 {
			ref = got
			continue
		}
		if !slices.Equal(got, ref) {
			t.Fatalf("node %d holds %d batches, node %d %d; first difference at %s",
				id, len(got), nodes[0], len(ref), firstDiff(got, ref))
		}
	}
}

func firstDiff(a, b []harness.StoredBatch) string {
	for i := range min(len(a), len(b)) {
		if a[i] != b[i] {
			return fmt.Sprintf("batch %d: %v vs %v", i, a[i], b[i])
		}
	}
	return fmt.Sprintf("batch %d (one log ends there)", min(len(a), len(b)))
}

// franzProducer streams values "0".."n-1" to partition 0 with an
// idempotent acks=all producer, one every pace, recording every answer.
func franzProducer(t *testing.T, c *harness.Cluster, topic string, n int, pace time.Duration, acks *ackLog) (done <-chan struct{}, flush func()) {
	t.Helper()
	cl := c.Client(
		kgo.DefaultProduceTopic(topic),
		kgo.RecordPartitioner(kgo.ManualPartitioner()),
		kgo.RequiredAcks(kgo.AllISRAcks()),
		kgo.ProducerLinger(2*time.Millisecond),
		kgo.RecordDeliveryTimeout(3*time.Minute),
		kgo.RetryTimeout(3*time.Minute),
	)
	ctx := harness.Ctx(t, 5*time.Minute)
	ch := make(chan struct{})
	go func() {
		defer close(ch)
		tick := time.NewTicker(pace)
		defer tick.Stop()
		for i := range n {
			<-tick.C
			cl.Produce(ctx, &kgo.Record{Value: []byte(strconv.Itoa(i))}, func(r *kgo.Record, err error) {
				if err != nil {
					acks.fail(fmt.Sprintf("%s: %v", r.Value, err))
					return
				}
				acks.ack(string(r.Value), r.Offset)
			})
		}
	}()
	return ch, func() {
		if err := cl.Flush(context.Background()); err != nil {
			t.Fatalf("flush: %v", err)
		}
	}
}
