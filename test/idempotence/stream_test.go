package idempotence

import (
	"bufio"
	"fmt"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/weir-project/weir/test/harness"
)

// python is the interpreter that sees the Debian client packages.
const python = "/usr/bin/python3"

const (
	streamRecords = 3000
	killAfter     = streamRecords / 3 // acknowledged records before the SIGKILL
)

// TestFranzGoStreamThroughKill streams acks=all records through franz-go's
// idempotent producer while the broker is killed -9 and restarted: the
// producer retries what was in flight, and every record is stored exactly
// once, in order.
func TestFranzGoStreamThroughKill(t *testing.T) {
	proxy := newResponseDropper(t)
	b := harness.StartBroker(t, "advertised.listeners=PLAINTEXT://"+proxy.Addr())
	proxy.setBackend(b.Addr)
	const topic = "franz-stream"
	newRawClient(t, b).createTopic(topic, nil)

	cl, err := kgo.NewClient(
		kgo.SeedBrokers(proxy.Addr()),
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

	var acked atomic.Int64
	var mu sync.Mutex
	var failures []string
	ctx := harness.Ctx(t, 4*time.Minute)
	done := make(chan struct{})
	go func() {
		defer close(done)
		pace := time.NewTicker(time.Millisecond)
		defer pace.Stop()
		for i := range streamRecords {
			<-pace.C
			cl.Produce(ctx, &kgo.Record{Value: []byte(strconv.Itoa(i))}, func(r *kgo.Record, err error) {
				if err != nil {
					mu.Lock()
					failures = append(failures, fmt.Sprintf("%s: %v", r.Value, err))
					mu.Unlock()
					return
				}
				acked.Add(1)
			})
		}
	}()
	atKill := killMidStream(t, b, proxy, topic, &acked)
	<-done
	if err := cl.Flush(ctx); err != nil {
		t.Fatalf("flush: %v", err)
	}
	if len(failures) > 0 {
		t.Fatalf("%d records failed, first: %s", len(failures), failures[0])
	}
	if atKill >= streamRecords {
		t.Fatalf("the stream had ended (%d acknowledged) before the kill", atKill)
	}
	checkExactlyOnceInOrder(t, b, topic, streamRecords)
}

// TestLibrdkafkaStreamThroughKill does the same with librdkafka's
// idempotent producer (confluent-kafka-python, enable.idempotence=true).
func TestLibrdkafkaStreamThroughKill(t *testing.T) {
	if err := exec.Command(python, "-c", "import confluent_kafka").Run(); err != nil {
		t.Skipf("%s cannot import confluent_kafka (scripts/install-test-deps.sh installs python3-confluent-kafka): %v", python, err)
	}
	proxy := newResponseDropper(t)
	b := harness.StartBroker(t, "advertised.listeners=PLAINTEXT://"+proxy.Addr())
	proxy.setBackend(b.Addr)
	const topic = "rdkafka-stream"
	newRawClient(t, b).createTopic(topic, nil)

	cmd := exec.Command(python, "testdata/idem_producer.py", proxy.Addr(), topic, strconv.Itoa(streamRecords), "1")
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var stderr strings.Builder
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	var acked atomic.Int64
	var mu sync.Mutex
	var problems []string
	go func() {
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			f := strings.Fields(sc.Text())
			switch {
			case len(f) == 3 && f[0] == "ack":
				// One producer, one partition, exactly once and in order:
				// record i lands at offset i.
				if f[1] != f[2] {
					mu.Lock()
					problems = append(problems, "value "+f[2]+" acknowledged at offset "+f[1])
					mu.Unlock()
				}
				acked.Add(1)
			default:
				mu.Lock()
				problems = append(problems, sc.Text())
				mu.Unlock()
			}
		}
		exited <- cmd.Wait()
	}()
	// Process.Kill is a no-op once the process was waited for.
	t.Cleanup(func() { cmd.Process.Kill() })

	killMidStream(t, b, proxy, topic, &acked)
	select {
	case err := <-exited:
		if err != nil {
			t.Fatalf("producer failed: %v\n%s", err, stderr.String())
		}
	case <-time.After(4 * time.Minute):
		cmd.Process.Kill()
		t.Fatalf("producer did not finish; %d acknowledged\n%s", acked.Load(), stderr.String())
	}
	mu.Lock()
	defer mu.Unlock()
	if len(problems) > 0 {
		t.Fatalf("%d problems, first: %s", len(problems), problems[0])
	}
	if n := acked.Load(); n != streamRecords {
		t.Fatalf("%d of %d records acknowledged", n, streamRecords)
	}
	checkExactlyOnceInOrder(t, b, topic, streamRecords)
}

// killMidStream waits until killAfter records are acknowledged, then
// swallows the broker's responses until it has stored records the producer
// was not told about, kills it -9 with those in flight, and restarts it.
// The producer must re-send them and the broker must recognise each as a
// duplicate. It returns how many records were acknowledged at the kill.
func killMidStream(t *testing.T, b *harness.Broker, proxy *responseDropper, topic string, acked *atomic.Int64) int64 {
	t.Helper()
	harness.WaitFor(t, 2*time.Minute, "records acknowledged before the kill", func() bool { return acked.Load() >= killAfter })
	proxy.drop.Store(true)
	harness.WaitFor(t, time.Minute, "the broker to store records whose acknowledgements are lost", func() bool {
		return logEnd(t, b.Dir, topic) >= acked.Load()+5
	})
	b.Kill()
	proxy.cut()
	atKill, stored := acked.Load(), logEnd(t, b.Dir, topic)
	if atKill >= streamRecords || stored <= atKill {
		t.Fatalf("at the kill %d records were acknowledged and %d stored: nothing for idempotence to do", atKill, stored)
	}
	t.Logf("at the kill: %d records acknowledged, %d stored (their acknowledgements lost)", atKill, stored)
	proxy.drop.Store(false)
	b.Restart()
	return atKill
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
