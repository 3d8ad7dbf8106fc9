package idempotence

import (
	"cmp"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/weir-project/weir/internal/storage/recordbatch"
	"github.com/weir-project/weir/test/harness"
)

// python is the interpreter that sees the Debian client packages.
const python = "/usr/bin/python3"

const (
	streamRecords = 3000
	// killFrom is where the kill lands: the broker's answer to the first
	// batch stored at or past this offset is held back, and so is every
	// answer after it, until the broker is killed.
	killFrom = streamRecords / 3
)

// TestFranzGoStreamThroughKill streams acks=all records through franz-go's
// idempotent producer while the broker is killed -9 and restarted: the
// producer retries what was in flight, and every record is stored exactly
// once, in order.
func TestFranzGoStreamThroughKill(t *testing.T) {
	gate := newAckGate(t)
	b := gate.startBroker(t)
	const topic = "franz-stream"
	newRawClient(t, b).createTopic(topic, nil)

	cl, err := kgo.NewClient(
		kgo.SeedBrokers(gate.proxy.Addr()),
		kgo.DefaultProduceTopic(topic),
		kgo.RecordPartitioner(kgo.ManualPartitioner()),
		kgo.RequiredAcks(kgo.AllISRAcks()),
		kgo.ProducerLinger(2*time.Millisecond),
		kgo.RecordDeliveryTimeout(3*time.Minute),
		kgo.RetryTimeout(3*time.Minute),
	)
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()

	acks := harness.NewAckLog()
	ctx := harness.Ctx(t, 4*time.Minute)
	done := make(chan struct{})
	go func() {
		defer close(done)
		pace := time.NewTicker(time.Millisecond)
		defer pace.Stop()
		for i := range streamRecords {
			<-pace.C
			cl.Produce(ctx, &kgo.Record{Value: []byte(strconv.Itoa(i))}, acks.Record)
		}
	}()
	killMidStream(t, b, gate, topic, acks)
	<-done
	if err := cl.Flush(ctx); err != nil {
		t.Fatalf("flush: %v", err)
	}
	acks.RequireNoFailures(t, "the producer")
	checkAckedAtTheirIndex(t, acks)
	checkExactlyOnceInOrder(t, b, topic, streamRecords)
}

// TestLibrdkafkaStreamThroughKill does the same with librdkafka's
// idempotent producer (confluent-kafka-python, enable.idempotence=true).
func TestLibrdkafkaStreamThroughKill(t *testing.T) {
	if err := exec.Command(python, "-c", "import confluent_kafka").Run(); err != nil {
		t.Skipf("%s cannot import confluent_kafka (scripts/install-test-deps.sh installs python3-confluent-kafka): %v", python, err)
	}
	gate := newAckGate(t)
	b := gate.startBroker(t)
	const topic = "rdkafka-stream"
	newRawClient(t, b).createTopic(topic, nil)

	prod := harness.StartPyProducer(t, python, "testdata/idem_producer.py", gate.proxy.Addr(), topic, strconv.Itoa(streamRecords), "1")
	killMidStream(t, b, gate, topic, prod.AckLog)
	prod.Wait(4 * time.Minute)
	checkAckedAtTheirIndex(t, prod.AckLog)
	checkExactlyOnceInOrder(t, b, topic, streamRecords)
}

// checkAckedAtTheirIndex wants every value "0".."streamRecords-1"
// acknowledged, each at the offset it names: one producer, one
// partition, exactly once and in order.
func checkAckedAtTheirIndex(t *testing.T, acks *harness.AckLog) {
	t.Helper()
	offsets := acks.Offsets()
	if len(offsets) != streamRecords {
		t.Fatalf("%d of %d records acknowledged", len(offsets), streamRecords)
	}
	for v, off := range offsets {
		if off >= 0 && v != strconv.FormatInt(off, 10) { // -1: acknowledged without its offset
			t.Fatalf("value %s acknowledged at offset %d", v, off)
		}
	}
}

