package groups

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/weir-project/weir/test/harness"
)

// TestBrokerKilledKeepsGroupsAndOffsets commits offsets for a consumer
// group and a simple (offsets-only) group, kills the broker with SIGKILL,
// restarts it, and finds both groups and every offset again; the live
// member's group is still described with its member until the session
// runs out. __consumer_offsets uses the default 50 partitions here.
func TestBrokerKilledKeepsGroupsAndOffsets(t *testing.T) {
	b := harness.StartBroker(t, "group.initial.rebalance.delay.ms=0")
	checkLog(t, b)
	adm := newAdmin(t, b)
	const topic = "durable"
	createTopic(t, adm, topic, 3)
	produce(t, b, topic, "v", 90)

	// A static member: closing it sends no LeaveGroup, so the group is
	// persisted with the member in it.
	m := startMember(t, b, "durable-0", "dg", topic, kgo.RangeBalancer(), kgo.InstanceID("durable-instance"))
	waitStable(t, adm, "dg", topic, 3, 1)
	harness.WaitFor(t, 60*time.Second, "all offsets committed", func() bool {
		var total int64
		resp, err := adm.FetchOffsets(context.Background(), "dg")
		if err != nil {
			return false
		}
		for _, o := range resp[topic] {
			total += o.At
		}
		return total == 90
	})
	simple := kadm.Offsets{}
	simple.Add(kadm.Offset{Topic: topic, Partition: 1, At: 17, LeaderEpoch: -1, Metadata: "by hand"})
	if err := adm.CommitAllOffsets(harness.Ctx(t, opTimeout), "simple", simple); err != nil {
		t.Fatalf("simple commit: %v", err)
	}
	before := committed(t, adm, "dg", topic)
	m.Close()

	b.Kill()
	b.Restart()
	adm2 := newAdmin(t, b)

	if got := committed(t, adm2, "dg", topic); !equalOffsets(got, before) {
		t.Errorf("offsets after restart %v, want %v", got, before)
	}
	if got := committed(t, adm2, "simple", topic); got[1] != 17 || len(got) != 1 {
		t.Errorf("simple group offsets after restart %v", got)
	}
	resp, err := adm2.FetchOffsets(harness.Ctx(t, opTimeout), "simple")
	if err != nil || resp[topic][1].Metadata != "by hand" {
		t.Errorf("metadata after restart: %+v %v", resp, err)
	}
	listed, err := adm2.ListGroups(harness.Ctx(t, opTimeout))
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := listed["dg"]; !ok {
		t.Errorf("group dg not listed after restart: %v", listed.Groups())
	}
	if _, ok := listed["simple"]; !ok {
		t.Errorf("group simple not listed after restart: %v", listed.Groups())
	}
	d := describe(t, adm2, "dg")
	if d.State != "Stable" || len(d.Members) != 1 || d.Protocol != "range" || d.Members[0].InstanceID == nil || *d.Members[0].InstanceID != "durable-instance" {
		t.Errorf("dg after restart: state %s, %d members, protocol %q", d.State, len(d.Members), d.Protocol)
	}
	// Its member is gone (the client was stopped): the session expires.
	harness.WaitFor(t, 60*time.Second, "the dead member's session to expire", func() bool {
		ds, err := adm2.DescribeGroups(context.Background(), "dg")
		return err == nil && ds["dg"].State == "Empty"
	})
}

func equalOffsets(a, b map[int32]int64) bool {
	if len(a) != len(b) {
		return false
	}
	for p, o := range a {
		if b[p] != o {
			return false
		}
	}
	return true
}

