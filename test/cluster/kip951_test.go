package cluster

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/kversion"

	"github.com/weir-project/weir/internal/storage/recordbatch"
	"github.com/weir-project/weir/test/harness"
)

// rawTo sends req to one node only, at the version set on it (kgo would
// otherwise pick the newest both sides know).
func rawTo(t *testing.T, b *harness.Broker, req kmsg.Request) kmsg.Response {
	t.Helper()
	versions := kversion.Stable()
	versions.SetMaxKeyVersion(req.Key(), req.GetVersion())
	cl, err := kgo.NewClient(kgo.SeedBrokers(b.Addr), kgo.RequestRetries(0), kgo.MaxVersions(versions))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), opTimeout)
	defer cancel()
	resp, err := cl.SeedBrokers()[0].Request(ctx, req)
	if err != nil {
		t.Fatalf("%s to %s: %v", kmsg.NameForKey(req.Key()), b.Addr, err)
	}
	return resp
}

// TestNotLeaderNamesTheLeader: a produce or fetch sent to a broker that is
// only a follower is answered NOT_LEADER_OR_FOLLOWER with the current
// leader and its endpoint (KIP-951: Produce v10+, Fetch v16+), so clients
// move at once. A fetch that claims to come from a broker that holds no
// replica of the partition is refused, so it cannot move the HW.
func TestNotLeaderNamesTheLeader(t *testing.T) {
	c := harness.StartCluster(t, 3)
	const topic = "hints"
	createTopic(t, c, topic, 1, 2, nil)
	st, err := c.Partition(topic, 0)
	if err != nil {
		t.Fatal(err)
	}
	leader := st.Leader
	follower := st.Replicas[0]
	if follower == leader {
		follower = st.Replicas[1]
	}
	outsider := int32(0)
	for id := int32(1); id <= 3; id++ {
		if !slices.Contains(st.Replicas, id) {
			outsider = id
		}
	}

	batch, err := recordbatch.Build(recordbatch.BuildOptions{
		BaseTimestamp: time.Now().UnixMilli(), ProducerID: -1, ProducerEpoch: -1, BaseSequence: -1,
	}, []recordbatch.Record{{Value: []byte("v")}})
	if err != nil {
		t.Fatal(err)
	}
	produce := kmsg.NewPtrProduceRequest()
	produce.SetVersion(11)
	produce.Acks, produce.TimeoutMillis = 1, 10000
	pt := kmsg.NewProduceRequestTopic()
	pt.Topic = topic
	pp := kmsg.NewProduceRequestTopicPartition()
	pp.Partition, pp.Records = 0, batch
	pt.Partitions = append(pt.Partitions, pp)
	produce.Topics = append(produce.Topics, pt)
	pr := rawTo(t, c.Node(follower), produce).(*kmsg.ProduceResponse)
	psp := pr.Topics[0].Partitions[0]
	if psp.ErrorCode != kerr.NotLeaderForPartition.Code {
		t.Fatalf("produce to follower %d: error %v, want NOT_LEADER_OR_FOLLOWER", follower, kerr.ErrorForCode(psp.ErrorCode))
	}
	if psp.CurrentLeader.LeaderID != leader || psp.CurrentLeader.LeaderEpoch != st.LeaderEpoch {
		t.Fatalf("produce answer names leader %d epoch %d, want %d epoch %d", psp.CurrentLeader.LeaderID, psp.CurrentLeader.LeaderEpoch, leader, st.LeaderEpoch)
	}
	if len(pr.Brokers) != 1 || pr.Brokers[0].NodeID != leader || pr.Brokers[0].Port == 0 {
		t.Fatalf("produce answer endpoints %+v, want the leader %d's", pr.Brokers, leader)
	}

	fetch := func(to int32, replicaID int32) kmsg.FetchResponseTopicPartition {
		req := kmsg.NewPtrFetchRequest()
		req.SetVersion(16)
		req.ReplicaID, req.ReplicaState.ID, req.ReplicaState.Epoch = replicaID, replicaID, -1
		req.MaxWaitMillis, req.MinBytes, req.MaxBytes = 10, 1, 1<<20
		ft := kmsg.NewFetchRequestTopic()
		// v13+ names topics by id.
		ft.Topic, ft.TopicID = topic, topicID(t, c, topic)
		fp := kmsg.NewFetchRequestTopicPartition()
		fp.Partition, fp.FetchOffset, fp.PartitionMaxBytes, fp.CurrentLeaderEpoch = 0, 0, 1<<20, -1
		ft.Partitions = append(ft.Partitions, fp)
		req.Topics = append(req.Topics, ft)
		fr := rawTo(t, c.Node(to), req).(*kmsg.FetchResponse)
		if len(fr.Topics) != 1 || len(fr.Topics[0].Partitions) != 1 {
			t.Fatalf("fetch answer shape: %d topics", len(fr.Topics))
		}
		sp := fr.Topics[0].Partitions[0]
		if sp.ErrorCode == kerr.NotLeaderForPartition.Code && to != leader {
			if len(fr.Brokers) != 1 || fr.Brokers[0].NodeID != leader {
				t.Fatalf("fetch answer endpoints %+v, want the leader %d's", fr.Brokers, leader)
			}
		}
		return sp
	}
	if sp := fetch(follower, -1); sp.ErrorCode != kerr.NotLeaderForPartition.Code || sp.CurrentLeader.LeaderID != leader {
		t.Fatalf("consumer fetch from follower %d: error %v, current leader %d; want NOT_LEADER_OR_FOLLOWER naming %d",
			follower, kerr.ErrorForCode(sp.ErrorCode), sp.CurrentLeader.LeaderID, leader)
	}
	if sp := fetch(leader, outsider); sp.ErrorCode != kerr.NotLeaderForPartition.Code {
		t.Fatalf("replica fetch claiming broker %d, which holds no replica: error %v, want it refused", outsider, kerr.ErrorForCode(sp.ErrorCode))
	}
	if sp := fetch(leader, follower); sp.ErrorCode != 0 {
		t.Fatalf("replica fetch by the follower %d: %v", follower, kerr.ErrorForCode(sp.ErrorCode))
	}
}

// topicID looks a topic's id up in the metadata.
func topicID(t *testing.T, c *harness.Cluster, topic string) [16]byte {
	t.Helper()
	req := kmsg.NewPtrMetadataRequest()
	req.SetVersion(12) // topic ids
	rt := kmsg.NewMetadataRequestTopic()
	rt.Topic = kmsg.StringPtr(topic)
	req.Topics = append(req.Topics, rt)
	resp := rawTo(t, c.Nodes[0], req).(*kmsg.MetadataResponse)
	if len(resp.Topics) != 1 || resp.Topics[0].ErrorCode != 0 {
		t.Fatalf("metadata of %s: %+v", topic, resp.Topics)
	}
	return resp.Topics[0].TopicID
}
