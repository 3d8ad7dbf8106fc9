package cluster

import (
	"fmt"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/weir-project/weir/internal/storage/recordbatch"
	"github.com/weir-project/weir/test/harness"
)

// TestCreatedTopicIsReadyAtEveryLeader: once CreateTopics or
// CreatePartitions has answered, every leader of the new partitions takes
// a Produce at once. Kafka answers when the change is committed, and a
// leader that has not applied it yet answers UNKNOWN_TOPIC_OR_PARTITION
// (UNKNOWN_TOPIC_ID at v13), which franz-go retries only after its
// metadata's minimum age: a 5 s stall for a client that creates a topic
// and produces to it. The requests go on connections opened beforehand,
// one try each, straight after the answer, asking the broker that
// answered where the leaders are.
func TestCreatedTopicIsReadyAtEveryLeader(t *testing.T) {
	c := harness.StartCluster(t, 3)
	conns := map[int32]*harness.RawConn{}
	for _, n := range c.Nodes {
		conns[n.NodeID()] = n.Dial()
	}
	batch, err := recordbatch.Build(recordbatch.BuildOptions{
		BaseTimestamp: time.Now().UnixMilli(), ProducerID: -1, ProducerEpoch: -1, BaseSequence: -1,
	}, []recordbatch.Record{{Value: []byte("v")}})
	if err != nil {
		t.Fatal(err)
	}
	// produceAll sends one Produce to the leader of each of parts, as
	// the broker via names it, by name (v11) or by id (v13), and fails on
	// any error.
	produceAll := func(via int32, topic string, parts []int32, version int16) {
		t.Helper()
		md := kmsg.NewPtrMetadataRequest()
		md.SetVersion(12)
		rt := kmsg.NewMetadataRequestTopic()
		rt.Topic = kmsg.StringPtr(topic)
		md.Topics = append(md.Topics, rt)
		resp, _ := conns[via].Request(md)
		mr := resp.(*kmsg.MetadataResponse)
		if len(mr.Topics) != 1 || mr.Topics[0].ErrorCode != 0 {
			t.Fatalf("metadata of %s from node %d: %+v", topic, via, mr.Topics)
		}
		leaders := map[int32]int32{}
		for _, p := range mr.Topics[0].Partitions {
			leaders[p.Partition] = p.Leader
		}
		for _, p := range parts {
			leader, ok := leaders[p]
			if !ok || conns[leader] == nil {
				t.Fatalf("%s-%d: node %d names leader %d (known: %v)", topic, p, via, leader, ok)
			}
			req := kmsg.NewPtrProduceRequest()
			req.SetVersion(version)
			req.Acks, req.TimeoutMillis = 1, 10000
			pt := kmsg.NewProduceRequestTopic()
			pt.Topic, pt.TopicID = topic, mr.Topics[0].TopicID
			pp := kmsg.NewProduceRequestTopicPartition()
			pp.Partition, pp.Records = p, batch
			pt.Partitions = append(pt.Partitions, pp)
			req.Topics = append(req.Topics, pt)
			resp, _ := conns[leader].Request(req)
			sp := resp.(*kmsg.ProduceResponse).Topics[0].Partitions[0]
			if sp.ErrorCode != 0 {
				t.Fatalf("produce v%d to %s-%d at its leader %d right after node %d answered: %v",
					version, topic, p, leader, via, kerr.ErrorForCode(sp.ErrorCode))
			}
		}
	}

	const rounds, partitions = 12, 6
	for i := range rounds {
		via := int32(i%3) + 1
		topic := fmt.Sprintf("ready-%d", i)
		req := kmsg.NewPtrCreateTopicsRequest()
		req.SetVersion(7)
		req.TimeoutMillis = int32(opTimeout / time.Millisecond)
		rt := kmsg.NewCreateTopicsRequestTopic()
		rt.Topic, rt.NumPartitions, rt.ReplicationFactor = topic, partitions, 3
		req.Topics = append(req.Topics, rt)
		resp, _ := conns[via].Request(req)
		if st := resp.(*kmsg.CreateTopicsResponse).Topics[0]; st.ErrorCode != 0 {
			t.Fatalf("create %s on node %d: %v", topic, via, kerr.ErrorForCode(st.ErrorCode))
		}
		all := []int32{0, 1, 2, 3, 4, 5}
		produceAll(via, topic, all, []int16{11, 13}[i%2])

		// Three more partitions, asked of another node.
		via = via%3 + 1
		cp := kmsg.NewPtrCreatePartitionsRequest()
		cp.SetVersion(3)
		cp.TimeoutMillis = int32(opTimeout / time.Millisecond)
		ct := kmsg.NewCreatePartitionsRequestTopic()
		ct.Topic, ct.Count = topic, partitions+3
		cp.Topics = append(cp.Topics, ct)
		resp, _ = conns[via].Request(cp)
		if st := resp.(*kmsg.CreatePartitionsResponse).Topics[0]; st.ErrorCode != 0 {
			t.Fatalf("create partitions of %s on node %d: %v", topic, via, kerr.ErrorForCode(st.ErrorCode))
		}
		produceAll(via, topic, []int32{6, 7, 8}, []int16{13, 11}[i%2])
	}

	// And franz-go, creating and producing at once, with no retries: its
	// first try at each partition must succeed.
	for i := range 3 {
		topic := fmt.Sprintf("ready-kgo-%d", i)
		cl := c.Client(kgo.DefaultProduceTopic(topic), kgo.RecordRetries(0), kgo.DisableIdempotentWrite(),
			kgo.RecordPartitioner(kgo.ManualPartitioner()))
		adm := kadm.NewClient(cl)
		ctx := harness.Ctx(t, opTimeout)
		cr, err := adm.CreateTopic(ctx, partitions, 3, nil, topic)
		if err == nil {
			err = cr.Err
		}
		if err != nil {
			t.Fatalf("create %s: %v", topic, err)
		}
		var recs []*kgo.Record
		for p := range int32(partitions) {
			recs = append(recs, &kgo.Record{Partition: p, Value: []byte("v")})
		}
		if err := cl.ProduceSync(ctx, recs...).FirstErr(); err != nil {
			t.Fatalf("franz-go produce to %s right after creating it: %v", topic, err)
		}
		cl.Close()
	}
}

