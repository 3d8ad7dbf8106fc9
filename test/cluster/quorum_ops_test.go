package cluster

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/weir-project/weir/test/harness"
)

// quorumView is one node's DescribeQuorum answer: the leader and the
// voters and observers by id.
type quorumView struct {
	leader    int32
	voters    []int32
	observers []int32
}

// describeQuorumAt sends DescribeQuorum to the node at addr (which
// forwards it to the active controller).
func describeQuorumAt(addr string) (quorumView, error) {
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.RequestRetries(0), kgo.DialTimeout(2*time.Second))
	if err != nil {
		return quorumView{}, err
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	req := kmsg.NewPtrDescribeQuorumRequest()
	rt := kmsg.NewDescribeQuorumRequestTopic()
	rt.Topic = "__cluster_metadata"
	rt.Partitions = []kmsg.DescribeQuorumRequestTopicPartition{kmsg.NewDescribeQuorumRequestTopicPartition()}
	req.Topics = append(req.Topics, rt)
	resp, err := req.RequestWith(ctx, cl)
	if err != nil {
		return quorumView{}, err
	}
	if err := kerr.ErrorForCode(resp.ErrorCode); err != nil {
		return quorumView{}, err
	}
	p := resp.Topics[0].Partitions[0]
	if err := kerr.ErrorForCode(p.ErrorCode); err != nil {
		return quorumView{}, err
	}
	v := quorumView{leader: p.LeaderID}
	for _, r := range p.CurrentVoters {
		v.voters = append(v.voters, r.ReplicaID)
	}
	for _, r := range p.Observers {
		v.observers = append(v.observers, r.ReplicaID)
	}
	slices.Sort(v.voters)
	slices.Sort(v.observers)
	return v, nil
}

// waitVoters waits until the quorum, asked through node b, has exactly
// these voters and a leader among them.
func waitVoters(t *testing.T, b *harness.Broker, want ...int32) quorumView {
	t.Helper()
	var v quorumView
	harness.WaitFor(t, opTimeout, fmt.Sprintf("voters %v with a leader among them", want), func() bool {
		var err error
		v, err = describeQuorumAt(b.Addr)
		return err == nil && slices.Equal(v.voters, want) && slices.Contains(want, v.leader)
	})
	return v
}

// weirCLI runs a weir client command against the given nodes and returns
// its output.
func weirCLI(t *testing.T, nodes []*harness.Broker, args ...string) string {
	t.Helper()
	var addrs []string
	for _, b := range nodes {
		addrs = append(addrs, b.Addr)
	}
	return harness.RunCLI(t, nodes[0], append(args, "--bootstrap-server", strings.Join(addrs, ","))...)
}

