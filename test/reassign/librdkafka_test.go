package reassign

import (
	"bufio"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
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
	waitBrokerLive(t, c, 4)
	const topic = "move-rdkafka"
	createAssigned(t, c, topic, [][]int32{{1, 2, 3}}, minISR2())

	stopFile := filepath.Join(t.TempDir(), "stop")
	cmd := exec.Command(python, "../idempotence/testdata/idem_producer.py",
		strings.Join(c.Bootstrap(), ","), topic, "0", "1", stopFile)
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var stderr strings.Builder
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill() })
	// The acknowledgements go into a stream (without a franz-go client)
	// so that its waits and its exactly-once check serve here too.
	s := &stream{t: t, offset: map[string]int64{}}
	sent := make(chan int, 1)
	exited := make(chan error, 1)
	go func() {
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			f := strings.Fields(sc.Text())
			s.mu.Lock()
			switch {
			case len(f) == 3 && f[0] == "ack":
				if off, err := strconv.ParseInt(f[1], 10, 64); err == nil {
					s.offset[f[2]] = off
					s.ackAt = append(s.ackAt, time.Now())
				} else {
					s.failed = append(s.failed, sc.Text())
				}
			case len(f) == 2 && f[0] == "sent":
				n, _ := strconv.Atoi(f[1])
				sent <- n
			default:
				s.failed = append(s.failed, sc.Text())
			}
			s.mu.Unlock()
		}
		exited <- cmd.Wait()
	}()

	s.waitMore(300, opTimeout, "before the move")
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
	s.waitMore(300, opTimeout, "after the move")

	if err := os.WriteFile(stopFile, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-exited:
		if err != nil {
			t.Fatalf("producer failed: %v\n%s", err, stderr.String())
		}
	case <-time.After(4 * time.Minute):
		t.Fatalf("producer did not finish; %d acknowledged\n%s", s.acked(), stderr.String())
	}
	s.mu.Lock()
	if len(s.failed) > 0 {
		s.mu.Unlock()
		t.Fatalf("%d producer problems, first: %s", len(s.failed), s.failed[0])
	}
	s.mu.Unlock()
	n := <-sent
	if got := s.acked(); got != n {
		t.Fatalf("%d of %d records acknowledged", got, n)
	}
	if got := s.checkExactlyOnce([]string{c.Node(2).Addr, c.Node(3).Addr, c.Node(4).Addr}, topic); got != n {
		t.Fatalf("%d records read back, %d sent", got, n)
	}
	t.Logf("%d records through the move, each read back once in order", n)
}
