package cluster

import (
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/weir-project/weir/test/harness"
)

// TestBrokerOnlyNode: a broker-only node (process.roles=broker) joins a
// cluster of three voters without voting: the controller adds it to the
// metadata quorum as a non-voter, it gets replicas of new topics, serves
// clients, and after a kill -9 and restart catches up and rejoins the ISR
// with a log identical to its peers'.
func TestBrokerOnlyNode(t *testing.T) {
	c := harness.StartCluster(t, 3)
	b4 := c.AddBrokerOnly()
	const topic = "four"
	createTopic(t, c, topic, 1, 4, minISR2())
	if st, _ := c.Partition(topic, 0); !slices.Contains(st.Replicas, 4) {
		t.Fatalf("replicas %v of an RF 4 topic lack the broker-only node", st.Replicas)
	}
	acks := harness.StartAckStream(t, c, harness.StreamConfig{Topic: topic, Records: 1000, Pace: time.Millisecond})
	acks.WaitAcks(t, 300, 2*time.Minute, "acks before the kill")
	b4.Kill()
	<-acks.Done()
	acks.Finish()
	acks.RequireNoFailures(t, "the producer")
	b4.Restart()
	c.WaitFullISR(topic, 0, 2*time.Minute)
	waitSameLogs(t, c, topic, 0)
	// A client bootstrapped from the broker-only node alone reads it all.
	got := harness.PartitionValues(t, []string{b4.Addr}, topic, 0)
	for i := range 1000 {
		if got[int64(i)] != strconv.Itoa(i) {
			t.Fatalf("offset %d read through the broker-only node: %q", i, got[int64(i)])
		}
	}
}
