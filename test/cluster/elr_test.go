package cluster

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/weir-project/weir/internal/storage/checkpoint"
	"github.com/weir-project/weir/test/harness"
)

// TestELRLastISRMemberLosesPower: eligible leader replicas (KIP-966).
//
// Replicas {1, 2}, min.insync.replicas 2, every record acknowledged by
// both. The follower, node 2, is killed -9: the ISR falls to the leader
// alone, below its minimum, so the high watermark stops and node 2 holds
// every committed record (it is an eligible leader replica). Then the
// leader, node 1, the last ISR member, loses power: the tail it had not
// flushed is gone, and the machine restarts.
//
// Before ELR, node 1 led again as the ISR's only member, and node 2,
// back, truncated its log to node 1's: acknowledged records were lost.
// Now node 1 registers as having lost unflushed writes, node 2 takes its
// place, and every acknowledged record survives, whichever node comes
// back first.
func TestELRLastISRMemberLosesPower(t *testing.T) {
	for _, order := range []string{"leader back first", "follower back first"} {
		t.Run(order, func(t *testing.T) {
			c := harness.StartCluster(t, 3, "auto.leader.rebalance.enable=false")
			const topic, n, lost = "elr", 60, 20
			createAssignedTopic(t, c, topic, [][]int32{{1, 2}}, map[string]*string{"min.insync.replicas": kmsg.StringPtr("2")})
			values := make([]string, n)
			for i := range values {
				values[i] = fmt.Sprintf("v%03d", i)
			}
			acked := produceSyncEach(t, acksAllProducer(c), topic, values...)
			waitLogsAgreeOn(t, c, topic, 0, 1, 2)

			leader, follower := c.Node(1), c.Node(2)
			follower.Kill()
			c.WaitPartition(topic, 0, opTimeout, "node 1 alone in the ISR", func(st harness.PartitionState) bool {
				return st.Leader == 1 && slices.Equal(st.ISR, []int32{1})
			})
			leader.Kill()
			from := losePower(t, leader.Dir, topic, 0, lost)
			t.Logf("node 1 lost offsets %d..%d in the power loss", from, n-1)
			since := logEnd(leader)

			if order == "leader back first" {
				leader.Restart()
				// It must not lead: node 2 takes its place in the ISR,
				// and the partition waits for node 2.
				c.WaitPartition(topic, 0, 2*time.Minute, "node 2 in node 1's place", func(st harness.PartitionState) bool {
					return st.Leader == -1 && slices.Equal(st.ISR, []int32{2})
				})
				follower.Restart()
			} else {
				follower.Restart()
				// Node 1's session expires and node 2, eligible, leads.
				c.WaitPartition(topic, 0, 2*time.Minute, "node 2 leading", func(st harness.PartitionState) bool {
					return st.Leader == 2 && slices.Equal(st.ISR, []int32{2})
				})
				leader.Restart()
			}
			c.WaitPartition(topic, 0, 2*time.Minute, "node 2 leading both", func(st harness.PartitionState) bool {
				return st.Leader == 2 && slices.Equal(st.ISR, []int32{1, 2})
			})
			waitLogsAgreeOn(t, c, topic, 0, 1, 2)
			checkAcked(t, readCommitted(t, c, topic, 0, n), acked, "acks=all")
			if l := logLines(leader, since, "writes not yet flushed may be lost"); len(l) == 0 {
				t.Fatalf("node 1 did not say it may have lost writes:\n%s", leader.Output())
			}
		})
	}
}

// losePower does to a stopped broker's dir what a power loss would have:
// the last n batches of the partition's newest segment are lost, its
// recovery point is no further than what is left, and the machine has
// restarted since the dir was opened (its boot record is gone). It
// returns the first offset lost.
func losePower(t *testing.T, dir, topic string, partition int32, n int) int64 {
	t.Helper()
	from := loseUnflushedTail(t, dir, topic, partition, n)
	path := filepath.Join(dir, "recovery-point-offset-checkpoint")
	rps, err := checkpoint.ReadOffsets(path)
	if err != nil {
		t.Fatal(err)
	}
	tp := checkpoint.TopicPartition{Topic: topic, Partition: partition}
	rps[tp] = min(rps[tp], from)
	if err := checkpoint.WriteOffsets(path, rps); err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(filepath.Join(dir, ".weir_boot")); err != nil {
		t.Fatal(err)
	}
	return from
}

// TestStaticMinISRChange: the cluster-wide default of min.insync.replicas
// is the active controller's static config, as in Kafka, and follows it
// when it changes. The controllers once recorded it only at the first
// start, and a leader honours the larger of its own and the recorded one:
// after every node was restarted with min.insync.replicas lowered from 2
// to 1, a partition left with one in-sync replica still refused acks=all
// writes, and its high watermark stayed where it was.
func TestStaticMinISRChange(t *testing.T) {
	c := harness.StartCluster(t, 3, "auto.leader.rebalance.enable=false", "min.insync.replicas=2")
	guardNodes(t, c)
	const topic = "static-min-isr"
	createAssignedTopic(t, c, topic, [][]int32{{1, 2}}, nil)
	acked := produceSyncEach(t, acksAllProducer(c), topic, "a", "b")

	// A rolling restart with the lower minimum.
	for _, b := range c.Nodes {
		for i, o := range b.Overrides {
			if o == "min.insync.replicas=2" {
				b.Overrides[i] = "min.insync.replicas=1"
			}
		}
		b.Stop()
		b.Restart()
	}
	c.WaitPartition(topic, 0, opTimeout, "a full ISR again", func(st harness.PartitionState) bool {
		return st.Leader >= 1 && len(st.ISR) == 2
	})
	leader := c.Leader(topic, 0, opTimeout)
	other := c.Node(1)
	if leader == other {
		other = c.Node(2)
	}
	other.Kill()
	c.WaitPartition(topic, 0, opTimeout, "one replica in sync", func(st harness.PartitionState) bool {
		return len(st.ISR) == 1
	})
	// Committed with one replica in sync: acknowledged, and readable.
	for v, off := range produceSyncEach(t, acksAllProducer(c), topic, "c", "d") {
		acked[v] = off
	}
	checkAcked(t, readCommitted(t, c, topic, 0, 4), acked, "acks=all")
}