// TestBadCommitsChangeNothing sends OffsetCommits that Kafka refuses: a
// stale generation, an unknown member, an outsider into a live group, an
// unknown topic or partition. Each gets Kafka's code and the committed
// offsets stay as they were.
func TestBadCommitsChangeNothing(t *testing.T) {
	b := startBroker(t)
	adm := newAdmin(t, b)
	const topic, groupID = "guarded", "bad-commits"
	createTopic(t, adm, topic, 2)
	produce(t, b, topic, "v", 20)
	cl := b.Client()
	ctx := harness.Ctx(t, opTimeout)

	// Form a one-member group by hand (v4+ join: member id required first).
	join := func(memberID string) *kmsg.JoinGroupResponse {
		req := kmsg.NewPtrJoinGroupRequest()
		req.Version = 5
		req.Group, req.MemberID, req.ProtocolType = groupID, memberID, "consumer"
		req.SessionTimeoutMillis, req.RebalanceTimeoutMillis = sessionMs, 10000
		meta := kmsg.NewConsumerMemberMetadata()
		meta.Topics = []string{topic}
		p := kmsg.NewJoinGroupRequestProtocol()
		p.Name, p.Metadata = "range", meta.AppendTo(nil)
		req.Protocols = append(req.Protocols, p)
		// The coordinator may still be loading the just-created
		// __consumer_offsets: real clients retry that, so do we.
		for {
			resp, err := req.RequestWith(ctx, cl)
			if err != nil {
				t.Fatal(err)
			}
			if resp.ErrorCode != kerr.CoordinatorLoadInProgress.Code {
				return resp
			}
			time.Sleep(50 * time.Millisecond)
		}
	}
	first := join("")
	if first.ErrorCode != kerr.MemberIDRequired.Code {
		t.Fatalf("first join: %v", kerr.ErrorForCode(first.ErrorCode))
	}
	joined := join(first.MemberID)
	if joined.ErrorCode != 0 || joined.Generation < 1 {
		t.Fatalf("join: %v gen %d", kerr.ErrorForCode(joined.ErrorCode), joined.Generation)
	}
	sync := kmsg.NewPtrSyncGroupRequest()
	sync.Group, sync.MemberID, sync.Generation = groupID, joined.MemberID, joined.Generation
	if resp, err := sync.RequestWith(ctx, cl); err != nil || resp.ErrorCode != 0 {
		t.Fatalf("sync: %v %v", err, resp)
	}

	commit := func(member string, gen int32, topic string, partition int32, offset int64) int16 {
		req := kmsg.NewPtrOffsetCommitRequest()
		req.Version = 7
		req.Group, req.MemberID, req.Generation = groupID, member, gen
		rt := kmsg.NewOffsetCommitRequestTopic()
		rt.Topic = topic
		rp := kmsg.NewOffsetCommitRequestTopicPartition()
		rp.Partition, rp.Offset = partition, offset
		rt.Partitions = append(rt.Partitions, rp)
		req.Topics = append(req.Topics, rt)
		resp, err := req.RequestWith(ctx, cl)
		if err != nil {
			t.Fatal(err)
		}
		return resp.Topics[0].Partitions[0].ErrorCode
	}
	if code := commit(joined.MemberID, joined.Generation, topic, 0, 5); code != 0 {
		t.Fatalf("good commit: %v", kerr.ErrorForCode(code))
	}
	cases := []struct {
		name      string
		member    string
		gen       int32
		topic     string
		partition int32
		want      *kerr.Error
	}{
		{"stale generation", joined.MemberID, joined.Generation - 1, topic, 0, kerr.IllegalGeneration},
		{"future generation", joined.MemberID, joined.Generation + 1, topic, 0, kerr.IllegalGeneration},
		{"unknown member", "intruder", joined.Generation, topic, 0, kerr.UnknownMemberID},
		{"outsider into a live group", "", -1, topic, 0, kerr.UnknownMemberID},
		{"unknown topic", joined.MemberID, joined.Generation, "no-such-topic", 0, kerr.UnknownTopicOrPartition},
		{"unknown partition", joined.MemberID, joined.Generation, topic, 7, kerr.UnknownTopicOrPartition},
	}
	for _, tc := range cases {
		code := commit(tc.member, tc.gen, tc.topic, tc.partition, 9)
		if !errors.Is(kerr.ErrorForCode(code), tc.want) {
			t.Errorf("%s: %v, want %v", tc.name, kerr.ErrorForCode(code), tc.want)
		}
	}
	got := committed(t, adm, groupID, topic)
	if len(got) != 1 || got[0] != 5 {
		t.Errorf("committed offsets %v, want only partition 0 at 5", got)
	}
	resp, err := adm.FetchOffsets(ctx, groupID)
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := resp["no-such-topic"]; ok {
		t.Error("an offset for an unknown topic was stored")
	}

	// A heartbeat from the stale generation is fenced too, and a group
	// with members cannot be deleted.
	hb := kmsg.NewPtrHeartbeatRequest()
	hb.Group, hb.MemberID, hb.Generation = groupID, joined.MemberID, joined.Generation-1
	if r, err := hb.RequestWith(ctx, cl); err != nil || r.ErrorCode != kerr.IllegalGeneration.Code {
		t.Errorf("stale heartbeat: %v %v", err, r)
	}
	del, err := adm.DeleteGroup(ctx, groupID)
	if err == nil {
		err = del.Err
	}
	if !errors.Is(err, kerr.NonEmptyGroup) {
		t.Errorf("delete live group: %v", err)
	}
}

