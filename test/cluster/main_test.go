// Package cluster proves replication end to end on real clusters of weir
// processes: failover when a leader is killed -9, followers that pause and
// come back, quorums that are lost and regained, the controller's loss,
// controlled shutdown, and consumer groups moving with their coordinator,
// checking every time that each acknowledged record is read back exactly
// once, in order, and that the replicas' logs agree batch for batch.
package cluster

import (
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"

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
