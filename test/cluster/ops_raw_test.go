package cluster

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/weir-project/weir/test/harness"
)

// rawClient is a client that sends exactly one request per call to b.
func rawClient(t *testing.T, b *harness.Broker) *kgo.Client {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(b.Addr), kgo.RequestRetries(0))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cl.Close)
	return cl
}

func wantCode(t *testing.T, what string, got int16, want *kerr.Error) {
	t.Helper()
	if got != want.Code {
		t.Errorf("%s: error %v, want %s", what, kerr.ErrorForCode(got), want.Message)
	}
}

// TestOpsBadInput: the cluster operation APIs answer bad or impossible
// requests with Kafka's error codes, on a one-node cluster.
func TestOpsBadInput(t *testing.T) {
	b := harness.StartBroker(t, "auto.create.topics.enable=false")
	cl := rawClient(t, b)
	ctx := harness.Ctx(t, opTimeout)
	adm := harness.RunCLI(t, b, "topic", "create", "e", "--partitions", "1", "--replication-factor", "1")
	_ = adm

	elect := func(version int16, typ int8, topics []kmsg.ElectLeadersRequestTopic) *kmsg.ElectLeadersResponse {
		t.Helper()
		req := kmsg.NewPtrElectLeadersRequest()
		req.Version, req.ElectionType, req.Topics, req.TimeoutMillis = version, typ, topics, 5000
		resp, err := req.RequestWith(ctx, cl)
		if err != nil {
			t.Fatalf("ElectLeaders v%d: %v", version, err)
		}
		return resp
	}
	tp := func(topic string, parts ...int32) []kmsg.ElectLeadersRequestTopic {
		rt := kmsg.NewElectLeadersRequestTopic()
		rt.Topic, rt.Partitions = topic, parts
		return []kmsg.ElectLeadersRequestTopic{rt}
	}
	partCodes := func(resp *kmsg.ElectLeadersResponse) []int16 {
		var out []int16
		for _, rt := range resp.Topics {
			for _, p := range rt.Partitions {
				out = append(out, p.ErrorCode)
			}
		}
		return out
	}
	for _, c := range []struct {
		name    string
		version int16
		typ     int8
		topics  []kmsg.ElectLeadersRequestTopic
		top     *kerr.Error
		parts   []*kerr.Error
	}{
		{"unknown topic", 2, 0, tp("nope", 0), kerr.UnknownServerError, []*kerr.Error{kerr.UnknownTopicOrPartition}},
		{"unknown partitions", 2, 0, tp("e", 5, -1), kerr.UnknownServerError, []*kerr.Error{kerr.UnknownTopicOrPartition, kerr.UnknownTopicOrPartition}},
		{"preferred already leads", 2, 0, tp("e", 0), kerr.UnknownServerError, []*kerr.Error{kerr.ElectionNotNeeded}},
		{"unclean with a leader", 2, 1, tp("e", 0), kerr.UnknownServerError, []*kerr.Error{kerr.ElectionNotNeeded}},
		{"v0 is preferred", 0, 1, tp("e", 0), kerr.UnknownServerError, []*kerr.Error{kerr.ElectionNotNeeded}},
		{"bad election type", 2, 7, tp("e", 0), kerr.InvalidRequest, []*kerr.Error{kerr.InvalidRequest}},
	} {
		resp := elect(c.version, c.typ, c.topics)
		if c.top != kerr.UnknownServerError {
			wantCode(t, c.name+" (top level)", resp.ErrorCode, c.top)
		} else if resp.ErrorCode != 0 {
			t.Errorf("%s: top-level error %v", c.name, kerr.ErrorForCode(resp.ErrorCode))
		}
		got := partCodes(resp)
		if len(got) != len(c.parts) {
			t.Errorf("%s: %d partitions answered, want %d", c.name, len(got), len(c.parts))
			continue
		}
		for i := range got {
			wantCode(t, c.name, got[i], c.parts[i])
		}
	}
	// Null topics: every partition; none needs an election, so none is
	// listed.
	if resp := elect(2, 0, nil); resp.ErrorCode != 0 || len(resp.Topics) != 0 {
		t.Errorf("all partitions: error %d, topics %+v", resp.ErrorCode, resp.Topics)
	}

	// DescribeQuorum names only the metadata partition.
	dq := kmsg.NewPtrDescribeQuorumRequest()
	rt := kmsg.NewDescribeQuorumRequestTopic()
	rt.Topic = "e"
	rt.Partitions = []kmsg.DescribeQuorumRequestTopicPartition{kmsg.NewDescribeQuorumRequestTopicPartition()}
	dq.Topics = append(dq.Topics, rt)
	if resp, err := dq.RequestWith(ctx, cl); err != nil {
		t.Fatal(err)
	} else {
		wantCode(t, "DescribeQuorum of topic e", resp.ErrorCode, kerr.UnknownTopicOrPartition)
	}
	dq.Topics[0].Topic = "__cluster_metadata"
	resp, err := dq.RequestWith(ctx, cl)
	if err != nil {
		t.Fatal(err)
	}
	if p := resp.Topics[0].Partitions[0]; resp.ErrorCode != 0 || p.ErrorCode != 0 || p.LeaderID != 1 || len(p.CurrentVoters) != 1 || p.HighWatermark <= 0 || len(resp.Nodes) != 1 {
		t.Errorf("DescribeQuorum: %+v", resp)
	}

	addVoter := func(id int32, cluster *string, timeout int32) int16 {
		t.Helper()
		req := kmsg.NewPtrAddRaftVoterRequest()
		req.VoterID, req.ClusterID, req.TimeoutMillis = id, cluster, timeout
		l := kmsg.NewAddRaftVoterRequestListener()
		l.Name, l.Host, l.Port = "CONTROLLER", "127.0.0.1", 1
		req.Listeners = append(req.Listeners, l)
		resp, err := req.RequestWith(ctx, cl)
		if err != nil {
			t.Fatal(err)
		}
		return resp.ErrorCode
	}
	wantCode(t, "AddRaftVoter of the voter", addVoter(1, nil, 5000), kerr.DuplicateVoter)
	wantCode(t, "AddRaftVoter of id -1", addVoter(-1, nil, 5000), kerr.InvalidRequest)
	wantCode(t, "AddRaftVoter to another cluster", addVoter(9, kmsg.StringPtr("bogus"), 5000), kerr.InconsistentClusterID)
	start := time.Now()
	wantCode(t, "AddRaftVoter of a node that is not there", addVoter(9, nil, 500), kerr.RequestTimedOut)
	if d := time.Since(start); d > 20*time.Second {
		t.Errorf("AddRaftVoter with a 500 ms timeout took %v", d)
	}

	removeVoter := func(id int32) int16 {
		t.Helper()
		req := kmsg.NewPtrRemoveRaftVoterRequest()
		req.VoterID = id
		resp, err := req.RequestWith(ctx, cl)
		if err != nil {
			t.Fatal(err)
		}
		return resp.ErrorCode
	}
	wantCode(t, "RemoveRaftVoter of a non-voter", removeVoter(9), kerr.VoterNotFound)
	wantCode(t, "RemoveRaftVoter of the last voter", removeVoter(1), kerr.InvalidRequest)

	unregister := func(id int32) (int16, string) {
		t.Helper()
		req := kmsg.NewPtrUnregisterBrokerRequest()
		req.BrokerID = id
		resp, err := req.RequestWith(ctx, cl)
		if err != nil {
			t.Fatal(err)
		}
		msg := ""
		if resp.ErrorMessage != nil {
			msg = *resp.ErrorMessage
		}
		return resp.ErrorCode, msg
	}
	code, _ := unregister(9)
	wantCode(t, "UnregisterBroker of an unknown id", code, kerr.BrokerIDNotRegistered)
	code, msg := unregister(1)
	wantCode(t, "UnregisterBroker of a live broker", code, kerr.InvalidRequest)
	if !strings.Contains(msg, "active") {
		t.Errorf("UnregisterBroker of a live broker: message %q", msg)
	}
	// Still a working broker after all that.
	if _, err := b.Partition("e", 0); err != nil {
		t.Fatalf("metadata after the bad requests: %v", err)
	}
}