// killMidStream waits until the gate holds back the broker's answer to a
// stored batch, kills the broker -9 with that answer undelivered, drops
// the connections (and what they hold), and restarts the broker. The
// producer must re-send the batches it was not answered for and the
// broker must recognise the stored ones as duplicates: without that
// check they are stored twice.
func killMidStream(t *testing.T, b *harness.Broker, gate *ackGate, topic string, acks *harness.AckLog) {
	t.Helper()
	harness.WaitFor(t, 2*time.Minute, "the broker's answer to a stored batch to be held back", func() bool {
		held, err := gate.state()
		if err != nil {
			t.Fatal(err)
		}
		return len(held) > 0
	})
	b.Kill()
	held := gate.disarm()
	gate.proxy.Cut(harness.Refuse)
	atKill, stored := int64(acks.Count()), logEnd(t, b.Dir, topic)
	// Every acknowledgement the producer got came before the first held
	// answer, so it is for an offset below held[0]; that batch is on disk.
	if atKill > held[0] || stored <= held[0] {
		t.Fatalf("at the kill %d records acknowledged and %d stored, yet the answer for offset %d was held back", atKill, stored, held[0])
	}
	t.Logf("at the kill: %d records acknowledged, %d stored; answers held back for the batches at offsets %v", atKill, stored, held)
	gate.proxy.Heal()
	b.Restart()
}

// ackGate holds back the broker's produce answers from a chosen point
// until the kill. A proxy between the producer and the broker (which
// advertises the proxy) shows it each response frame; the first answer to
// a batch stored at or past killFrom puts the response direction on hold,
// that frame included, so from there on the producer hears nothing. Each
// produce answer held is a batch the broker stored and the producer was
// never told about: the kill lands with such batches by construction, not
// by timing.
type ackGate struct {
	proxy *harness.Proxy

	mu    sync.Mutex
	armed bool
	held  []int64 // base offsets of stored batches whose answers are held
	err   error   // a produce response the gate could not decode
}

func newAckGate(t *testing.T) *ackGate {
	g := &ackGate{proxy: harness.StartKafkaProxy(t, ""), armed: true}
	g.proxy.OnResponse(g.onResponse)
	return g
}

// startBroker starts a broker that advertises the proxy, and points the
// proxy at it.
func (g *ackGate) startBroker(t *testing.T) *harness.Broker {
	b := harness.StartBroker(t, "advertised.listeners=PLAINTEXT://"+g.proxy.Addr())
	g.proxy.SetTarget(b.Addr)
	return b
}

func (g *ackGate) onResponse(f harness.KafkaFrame) {
	if f.Key != kmsg.Produce {
		return // once holding, the proxy holds these too
	}
	resp, err := f.Response()
	g.mu.Lock()
	defer g.mu.Unlock()
	if !g.armed {
		return
	}
	if err != nil {
		g.err = cmp.Or(g.err, err)
		return
	}
	for _, rt := range resp.(*kmsg.ProduceResponse).Topics {
		for _, rp := range rt.Partitions {
			if rp.ErrorCode != 0 || (len(g.held) == 0 && rp.BaseOffset < killFrom) {
				continue // not stored, or before the point: passes
			}
			if len(g.held) == 0 {
				g.proxy.Hold(harness.FromTarget) // this frame and all after it
			}
			g.held = append(g.held, rp.BaseOffset)
		}
	}
}

// state is what the gate holds so far.
func (g *ackGate) state() ([]int64, error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	return slices.Clone(g.held), g.err
}

// disarm stops the gate (the restarted broker's answers pass) and returns
// what it held.
func (g *ackGate) disarm() []int64 {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.armed = false
	return slices.Clone(g.held)
}

// logEnd reads the partition's log end offset straight from the broker's
// segment files (page cache, as the broker wrote them).
func logEnd(t *testing.T, dir, topic string) int64 {
	t.Helper()
	segs, _ := filepath.Glob(filepath.Join(dir, topic+"-0", "*.log"))
	end := int64(0)
	for _, s := range segs {
		data, err := os.ReadFile(s)
		if err != nil {
			continue // rolled or removed under us
		}
		// A batch being written may be cut short: stop at it.
		for pos := 0; pos < len(data); {
			h, err := recordbatch.ParseHeader(data[pos:])
			if err != nil || h.Size() > int64(len(data)-pos) {
				break
			}
			end = max(end, h.LastOffset()+1)
			pos += int(h.Size())
		}
	}
	return end
}

// checkExactlyOnceInOrder reads the partition and wants the values
// "0".."n-1", each once, in order.
func checkExactlyOnceInOrder(t *testing.T, b *harness.Broker, topic string, n int) {
	t.Helper()
	got := values(t, b, topic)
	seen := make(map[string]int, len(got))
	for i, v := range got {
		if prev, dup := seen[v]; dup {
			t.Fatalf("value %s stored twice, at offsets %d and %d", v, prev, i)
		}
		seen[v] = i
		if v != strconv.Itoa(i) {
			t.Fatalf("offset %d holds %s, want %d (order broken or a record lost)", i, v, i)
		}
	}
	if len(got) != n {
		t.Fatalf("%d records stored, want %d", len(got), n)
	}
}
