package faults

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/weir-project/weir/internal/storage/checkpoint"
	"github.com/weir-project/weir/test/harness"
)

// TestStopIsCleanShutdown checks SIGTERM: exit status 0, the clean
// shutdown marker and checkpoints on disk, and a restart that trusts
// them and serves every record.
func TestStopIsCleanShutdown(t *testing.T) {
	b := harness.StartBroker(t)
	const topic = "orders"
	createTopic(t, b, topic, 2, nil)
	want := produceNumbered(t, b, topic, 1000)
	ends := endOffsets(t, b, topic)

	b.Stop()
	assertExitedZero(t, b)

	for _, name := range []string{".kafka_cleanshutdown", "meta.properties", "log-start-offset-checkpoint"} {
		if _, err := os.Stat(filepath.Join(b.Dir, name)); err != nil {
			t.Errorf("after SIGTERM: %v", err)
		}
	}
	// The recovery point of a cleanly closed log is its end: everything
	// was flushed, so no recovery is needed at the next start.
	rp, err := checkpoint.ReadOffsets(filepath.Join(b.Dir, "recovery-point-offset-checkpoint"))
	if err != nil {
		t.Fatalf("read recovery point checkpoint: %v", err)
	}
	for p, end := range ends {
		got, ok := rp[checkpoint.TopicPartition{Topic: topic, Partition: p}]
		if !ok || got != end {
			t.Errorf("recovery point of %s-%d: %d (present %v), want the log end %d", topic, p, got, ok, end)
		}
	}
	for p := range ends {
		seg := filepath.Join(b.Dir, fmt.Sprintf("%s-%d", topic, p), "00000000000000000000.log")
		if _, err := os.Stat(seg); err != nil {
			t.Errorf("segment file: %v", err)
		}
	}

	stoppedLog := len(b.Output())
	b.Restart()
	restartLog := b.Output()[stoppedLog:]
	// Kafka removes the marker at start: a crash from here on must be
	// recovered, not trusted.
	harness.WaitFor(t, opTimeout, "the clean shutdown marker to be removed at start", func() bool {
		_, err := os.Stat(filepath.Join(b.Dir, ".kafka_cleanshutdown"))
		return errors.Is(err, os.ErrNotExist)
	})
	if strings.Contains(restartLog, "recovery truncated") || strings.Contains(restartLog, "rebuilt indexes") {
		t.Errorf("restart after a clean shutdown recovered logs:\n%s", restartLog)
	}
	assertStored(t, b, topic, want)
	assertServes(t, b)
}

// TestStopDuringProduce sends SIGTERM while a producer is busy: the broker
// still exits 0 and every acknowledged record is there after restart.
func TestStopDuringProduce(t *testing.T) {
	b := harness.StartBroker(t)
	const topic = "busy"
	createTopic(t, b, topic, 2, nil)
	var log ackLog
	cl := b.Client(kgo.DefaultProduceTopic(topic), kgo.MaxBufferedRecords(100), kgo.ProducerBatchMaxBytes(2048))
	ctx, stop := context.WithCancel(context.Background())
	defer stop()
	produced := make(chan struct{})
	go func() {
		defer close(produced)
		for i := 0; ctx.Err() == nil; i++ {
			cl.Produce(ctx, &kgo.Record{Value: fmt.Appendf(nil, "busy-%08d", i)}, log.record)
		}
	}()
	harness.WaitFor(t, 2*opTimeout, "500 acknowledged records", func() bool { return log.count() >= 500 })
	b.Stop()
	assertExitedZero(t, b)
	stop()
	b.Restart()
	<-produced
	if err := cl.Flush(harness.Ctx(t, 2*opTimeout)); err != nil {
		t.Fatalf("flush: %v", err)
	}
	log.mu.Lock()
	acked := append([]ack(nil), log.acks...)
	log.mu.Unlock()
	stored := readAll(t, b, topic)
	for _, a := range acked {
		if got := stored[a.partition][a.offset]; got != a.value {
			t.Fatalf("%s-%d offset %d: %q after restart, %q was acknowledged", topic, a.partition, a.offset, got, a.value)
		}
	}
	assertServes(t, b)
}

func assertExitedZero(t *testing.T, b *harness.Broker) {
	t.Helper()
	code, exited := b.ExitCode()
	if !exited {
		t.Fatal("broker still running after Stop")
	}
	if code != 0 {
		t.Fatalf("broker exited %d on SIGTERM, want 0:\n%s", code, b.Output())
	}
}

// produceNumbered synchronously produces n records with distinct values
// and returns value by partition and offset.
func produceNumbered(t *testing.T, b *harness.Broker, topic string, n int) map[int32]map[int64]string {
	t.Helper()
	recs := make([]*kgo.Record, n)
	for i := range recs {
		recs[i] = &kgo.Record{Topic: topic, Value: fmt.Appendf(nil, "%s-%06d", topic, i)}
	}
	cl := b.Client(kgo.RecordPartitioner(kgo.RoundRobinPartitioner()))
	if err := cl.ProduceSync(harness.Ctx(t, 2*opTimeout), recs...).FirstErr(); err != nil {
		t.Fatalf("produce %d records to %s: %v", n, topic, err)
	}
	out := map[int32]map[int64]string{}
	for _, r := range recs {
		if out[r.Partition] == nil {
			out[r.Partition] = map[int64]string{}
		}
		out[r.Partition][r.Offset] = string(r.Value)
	}
	return out
}

// assertStored reads the whole topic and compares it with want exactly.
func assertStored(t *testing.T, b *harness.Broker, topic string, want map[int32]map[int64]string) {
	t.Helper()
	got := readAll(t, b, topic)
	for p, recs := range want {
		if len(got[p]) != len(recs) {
			t.Errorf("%s-%d holds %d records, want %d", topic, p, len(got[p]), len(recs))
		}
		for off, v := range recs {
			if got[p][off] != v {
				t.Fatalf("%s-%d offset %d: %q, want %q", topic, p, off, got[p][off], v)
			}
		}
	}
}