// TestQuorumGrowAndShrink: the metadata quorum grows from one voter to
// three while topics are created, survives kill -9 of its leader (the
// two others elect a new one and the cluster takes new topics), and
// shrinks back to one voter; the removed voters go on as brokers that
// follow the metadata log. Each step goes through `weir cluster quorum`.
// A preferred election through `weir topic elect-leaders` moves a
// partition's leadership back on the way.
func TestQuorumGrowAndShrink(t *testing.T) {
	c := harness.StartCluster(t, 1)
	guardNodes(t, c)
	n1 := c.Node(1)
	createTopicOn(t, []*harness.Broker{n1}, "grow-0", 1, 1)
	n2 := c.AddController([]*harness.Broker{n1})
	n3 := c.AddController([]*harness.Broker{n1})
	all := []*harness.Broker{n1, n2, n3}
	v := waitVoters(t, n1, 1)
	harness.WaitFor(t, opTimeout, "nodes 2 and 3 to be observers", func() bool {
		v, _ = describeQuorumAt(n1.Addr)
		return slices.Equal(v.observers, []int32{2, 3})
	})

	out := weirCLI(t, all, "cluster", "quorum", "add", "--controller-id", "2")
	if !strings.Contains(out, "Added controller 2") {
		t.Fatalf("quorum add 2: %q", out)
	}
	createTopicOn(t, all, "grow-1", 2, 2)
	weirCLI(t, all, "cluster", "quorum", "add", "--controller-id", "3")
	createTopicOn(t, all, "grow-2", 3, 3)
	v = waitVoters(t, n3, 1, 2, 3)
	desc := weirCLI(t, all, "cluster", "quorum", "describe")
	for _, want := range []string{"CurrentVoters:          [1,2,3]", "Leader", "Follower"} {
		if !strings.Contains(desc, want) {
			t.Fatalf("quorum describe lacks %q:\n%s", want, desc)
		}
	}

	// Preferred leader election: node 2 prefers partition 0 of pref,
	// loses its leadership while stopped, and gets it back.
	createAssignedTopic(t, c, "pref", [][]int32{{2, 3, 1}}, nil)
	c.WaitFullISR("pref", 0, opTimeout)
	n2.Stop()
	<-waitExit(n2)
	c.WaitPartition("pref", 0, opTimeout, "a leader other than 2", func(st harness.PartitionState) bool { return st.Leader > 0 && st.Leader != 2 })
	n2.Restart()
	c.WaitFullISR("pref", 0, opTimeout)
	// Through a node that is not the controller: it forwards.
	v = waitVoters(t, n1, 1, 2, 3)
	follower := c.Node(1 + v.leader%3)
	out = weirCLI(t, []*harness.Broker{follower}, "topic", "elect-leaders", "--election-type", "preferred", "--topic", "pref")
	if !strings.Contains(out, "Successfully completed leader election (PREFERRED) for partitions pref-0") {
		t.Fatalf("elect-leaders: %q", out)
	}
	if st := c.WaitPartition("pref", 0, opTimeout, "leader 2", func(st harness.PartitionState) bool { return st.Leader == 2 }); st.Leader != 2 {
		t.Fatalf("leader %d after the preferred election", st.Leader)
	}
	out = weirCLI(t, all, "topic", "elect-leaders", "--election-type", "preferred", "--topic", "pref", "--partition", "0")
	if !strings.Contains(out, "Valid replica already elected for partitions pref-0") {
		t.Fatalf("second elect-leaders: %q", out)
	}

	// Kill -9 the quorum's leader: the two other voters elect one.
	v = waitVoters(t, n1, 1, 2, 3)
	dead := c.Node(v.leader)
	var alive []*harness.Broker
	for _, b := range all {
		if b != dead {
			alive = append(alive, b)
		}
	}
	dead.Kill()
	<-waitExit(dead)
	harness.WaitFor(t, opTimeout, "a new quorum leader", func() bool {
		nv, err := describeQuorumAt(alive[0].Addr)
		return err == nil && nv.leader != dead.NodeID() && nv.leader > 0
	})
	createTopicOn(t, alive, "grow-3", 1, 2)
	dead.Restart()
	waitVoters(t, dead, 1, 2, 3)

	// Shrink back to node 1 alone, making topics meanwhile.
	weirCLI(t, all, "cluster", "quorum", "remove", "--controller-id", "3")
	// If 3 led, it stepped down once the change committed: wait for the
	// new leader before the next create, which would otherwise race the
	// election (a create cut short by a failover leaves its name taken
	// until the new controller aborts it).
	waitVoters(t, n1, 1, 2)
	createTopicOn(t, all, "shrink-1", 1, 3)
	weirCLI(t, all, "cluster", "quorum", "remove", "--controller-id", "2")
	v = waitVoters(t, n2, 1)
	if !slices.Equal(v.observers, []int32{2, 3}) {
		t.Fatalf("observers after shrinking: %v, want [2 3]", v.observers)
	}
	createTopicOn(t, all, "shrink-2", 3, 3)
	// Voter 1 alone is the quorum: with 2 and 3 stopped it still commits.
	n2.Stop()
	n3.Stop()
	<-waitExit(n2)
	<-waitExit(n3)
	createTopicOn(t, []*harness.Broker{n1}, "shrink-3", 1, 1)
	for _, topic := range []string{"grow-0", "grow-1", "grow-2", "grow-3", "shrink-1", "shrink-2", "shrink-3"} {
		if _, err := n1.Partition(topic, 0); err != nil {
			t.Fatalf("topic %s after the quorum changes: %v", topic, err)
		}
	}
}

// waitExit returns a channel closed when b's process has exited.
func waitExit(b *harness.Broker) <-chan struct{} {
	ch := make(chan struct{})
	go func() {
		for b.Running() {
			time.Sleep(20 * time.Millisecond)
		}
		close(ch)
	}()
	return ch
}

// createTopicOn creates a topic through the given nodes only (others may
// be down), waits for its leader, and produces one record to it, acks=all.
//
// A creation cut short by a controller failover (the quorum's leader may
// step down while voters change, or on a loaded machine) can leave the
// name held by a pending topic that the next controller aborts: a retry
// meanwhile hears REQUEST_TIMED_OUT and tries again. An "already exists"
// means an earlier attempt created it, so the topic must show up.
func createTopicOn(t *testing.T, nodes []*harness.Broker, topic string, partitions int32, rf int16) {
	t.Helper()
	var addrs []string
	for _, b := range nodes {
		addrs = append(addrs, b.Addr)
	}
	cl, err := kgo.NewClient(kgo.SeedBrokers(addrs...), kgo.DefaultProduceTopic(topic), kgo.RetryTimeout(opTimeout))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	adm := kadm.NewClient(cl)
	visible := func() bool {
		st, err := nodes[0].Partition(topic, 0)
		return err == nil && st.Leader >= 0
	}
	harness.WaitFor(t, 2*opTimeout, "topic "+topic+" created", func() bool {
		resp, err := adm.CreateTopic(harness.Ctx(t, opTimeout), partitions, rf, nil, topic)
		if err == nil {
			err = resp.Err
		}
		switch {
		case err == nil:
			return true
		case errors.Is(err, kerr.TopicAlreadyExists):
			// Created by an earlier attempt: it must show up.
			deadline := time.Now().Add(30 * time.Second)
			for time.Now().Before(deadline) {
				if visible() {
					return true
				}
				time.Sleep(100 * time.Millisecond)
			}
			return false
		default:
			t.Logf("create topic %s: %v; retrying", topic, err)
			return false
		}
	})
	harness.WaitFor(t, opTimeout, "topic "+topic+" to have leaders", visible)
	if err := cl.ProduceSync(harness.Ctx(t, opTimeout), kgo.StringRecord("x")).FirstErr(); err != nil {
		t.Fatalf("produce to %s: %v", topic, err)
	}
}