// TestFindCoordinator checks batched lookups (v4+), the old single-key
// form, transactions (not served yet) and the internal topic's settings.
func TestFindCoordinator(t *testing.T) {
	b := startBroker(t)
	cl := b.Client()
	ctx := harness.Ctx(t, opTimeout)
	req := kmsg.NewPtrFindCoordinatorRequest()
	req.Version = 4
	req.CoordinatorKeys = []string{"a", "b", "c"}
	resp, err := req.RequestWith(ctx, cl)
	if err != nil {
		t.Fatal(err)
	}
	if len(resp.Coordinators) != 3 {
		t.Fatalf("coordinators %+v", resp.Coordinators)
	}
	for _, c := range resp.Coordinators {
		if c.ErrorCode != 0 || c.NodeID != 1 || c.Port <= 0 {
			t.Errorf("coordinator for %s: %+v", c.Key, c)
		}
	}
	old := kmsg.NewPtrFindCoordinatorRequest()
	old.Version = 0
	old.CoordinatorKey = "legacy"
	oresp, err := old.RequestWith(ctx, cl)
	if err != nil || oresp.ErrorCode != 0 || oresp.NodeID != 1 {
		t.Errorf("v0: %+v %v", oresp, err)
	}
	txn := kmsg.NewPtrFindCoordinatorRequest()
	txn.Version = 4
	txn.CoordinatorType = 1
	txn.CoordinatorKeys = []string{"tx"}
	tresp, err := txn.RequestWith(ctx, cl)
	if err != nil || tresp.Coordinators[0].ErrorCode != kerr.CoordinatorNotAvailable.Code {
		t.Errorf("transaction coordinator: %+v %v", tresp, err)
	}

	adm := newAdmin(t, b)
	td, err := adm.ListTopicsWithInternal(ctx, "__consumer_offsets")
	if err != nil {
		t.Fatal(err)
	}
	if d := td["__consumer_offsets"]; !d.IsInternal || len(d.Partitions) != 5 {
		t.Errorf("__consumer_offsets: internal %v, %d partitions", d.IsInternal, len(d.Partitions))
	}
	cfgs, err := adm.DescribeTopicConfigs(ctx, "__consumer_offsets")
	if err != nil {
		t.Fatal(err)
	}
	rc, _ := cfgs.On("__consumer_offsets", nil)
	for _, c := range rc.Configs {
		if c.Key == "cleanup.policy" && c.MaybeValue() != "compact" {
			t.Errorf("cleanup.policy %q", c.MaybeValue())
		}
	}
}
