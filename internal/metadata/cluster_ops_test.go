package metadata

import (
	"context"
	"errors"
	"slices"
	"testing"
	"time"
)

// liveBrokers registers incarnations of brokers ids on c and unfences
// them, returning their epochs.
func liveBrokers(t *testing.T, c *Controller, ids ...int32) map[int32]int64 {
	t.Helper()
	ctx := testCtx(t)
	epochs := map[int32]int64{}
	for _, id := range ids {
		e, err := c.RegisterIncarnation(ctx, BrokerRegistration{ID: id, Incarnation: [16]byte{byte(id), 1}, Host: "127.0.0.1", Port: 9090 + id})
		if err != nil {
			t.Fatalf("RegisterIncarnation %d: %v", id, err)
		}
		if err := c.UnfenceBroker(ctx, id, e); err != nil {
			t.Fatalf("UnfenceBroker %d: %v", id, err)
		}
		epochs[id] = e
	}
	return epochs
}

func TestControllerBrokerLifecycle(t *testing.T) {
	c := openLeader(t, testConfig(t.TempDir()))
	ctx := testCtx(t)
	for _, r := range []BrokerRegistration{{ID: -1, Incarnation: [16]byte{1}}, {ID: 1}, {ID: 1, Incarnation: [16]byte{1}, Port: 1 << 20}} {
		if _, err := c.RegisterIncarnation(ctx, r); !errors.Is(err, ErrInvalidRequest) {
			t.Fatalf("RegisterIncarnation(%+v): %v, want ErrInvalidRequest", r, err)
		}
	}
	reg := BrokerRegistration{ID: 1, Incarnation: [16]byte{1, 1}, Host: "127.0.0.1", Port: 9091, Rack: "a"}
	e1, err := c.RegisterIncarnation(ctx, reg)
	if err != nil {
		t.Fatal(err)
	}
	if b, _ := c.Image().Broker(1); b.Epoch != e1 || !b.Fenced || e1 <= 0 {
		t.Fatalf("epoch %d, broker %+v", e1, b)
	}
	if again, err := c.RegisterIncarnation(ctx, reg); err != nil || again != e1 {
		t.Fatalf("retried registration: %d, %v; want %d", again, err, e1)
	}
	// Fenced brokers are no placement target.
	if _, err := c.CreateTopic(ctx, CreateTopic{Name: "t", NumPartitions: 1, ReplicationFactor: 1}); !errors.Is(err, ErrInvalidReplicationFactor) {
		t.Fatalf("create over fenced brokers: %v", err)
	}
	if err := c.UnfenceBroker(ctx, 1, e1+1); !errors.Is(err, ErrStaleBrokerEpoch) {
		t.Fatalf("unfence with a wrong epoch: %v", err)
	}
	if err := c.UnfenceBroker(ctx, 7, 0); !errors.Is(err, ErrStaleBrokerEpoch) {
		t.Fatalf("unfence an unknown broker: %v", err)
	}
	if err := c.UnfenceBroker(ctx, 1, e1); err != nil {
		t.Fatal(err)
	}
	epochs := liveBrokers(t, c, 2, 3)
	epochs[1] = e1
	top, err := c.CreateTopic(ctx, CreateTopic{Name: "t", NumPartitions: 3, ReplicationFactor: 3})
	if err != nil {
		t.Fatal(err)
	}
	// Fence the leader of partition 0: another ISR member takes over.
	p0 := top.Partitions[0]
	lead := p0.Leader
	if err := c.FenceBroker(ctx, lead, epochs[lead]); err != nil {
		t.Fatal(err)
	}
	got, _ := c.Image().Partition("t", 0)
	if got.Leader == lead || got.Leader == -1 || slices.Contains(got.ISR, lead) || got.LeaderEpoch != p0.LeaderEpoch+1 {
		t.Fatalf("after fencing leader %d: %+v", lead, got)
	}
	if err := c.FenceBroker(ctx, lead, epochs[lead]); err != nil {
		t.Fatalf("fencing again: %v", err)
	}
	if err := c.UnfenceBroker(ctx, lead, epochs[lead]); err != nil {
		t.Fatal(err)
	}
	// Controlled shutdown of broker 2 moves every leadership away.
	if err := c.BeginControlledShutdown(ctx, 2, epochs[2]); err != nil {
		t.Fatal(err)
	}
	im := c.Image()
	if led, _ := im.BrokerPartitions(2); len(led) != 0 || !im.ShouldShutDown(2) {
		t.Fatalf("broker 2 still leads %v (ShouldShutDown %v)", led, im.ShouldShutDown(2))
	}
	if err := c.BeginControlledShutdown(ctx, 2, epochs[2]); err != nil {
		t.Fatalf("repeated controlled shutdown: %v", err)
	}
	if err := c.UnfenceBroker(ctx, 2, epochs[2]); !errors.Is(err, ErrInvalidRequest) {
		t.Fatalf("unfence in controlled shutdown: %v", err)
	}
	if err := c.FenceBroker(ctx, 2, epochs[2]); err != nil {
		t.Fatal(err)
	}
	// Broker 2 restarts: a new epoch, fenced, out of the shutdown.
	e2, err := c.RegisterIncarnation(ctx, BrokerRegistration{ID: 2, Incarnation: [16]byte{2, 2}, Host: "127.0.0.1", Port: 9092})
	if err != nil || e2 <= epochs[2] {
		t.Fatalf("re-registration: %d, %v", e2, err)
	}
	if b, _ := c.Image().Broker(2); !b.Fenced || b.InControlledShutdown {
		t.Fatalf("restarted broker %+v", b)
	}
	if live := c.Image().LiveBrokers(); len(live) != 2 {
		t.Fatalf("live brokers %v", live)
	}
}

