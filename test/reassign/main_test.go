// Package reassign proves partition reassignment end to end on real
// clusters of weir processes: brokers added and drained under an
// idempotent acks=all stream, moves that survive kill -9 of the leader, of
// an adding replica and of the active controller, the reassignment
// throttle, the CLI, and Kafka's error codes for bad requests.
package reassign

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/weir-project/weir/test/harness"
)

func TestMain(m *testing.M) { harness.Main(m) }

// opTimeout bounds one client operation on a slow, shared machine.
const opTimeout = 60 * time.Second

// moveTimeout bounds a whole reassignment.
const moveTimeout = 3 * time.Minute

// weir runs the CLI against b and returns stdout and the error (with
// stderr) if it failed.
func weir(t *testing.T, b *harness.Broker, timeout time.Duration, args ...string) (string, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	args = append(args, "--bootstrap-server", b.Addr)
	cmd := exec.CommandContext(ctx, harness.Bin(), args...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		return stdout.String(), fmt.Errorf("weir %s: %v: %s", strings.Join(args, " "), err, strings.TrimSpace(stderr.String()))
	}
	return stdout.String(), nil
}

// mustWeir is weir failing the test on an error.
func mustWeir(t *testing.T, b *harness.Broker, timeout time.Duration, args ...string) string {
	t.Helper()
	out, err := weir(t, b, timeout, args...)
	if err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	return out
}

// move is one partition's target in a reassignment file.
type move struct {
	Topic     string  `json:"topic"`
	Partition int32   `json:"partition"`
	Replicas  []int32 `json:"replicas"`
}

// planFile writes moves as a reassignment JSON file and returns its path.
func planFile(t *testing.T, moves []move) string {
	t.Helper()
	b, err := json.Marshal(map[string]any{"version": 1, "partitions": moves})
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "plan.json")
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// proposedPlan parses the one-line JSON after the line starting with
// header in a command's output.
func proposedPlan(t *testing.T, out, header string) []move {
	t.Helper()
	lines := strings.Split(out, "\n")
	for i, l := range lines {
		if strings.HasPrefix(l, header) && i+1 < len(lines) {
			var f struct {
				Partitions []move `json:"partitions"`
			}
			next := lines[i+1]
			if next == "" && i+2 < len(lines) {
				next = lines[i+2]
			}
			if err := json.Unmarshal([]byte(next), &f); err != nil {
				t.Fatalf("plan after %q: %v\n%s", header, err, out)
			}
			return f.Partitions
		}
	}
	t.Fatalf("no %q in the output:\n%s", header, out)
	return nil
}

func minISR2() map[string]*string {
	v := "2"
	return map[string]*string{"min.insync.replicas": &v}
}

// waitPlaced waits until every running node sees topic-p with exactly the
// replicas want, all in sync, and no reassignment in progress.
func waitPlaced(t *testing.T, c *harness.Cluster, topic string, p int32, want []int32, timeout time.Duration) harness.PartitionState {
	t.Helper()
	return c.WaitPartition(topic, p, timeout, fmt.Sprintf("replicas %v all in sync", want), func(st harness.PartitionState) bool {
		return slices.Equal(st.Replicas, want) && len(st.ISR) == len(want) && st.Leader >= 0
	})
}

// inProgress lists the reassignments in progress as the broker at the
// other end of conn sees them.
func inProgress(t *testing.T, conn *harness.RawConn) []kmsg.ListPartitionReassignmentsResponseTopicPartition {
	t.Helper()
	resp, _ := conn.Request(kmsg.NewPtrListPartitionReassignmentsRequest())
	var out []kmsg.ListPartitionReassignmentsResponseTopicPartition
	for _, tp := range resp.(*kmsg.ListPartitionReassignmentsResponse).Topics {
		out = append(out, tp.Partitions...)
	}
	return out
}

// fill writes n records of size bytes to each given partition, acks=1,
// in batches of about 16 KiB.
func fill(t *testing.T, c *harness.Cluster, topic string, partitions []int32, n, size int) {
	t.Helper()
	cl := c.Client(kgo.DefaultProduceTopic(topic), kgo.RecordPartitioner(kgo.ManualPartitioner()),
		kgo.RequiredAcks(kgo.LeaderAck()), kgo.DisableIdempotentWrite(), kgo.ProducerBatchMaxBytes(16<<10),
		kgo.ProducerBatchCompression(kgo.NoCompression()))
	val := bytes.Repeat([]byte("x"), size)
	ctx := harness.Ctx(t, 3*time.Minute)
	for _, p := range partitions {
		for range n {
			cl.Produce(ctx, &kgo.Record{Partition: p, Value: val}, func(_ *kgo.Record, err error) {
				if err != nil {
					t.Errorf("fill %s-%d: %v", topic, p, err)
				}
			})
		}
	}
	if err := cl.Flush(ctx); err != nil {
		t.Fatal(err)
	}
}

// logBytes is the size of the .log segments of topic's partitions in dir.
func logBytes(dir, topic string, partitions []int32) int64 {
	var n int64
	for _, p := range partitions {
		segs, _ := filepath.Glob(filepath.Join(dir, topic+"-"+strconv.Itoa(int(p)), "*.log"))
		for _, s := range segs {
			if fi, err := os.Stat(s); err == nil {
				n += fi.Size()
			}
		}
	}
	return n
}

// partitionDirGone waits until b's log dir holds no directory for tp.
func partitionDirGone(t *testing.T, b *harness.Broker, topic string, p int32) {
	t.Helper()
	dir := filepath.Join(b.Dir, topic+"-"+strconv.Itoa(int(p)))
	harness.WaitFor(t, opTimeout, "the removed replica's log "+dir+" deleted", func() bool {
		_, err := os.Stat(dir)
		return os.IsNotExist(err)
	})
}