// TestCreateTopicsWithAReplicaPaused: the wait for replica brokers never
// hangs an answer or turns it into an error. With a replica broker
// stopped (SIGSTOP) and its session long, CreateTopics answers success
// at its own timeout; with the default 2 s session, it answers success
// once the controller has fenced the silent broker, well before a long
// request timeout. After SIGCONT the broker serves its new replica.
func TestCreateTopicsWithAReplicaPaused(t *testing.T) {
	cases := []struct {
		name      string
		timeoutMs int32
		overrides []string
		// fenced: the paused broker must be fenced when the answer comes
		// (the answer waited for the fencing, not for the timeout).
		fenced bool
	}{
		{"answers at its timeout", 1500, []string{"broker.session.timeout.ms=120000"}, false},
		{"answers once the broker is fenced", 120000, nil, true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c := harness.StartCluster(t, 3, tc.overrides...)
			guardNodes(t, c)
			ctrl := c.AgreedController(opTimeout)
			paused := otherNodes(3, ctrl)[0]
			conn := c.Node(ctrl).Dial()
			c.Node(paused).Pause()
			const topic = "created-while-paused"
			req := kmsg.NewPtrCreateTopicsRequest()
			req.SetVersion(7)
			req.TimeoutMillis = tc.timeoutMs
			rt := kmsg.NewCreateTopicsRequestTopic()
			rt.Topic, rt.NumPartitions, rt.ReplicationFactor = topic, -1, -1
			a := kmsg.NewCreateTopicsRequestTopicReplicaAssignment()
			a.Partition, a.Replicas = 0, []int32{ctrl, paused}
			rt.ReplicaAssignment = append(rt.ReplicaAssignment, a)
			req.Topics = append(req.Topics, rt)
			resp, _ := conn.Request(req)
			if st := resp.(*kmsg.CreateTopicsResponse).Topics[0]; st.ErrorCode != 0 {
				t.Fatalf("create with broker %d paused: %v", paused, kerr.ErrorForCode(st.ErrorCode))
			}
			dc := kmsg.NewPtrDescribeClusterRequest()
			dc.SetVersion(2)
			dc.IncludeFencedBrokers = true
			dresp, _ := conn.Request(dc)
			fenced := false
			for _, b := range dresp.(*kmsg.DescribeClusterResponse).Brokers {
				fenced = fenced || (b.NodeID == paused && b.IsFenced)
			}
			if fenced != tc.fenced {
				t.Fatalf("broker %d fenced when CreateTopics answered: %v, want %v", paused, fenced, tc.fenced)
			}

			c.Node(paused).Resume()
			c.WaitFullISR(topic, 0, opTimeout)
			cl := c.Client(kgo.DefaultProduceTopic(topic))
			defer cl.Close()
			if err := cl.ProduceSync(harness.Ctx(t, opTimeout), &kgo.Record{Value: []byte("v")}).FirstErr(); err != nil {
				t.Fatalf("produce after the resume: %v", err)
			}
		})
	}
}

// TestFirstAcksAllProduceToNewTopic: a follower that asks a new topic's
// leader before the leader has applied or opened it (UNKNOWN_TOPIC_ID,
// LEADER_NOT_AVAILABLE) retries within milliseconds, not after
// replica.fetch.backoff.ms, which would hold the first acks=all produce
// for that long. The backoff is set to two minutes here, beyond the
// records' one-minute delivery timeout, so a follower that waits it out
// fails the test instead of slowing it. (Not idempotent: franz-go never
// gives up on an idempotent batch whose fate it does not know.)
func TestFirstAcksAllProduceToNewTopic(t *testing.T) {
	c := harness.StartCluster(t, 3, "replica.fetch.backoff.ms=120000")
	guardNodes(t, c)
	cl := c.Client(kgo.RecordPartitioner(kgo.ManualPartitioner()), kgo.RequiredAcks(kgo.AllISRAcks()),
		kgo.DisableIdempotentWrite(), kgo.RecordDeliveryTimeout(time.Minute))
	defer cl.Close()
	adm := kadm.NewClient(cl)
	three := "3"
	for i := range 5 {
		topic := fmt.Sprintf("first-acks-all-%d", i)
		ctx := harness.Ctx(t, 2*time.Minute)
		cr, err := adm.CreateTopic(ctx, 6, 3, map[string]*string{"min.insync.replicas": &three}, topic)
		if err == nil {
			err = cr.Err
		}
		if err != nil {
			t.Fatalf("create %s: %v", topic, err)
		}
		var recs []*kgo.Record
		for p := range int32(6) {
			recs = append(recs, &kgo.Record{Topic: topic, Partition: p, Value: []byte("v")})
		}
		if err := cl.ProduceSync(ctx, recs...).FirstErr(); err != nil {
			t.Fatalf("acks=all produce to %s right after creating it: %v", topic, err)
		}
	}
}