func TestControllerAlterPartition(t *testing.T) {
	c := openLeader(t, testConfig(t.TempDir()))
	ctx := testCtx(t)
	epochs := liveBrokers(t, c, 1, 2)
	top, err := c.CreateTopic(ctx, CreateTopic{Name: "t", Assignments: map[int32][]int32{0: {1, 2}, 1: {2, 1}}, NumPartitions: -1, ReplicationFactor: -1})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.AlterPartition(ctx, AlterPartitionRequest{BrokerID: 1, BrokerEpoch: epochs[1] - 1}); !errors.Is(err, ErrStaleBrokerEpoch) {
		t.Fatalf("stale broker epoch: %v", err)
	}
	p0 := top.Partitions[0]
	req := AlterPartitionRequest{BrokerID: 1, BrokerEpoch: epochs[1], Updates: []ISRUpdate{
		{TopicID: top.ID, Partition: 1, LeaderEpoch: 0, PartitionEpoch: 0, NewISR: ISRMembers([]int32{1})}, // not its leader
		{TopicID: top.ID, Partition: 0, LeaderEpoch: p0.LeaderEpoch, PartitionEpoch: p0.PartitionEpoch, NewISR: ISRMembers([]int32{1})},
		{TopicID: [16]byte{9}, Partition: 0}, // unknown topic id
	}}
	res, err := c.AlterPartition(ctx, req)
	if err != nil {
		t.Fatal(err)
	}
	if len(res) != 3 || !errors.Is(res[0].Err, ErrNotPartitionLeader) || res[1].Err != nil || !errors.Is(res[2].Err, ErrUnknownTopicID) {
		t.Fatalf("results %+v", res)
	}
	if s := res[1].State; s.Leader != 1 || !slices.Equal(s.ISR, []int32{1}) || s.PartitionEpoch != 1 || s.LeaderEpoch != 0 {
		t.Fatalf("result state %+v", s)
	}
	if got, _ := c.Image().Partition("t", 0); got.PartitionEpoch != 1 || !slices.Equal(got.ISR, []int32{1}) {
		t.Fatalf("partition after AlterPartition %+v", got)
	}
	// The same request again is stale.
	res, err = c.AlterPartition(ctx, AlterPartitionRequest{BrokerID: 1, BrokerEpoch: epochs[1], Updates: req.Updates[1:2]})
	if err != nil || !errors.Is(res[0].Err, ErrInvalidUpdateVersion) {
		t.Fatalf("stale repeat: %+v, %v", res, err)
	}
	if got := c.Image().UnderReplicatedPartitions(); len(got) != 1 || got[0].Partition != 0 || got[0].Topic != "t" {
		t.Fatalf("under-replicated %+v", got)
	}
	under := c.Image().UnderMinISRPartitions(func(*Topic) int { return 2 })
	if len(under) != 1 || under[0].Partition != 0 {
		t.Fatalf("under min ISR %+v", under)
	}
}

