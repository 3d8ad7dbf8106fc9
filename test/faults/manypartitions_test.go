package faults

import (
	"fmt"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/weir-project/weir/internal/storage/recordbatch"
	"github.com/weir-project/weir/test/harness"
)

// TestKillRestartManyPartitions: a broker holding 2,000 partitions, each
// with a record not yet flushed, comes back after SIGKILL serving every
// one of them (Metadata names it leader, a produce is accepted) with its
// record at offset 0, the new one after it. Start-up once took longer
// than a minute at 10,000 partitions (replicas opened one at a time, an
// fsync per partition on becoming leader, the dead predecessor's session
// awaited before re-registering).
func TestKillRestartManyPartitions(t *testing.T) {
	const topics, perTopic = 2, 1000
	b := harness.StartBroker(t, "max.broker.partitions=2500")
	b.Watch(t, 2<<30, 3*topics*perTopic)
	c := b.Dial()
	for i := range topics {
		req := kmsg.NewPtrCreateTopicsRequest()
		req.SetVersion(4)
		req.TimeoutMillis = int32(opTimeout.Milliseconds())
		rt := kmsg.NewCreateTopicsRequestTopic()
		rt.Topic, rt.NumPartitions, rt.ReplicationFactor = manyTopic(i), perTopic, 1
		req.Topics = append(req.Topics, rt)
		resp, _ := c.Request(req)
		if st := resp.(*kmsg.CreateTopicsResponse).Topics[0]; st.ErrorCode != 0 {
			t.Fatalf("create %s: %v", rt.Topic, kerr.ErrorForCode(st.ErrorCode))
		}
	}
	if bad := produceEveryPartition(t, c, topics, perTopic, "before"); bad != 0 {
		t.Fatalf("%d partitions refused the first produce", bad)
	}

	b.Kill()
	start := time.Now()
	b.Restart()
	c = b.Dial()
	harness.WaitFor(t, opTimeout, "Metadata to name a leader for every partition", func() bool {
		return leadersKnown(c, topics) == topics*perTopic
	})
	// The broker answers NOT_LEADER_OR_FOLLOWER (retriable) for a replica
	// it has not opened yet; every partition must accept one in the end.
	harness.WaitFor(t, opTimeout, "every partition to accept a produce", func() bool {
		return produceEveryPartition(t, c, topics, perTopic, "after") == 0
	})
	t.Logf("2,000 partitions serving %s after the restart", time.Since(start).Round(time.Millisecond))

	// Nothing was lost: each partition holds "before" at 0, then "after".
	for i := range topics {
		req := kmsg.NewPtrListOffsetsRequest()
		req.SetVersion(1)
		req.ReplicaID = -1
		rt := kmsg.NewListOffsetsRequestTopic()
		rt.Topic = manyTopic(i)
		for p := range int32(perTopic) {
			rp := kmsg.NewListOffsetsRequestTopicPartition()
			rp.Partition, rp.Timestamp = p, -1
			rt.Partitions = append(rt.Partitions, rp)
		}
		req.Topics = append(req.Topics, rt)
		resp, _ := c.Request(req)
		for _, p := range resp.(*kmsg.ListOffsetsResponse).Topics[0].Partitions {
			// Retried produces after the restart may add more than one.
			if p.ErrorCode != 0 || p.Offset < 2 {
				t.Fatalf("%s-%d: end offset %d (%v), want at least 2", rt.Topic, p.Partition, p.Offset, kerr.ErrorForCode(p.ErrorCode))
			}
		}
	}
}

func manyTopic(i int) string { return fmt.Sprintf("many%d", i) }

// produceEveryPartition sends one record (acks=1) to every partition of
// the topics, one request per topic, and returns how many were refused.
func produceEveryPartition(t *testing.T, c *harness.RawConn, topics, perTopic int, value string) int {
	t.Helper()
	batch, err := recordbatch.Build(recordbatch.BuildOptions{ProducerID: -1, ProducerEpoch: -1, BaseSequence: -1,
		BaseTimestamp: time.Now().UnixMilli()}, []recordbatch.Record{{Value: []byte(value)}})
	if err != nil {
		t.Fatal(err)
	}
	bad := 0
	for i := range topics {
		req := kmsg.NewPtrProduceRequest()
		req.SetVersion(7)
		req.Acks, req.TimeoutMillis = 1, int32(opTimeout.Milliseconds())
		rt := kmsg.NewProduceRequestTopic()
		rt.Topic = manyTopic(i)
		for p := range int32(perTopic) {
			rp := kmsg.NewProduceRequestTopicPartition()
			rp.Partition, rp.Records = p, batch
			rt.Partitions = append(rt.Partitions, rp)
		}
		req.Topics = append(req.Topics, rt)
		resp, _ := c.Request(req)
		for _, p := range resp.(*kmsg.ProduceResponse).Topics[0].Partitions {
			switch p.ErrorCode {
			case 0:
			case kerr.NotLeaderForPartition.Code, kerr.UnknownTopicOrPartition.Code, kerr.LeaderNotAvailable.Code:
				bad++
			default:
				t.Fatalf("produce to %s-%d: %v", rt.Topic, p.Partition, kerr.ErrorForCode(p.ErrorCode))
			}
		}
	}
	return bad
}

// leadersKnown counts the partitions of the topics Metadata gives a leader.
func leadersKnown(c *harness.RawConn, topics int) int {
	req := kmsg.NewPtrMetadataRequest()
	req.SetVersion(7)
	for i := range topics {
		rt := kmsg.NewMetadataRequestTopic()
		rt.Topic = kmsg.StringPtr(manyTopic(i))
		req.Topics = append(req.Topics, rt)
	}
	resp, _ := c.Request(req)
	n := 0
	for _, t := range resp.(*kmsg.MetadataResponse).Topics {
		for _, p := range t.Partitions {
			if t.ErrorCode == 0 && p.ErrorCode == 0 && p.Leader >= 0 {
				n++
			}
		}
	}
	return n
}