// brokerIDs is the brokers a node's Metadata lists, and those
// DescribeCluster lists with fenced ones included.
func brokerIDs(t *testing.T, b *harness.Broker) (metadata, described []int32) {
	t.Helper()
	cl := rawClient(t, b)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	m, err := kmsg.NewPtrMetadataRequest().RequestWith(ctx, cl)
	if err != nil {
		return nil, nil
	}
	for _, br := range m.Brokers {
		metadata = append(metadata, br.NodeID)
	}
	dc := kmsg.NewPtrDescribeClusterRequest()
	dc.IncludeFencedBrokers = true
	d, err := dc.RequestWith(ctx, cl)
	if err != nil {
		return nil, nil
	}
	for _, br := range d.Brokers {
		described = append(described, br.NodeID)
	}
	slices.Sort(metadata)
	slices.Sort(described)
	return metadata, described
}

// TestUnregisterStoppedBroker: a broker-only node is stopped, then
// unregistered with `weir cluster unregister`: it vanishes from Metadata
// and DescribeCluster (fenced brokers included), from the ISR of its
// partitions and from the metadata quorum's observers, while the
// partitions keep it as a replica. Started again, it registers anew and
// rejoins the ISR.
func TestUnregisterStoppedBroker(t *testing.T) {
	c := harness.StartCluster(t, 1)
	guardNodes(t, c)
	n1 := c.Node(1)
	n2 := c.AddBrokerOnly()
	createTopic(t, c, "gone", 1, 2, nil)
	createAssignedTopic(t, c, "pref2", [][]int32{{2, 1}}, nil)
	createAssignedTopic(t, c, "only2", [][]int32{{2}}, nil)
	n2.Stop()
	<-waitExit(n2)
	harness.WaitFor(t, opTimeout, "broker 2 fenced and out of the ISR", func() bool {
		st, err := n1.Partition("gone", 0)
		o, _ := n1.Partition("only2", 0)
		m, _ := brokerIDs(t, n1)
		return err == nil && slices.Equal(st.ISR, []int32{1}) && o.Leader == -1 && !slices.Contains(m, 2)
	})
	// With its preferred (or only) replica gone, no election can help.
	cl := rawClient(t, n1)
	wantCode(t, "preferred election, preferred replica stopped", electOne(t, cl, 0, "pref2"), kerr.PreferredLeaderNotAvailable)
	wantCode(t, "preferred election of an offline partition", electOne(t, cl, 0, "only2"), kerr.PreferredLeaderNotAvailable)
	wantCode(t, "unclean election, no live replica", electOne(t, cl, 1, "only2"), kerr.EligibleLeadersNotAvailable)
	wantCode(t, "unclean election of a led partition", electOne(t, cl, 1, "pref2"), kerr.ElectionNotNeeded)
	out := harness.RunCLI(t, n1, "cluster", "unregister", "2")
	if !strings.Contains(out, "Broker 2 is no longer registered") {
		t.Fatalf("unregister: %q", out)
	}
	m, d := brokerIDs(t, n1)
	if !slices.Equal(m, []int32{1}) || !slices.Equal(d, []int32{1}) {
		t.Fatalf("after unregistering 2: Metadata brokers %v, DescribeCluster brokers %v", m, d)
	}
	if st, err := n1.Partition("gone", 0); err != nil || !slices.Equal(slices.Sorted(slices.Values(st.Replicas)), []int32{1, 2}) || !slices.Equal(st.ISR, []int32{1}) {
		t.Fatalf("gone-0 after unregistering 2: %+v %v", st, err)
	}
	harness.WaitFor(t, opTimeout, "node 2 out of the quorum's observers", func() bool {
		v, err := describeQuorumAt(n1.Addr)
		return err == nil && len(v.observers) == 0
	})
	// Unregistering it again: it is not registered.
	req := kmsg.NewPtrUnregisterBrokerRequest()
	req.BrokerID = 2
	resp, err := req.RequestWith(harness.Ctx(t, opTimeout), rawClient(t, n1))
	if err != nil {
		t.Fatal(err)
	}
	wantCode(t, "second unregister", resp.ErrorCode, kerr.BrokerIDNotRegistered)

	n2.Restart()
	c.WaitFullISR("gone", 0, opTimeout)
	if m, _ := brokerIDs(t, n1); !slices.Equal(m, []int32{1, 2}) {
		t.Fatalf("after restarting 2: brokers %v", m)
	}
}

// electOne sends ElectLeaders (v2, type typ) for partition 0 of topic and
// returns that partition's error code.
func electOne(t *testing.T, cl *kgo.Client, typ int8, topic string) int16 {
	t.Helper()
	req := kmsg.NewPtrElectLeadersRequest()
	req.ElectionType, req.TimeoutMillis = typ, 10000
	rt := kmsg.NewElectLeadersRequestTopic()
	rt.Topic, rt.Partitions = topic, []int32{0}
	req.Topics = append(req.Topics, rt)
	resp, err := req.RequestWith(harness.Ctx(t, opTimeout), cl)
	if err != nil {
		t.Fatalf("ElectLeaders %s: %v", topic, err)
	}
	if len(resp.Topics) != 1 || len(resp.Topics[0].Partitions) != 1 {
		t.Fatalf("ElectLeaders %s: answer %+v", topic, resp.Topics)
	}
	return resp.Topics[0].Partitions[0].ErrorCode
}