func TestControllerElectLeaders(t *testing.T) {
	c := openLeader(t, testConfig(t.TempDir()))
	ctx := testCtx(t)
	epochs := liveBrokers(t, c, 1, 2)
	if _, err := c.CreateTopic(ctx, CreateTopic{Name: "t", Assignments: map[int32][]int32{0: {1, 2}, 1: {2, 1}}, NumPartitions: -1, ReplicationFactor: -1}); err != nil {
		t.Fatal(err)
	}
	// Nothing to do: the answer for all partitions leaves them out.
	if res, err := c.ElectLeaders(ctx, ElectPreferred, nil); err != nil || len(res) != 0 {
		t.Fatalf("preferred election with preferred leaders: %+v, %v", res, err)
	}
	// Broker 1 restarts: 2 leads everything and 1 comes back in no ISR.
	e1, err := c.RegisterIncarnation(ctx, BrokerRegistration{ID: 1, Incarnation: [16]byte{1, 2}, Host: "h", Port: 1})
	if err != nil {
		t.Fatal(err)
	}
	if err := c.UnfenceBroker(ctx, 1, e1); err != nil {
		t.Fatal(err)
	}
	p0, _ := c.Image().Partition("t", 0)
	if p0.Leader != 2 {
		t.Fatalf("t-0 after restart of 1: %+v", p0)
	}
	res, err := c.ElectLeaders(ctx, ElectPreferred, []TopicPartition{{"t", 0}, {"t", 1}, {"nope", 0}, {"t", 9}})
	if err != nil {
		t.Fatal(err)
	}
	if !errors.Is(res[0].Err, ErrPreferredLeaderNotAvailable) || !errors.Is(res[1].Err, ErrElectionNotNeeded) ||
		!errors.Is(res[2].Err, ErrUnknownTopic) || !errors.Is(res[3].Err, ErrUnknownTopic) {
		t.Fatalf("results %+v", res)
	}
	if _, err := c.AlterPartition(ctx, AlterPartitionRequest{BrokerID: 2, BrokerEpoch: epochs[2], Updates: []ISRUpdate{
		{TopicID: c.Image().TopicByName("t").ID, LeaderEpoch: p0.LeaderEpoch, PartitionEpoch: p0.PartitionEpoch, NewISR: ISRMembers([]int32{1, 2})},
	}}); err != nil {
		t.Fatal(err)
	}
	res, err = c.ElectLeaders(ctx, ElectPreferred, nil)
	if err != nil || len(res) != 1 || res[0].Err != nil || res[0].Leader != 1 || res[0].Topic != "t" || res[0].Partition != 0 {
		t.Fatalf("preferred election over all: %+v, %v", res, err)
	}
	if _, err := c.ElectLeaders(ctx, 3, nil); !errors.Is(err, ErrInvalidRequest) {
		t.Fatalf("unknown election type: %v", err)
	}
	// An unclean election asked for explicitly ignores the config.
	p1, _ := c.Image().Partition("t", 1)
	if _, err := c.AlterPartition(ctx, AlterPartitionRequest{BrokerID: 2, BrokerEpoch: epochs[2], Updates: []ISRUpdate{
		{TopicID: c.Image().TopicByName("t").ID, Partition: 1, LeaderEpoch: p1.LeaderEpoch, PartitionEpoch: p1.PartitionEpoch, NewISR: ISRMembers([]int32{2})},
	}}); err != nil {
		t.Fatal(err)
	}
	if err := c.FenceBroker(ctx, 2, epochs[2]); err != nil {
		t.Fatal(err)
	}
	if p, _ := c.Image().Partition("t", 1); p.Leader != -1 {
		t.Fatalf("t-1 with its only ISR member fenced: %+v", p)
	}
	res, err = c.ElectLeaders(ctx, ElectUnclean, []TopicPartition{{"t", 1}, {"t", 0}})
	if err != nil || res[0].Err != nil || res[0].Leader != 1 || !errors.Is(res[1].Err, ErrElectionNotNeeded) {
		t.Fatalf("unclean election: %+v, %v", res, err)
	}
	if p, _ := c.Image().Partition("t", 1); p.Leader != 1 || !slices.Equal(p.ISR, []int32{1}) || p.LeaderRecoveryState != LeaderRecovering {
		t.Fatalf("t-1 after unclean election: %+v", p)
	}
}

