package cluster

import (
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/weir-project/weir/test/harness"
)

const streamRecords = 4000

// survivors are the client addresses of every node but the given ones.
func survivors(c *harness.Cluster, except ...*harness.Broker) []string {
	var out []string
	for _, b := range c.Nodes {
		if !slices.Contains(except, b) {
			out = append(out, b.Addr)
		}
	}
	return out
}

// waitSameLogs waits until the replicas on every node hold the same
// batches (the followers fetch the last ones a moment after the leader
// wrote them), then returns them.
func waitSameLogs(t *testing.T, c *harness.Cluster, topic string, partition int32) []harness.StoredBatch {
	t.Helper()
	var ref []harness.StoredBatch
	harness.WaitFor(t, 2*time.Minute, "every replica's log to hold the same batches", func() bool {
		ref = harness.StoredBatches(t, c.Nodes[0].Dir, topic, partition)
		for _, b := range c.Nodes[1:] {
			if !slices.Equal(harness.StoredBatches(t, b.Dir, topic, partition), ref) {
				return false
			}
		}
		return true
	})
	return ref
}

// TestKillLeaderDuringAcksAllStream: RF 3, min.insync.replicas 2, an
// idempotent acks=all stream through franz-go; the partition's leader is
// killed -9 mid-stream. Produce resumes on the new leader within seconds,
// and every acknowledged record is read back exactly once, in order;
// once the old leader is back, all three logs hold identical batches.
func TestKillLeaderDuringAcksAllStream(t *testing.T) {
	c := harness.StartCluster(t, 3)
	const topic = "kill-leader"
	createTopic(t, c, topic, 1, 3, minISR2())
	acks := harness.StartAckStream(t, c, harness.StreamConfig{Topic: topic, Records: streamRecords, Pace: time.Millisecond})

	acks.WaitAcks(t, streamRecords/4, 2*time.Minute, "acks before the kill")
	leader := c.Leader(topic, 0, opTimeout)
	atKill := acks.Count()
	killed := time.Now()
	leader.Kill()
	acks.WaitAcks(t, atKill+1, 2*time.Minute, "the first acknowledgement after the leader's kill")
	t.Logf("leader %s killed with %d records acknowledged; first acknowledgement after it %v later",
		leader.Addr, atKill, time.Since(killed).Round(10*time.Millisecond))
	<-acks.Done()
	acks.Finish()
	acks.RequireNoFailures(t, "the producer")
	if n := harness.CheckExactlyOnce(t, survivors(c, leader), topic, 0, 0, acks.AckLog); n != streamRecords {
		t.Fatalf("%d records stored, want %d", n, streamRecords)
	}

	leader.Restart()
	c.WaitFullISR(topic, 0, 2*time.Minute)
	batches := waitSameLogs(t, c, topic, 0)
	if last := batches[len(batches)-1].LastOffset; last != streamRecords-1 {
		t.Fatalf("the logs end at offset %d, want %d", last, streamRecords-1)
	}
}

// TestKillLeaderDuringLibrdkafkaStream does the same with librdkafka's
// idempotent producer (confluent-kafka-python, enable.idempotence=true).
func TestKillLeaderDuringLibrdkafkaStream(t *testing.T) {
	needConfluentKafka(t)
	c := harness.StartCluster(t, 3)
	const topic = "kill-leader-rdkafka"
	createTopic(t, c, topic, 1, 3, minISR2())
	acks := harness.StartPyProducer(t, python, "../idempotence/testdata/idem_producer.py",
		strings.Join(c.Bootstrap(), ","), topic, strconv.Itoa(streamRecords), "1")

	acks.WaitAcks(t, streamRecords/4, 2*time.Minute, "acks before the kill")
	leader := c.Leader(topic, 0, opTimeout)
	atKill := acks.Count()
	killed := time.Now()
	leader.Kill()
	acks.WaitAcks(t, atKill+1, 2*time.Minute, "the first acknowledgement after the leader's kill")
	t.Logf("leader %s killed with %d records acknowledged; first acknowledgement after it %v later",
		leader.Addr, atKill, time.Since(killed).Round(10*time.Millisecond))
	acks.Wait(4 * time.Minute)
	if n := acks.Count(); n != streamRecords {
		t.Fatalf("%d of %d records acknowledged", n, streamRecords)
	}
	if n := harness.CheckExactlyOnce(t, survivors(c, leader), topic, 0, 0, acks.AckLog); n != streamRecords {
		t.Fatalf("%d records stored, want %d", n, streamRecords)
	}
}

// needConfluentKafka skips the test unless the Python interpreter can
// import confluent-kafka (librdkafka's Python client).
func needConfluentKafka(t *testing.T) {
	t.Helper()
	if err := exec.Command(python, "-c", "import confluent_kafka").Run(); err != nil {
		t.Skipf("%s cannot import confluent_kafka (scripts/install-test-deps.sh installs python3-confluent-kafka): %v", python, err)
	}
}
