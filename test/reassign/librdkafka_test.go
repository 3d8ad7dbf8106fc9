package reassign

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/weir-project/weir/test/harness"
)

const python = "/usr/bin/python3"

// TestReassignUnderLibrdkafkaStream: the partition a librdkafka idempotent
// acks=all producer (confluent-kafka-python) writes to moves onto a new
// broker in place of its leader. The producer follows the leader and
// finishes with every record delivered; each is read back once, in order,
// where its acknowledgement said. The producer stops only when told (a
// stop file), after acknowledgements made following the move, so the
// move always happens under the stream.
func TestReassignUnderLibrdkafkaStream(t *testing.T) {
	if err := exec.Command(python, "-c", "import confluent_kafka").Run(); err != nil {
		t.Skipf("%s cannot import confluent_kafka (scripts/install-test-deps.sh installs python3-confluent-kafka): %v", python, err)
	}
	c := harness.StartCluster(t, 3)
	c.AddBrokerOnly()
	c.WaitBrokerLive(4, opTimeout)
	const topic = "move-rdkafka"
	c.CreateAssignedTopic(topic, [][]int32{{1, 2, 3}}, minISR2(), opTimeout)

	stopFile := filepath.Join(t.TempDir(), "stop")
	// The acknowledgements go into the harness's log, so that its waits
	// and its exactly-once check serve here too.
	acks := harness.StartPyProducer(t, python, "../idempotence/testdata/idem_producer.py",
		strings.Join(c.Bootstrap(), ","), topic, "0", "1", stopFile)

	acks.WaitMore(t, 300, opTimeout, "before the move")
	moves := []move{{topic, 0, []int32{4, 2, 3}}}
	plan := planFile(t, moves)
	mustWeir(t, c.Node(2), opTimeout, "topic", "reassign", "--execute", "--reassignment-json-file", plan)
	harness.WaitFor(t, moveTimeout, "--verify to report the move completed", func() bool {
		return strings.Contains(mustWeir(t, c.Node(3), opTimeout, "topic", "reassign", "--verify", "--reassignment-json-file", plan), "is completed")
	})
	if st := waitPlaced(t, c, topic, 0, moves[0].Replicas, opTimeout); st.Leader == 1 {
		t.Fatalf("%s-0 still led by the removed replica 1", topic)
	}
	partitionDirGone(t, c.Node(1), topic, 0)
	acks.WaitMore(t, 300, opTimeout, "after the move")

	if err := os.WriteFile(stopFile, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	acks.Wait(4 * time.Minute)
	n := acks.Sent()
	if got := acks.Count(); got != n {
		t.Fatalf("%d of %d records acknowledged", got, n)
	}
	if got := harness.CheckExactlyOnce(t, []string{c.Node(2).Addr, c.Node(3).Addr, c.Node(4).Addr}, topic, 0, 0, acks.AckLog); got != n {
		t.Fatalf("%d records read back, %d sent", got, n)
	}
	t.Logf("%d records through the move, each read back once in order", n)
}