func TestControllerUncleanLeaderElectionConfig(t *testing.T) {
	for _, brokerDefault := range []bool{false, true} {
		cfg := testConfig(t.TempDir())
		cfg.UncleanLeaderElectionEnable = brokerDefault
		c := openLeader(t, cfg)
		ctx := testCtx(t)
		epochs := liveBrokers(t, c, 1, 2)
		mk := func(name string, configs map[string]string) {
			if _, err := c.CreateTopic(ctx, CreateTopic{Name: name, Assignments: map[int32][]int32{0: {1, 2}},
				NumPartitions: -1, ReplicationFactor: -1, Configs: configs}); err != nil {
				t.Fatal(err)
			}
			top := c.Image().TopicByName(name)
			p := top.Partitions[0]
			if _, err := c.AlterPartition(ctx, AlterPartitionRequest{BrokerID: 1, BrokerEpoch: epochs[1], Updates: []ISRUpdate{
				{TopicID: top.ID, LeaderEpoch: p.LeaderEpoch, PartitionEpoch: p.PartitionEpoch, NewISR: ISRMembers([]int32{1})}}}); err != nil {
				t.Fatal(err)
			}
		}
		mk("on", map[string]string{"unclean.leader.election.enable": "True"})
		mk("off", map[string]string{"unclean.leader.election.enable": "false"})
		mk("default", nil)
		// Broker 1, the only ISR member everywhere, dies.
		if err := c.FenceBroker(ctx, 1, epochs[1]); err != nil {
			t.Fatal(err)
		}
		im := c.Image()
		want := map[string]int32{"on": 2, "off": -1, "default": -1}
		if brokerDefault {
			want["default"] = 2
		}
		for name, leader := range want {
			if p, _ := im.Partition(name, 0); p.Leader != leader {
				t.Fatalf("default %v: %s-0 = %+v, want leader %d", brokerDefault, name, p, leader)
			}
		}
		if res, err := c.ElectUncleanLeaders(ctx); err != nil || len(res) != 0 {
			t.Fatalf("nothing left to elect: %+v, %v", res, err)
		}
	}
}

func TestClusterOpsNeedTheController(t *testing.T) {
	cfg := testConfig(t.TempDir())
	cfg.Voters = map[int32]string{1: "127.0.0.1:0", 2: "127.0.0.1:1"}
	c, err := Open(cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	calls := map[string]error{}
	_, calls["RegisterIncarnation"] = c.RegisterIncarnation(ctx, BrokerRegistration{ID: 1, Incarnation: [16]byte{1}})
	calls["FenceBroker"] = c.FenceBroker(ctx, 1, 0)
	calls["UnfenceBroker"] = c.UnfenceBroker(ctx, 1, 0)
	calls["BeginControlledShutdown"] = c.BeginControlledShutdown(ctx, 1, 0)
	_, calls["AlterPartition"] = c.AlterPartition(ctx, AlterPartitionRequest{})
	_, calls["ElectLeaders"] = c.ElectLeaders(ctx, ElectPreferred, nil)
	_, calls["ElectUncleanLeaders"] = c.ElectUncleanLeaders(ctx)
	calls["AddNonvoter"] = c.AddNonvoter(ctx, 3, "127.0.0.1:2")
	for name, err := range calls {
		if !errors.Is(err, ErrNotController) {
			t.Errorf("%s: %v, want ErrNotController", name, err)
		}
	}
}
