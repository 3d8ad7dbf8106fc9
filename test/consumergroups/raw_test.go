package consumergroups

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/kversion"

	"github.com/weir-project/weir/test/harness"
)

// rawMember is a KIP-848 member driven by hand with ConsumerGroupHeartbeat
// requests: it owns what it was last assigned and reports it.
type rawMember struct {
	t     *testing.T
	cl    *kgo.Client
	group string
	id    string
	inst  *string
	epoch int32
	owned map[[16]byte][]int32
}

func newRawMember(t *testing.T, cl *kgo.Client, group, id string) *rawMember {
	return &rawMember{t: t, cl: cl, group: group, id: id, owned: map[[16]byte][]int32{}}
}

func (m *rawMember) send(req *kmsg.ConsumerGroupHeartbeatRequest) *kmsg.ConsumerGroupHeartbeatResponse {
	m.t.Helper()
	resp, err := req.RequestWith(harness.Ctx(m.t, opTimeout), m.cl)
	if err != nil {
		m.t.Fatalf("heartbeat of %s: %v", m.id, err)
	}
	if resp.ErrorCode == 0 {
		m.epoch = resp.MemberEpoch
		if resp.Assignment != nil {
			m.owned = map[[16]byte][]int32{}
			for _, tp := range resp.Assignment.Topics {
				m.owned[tp.TopicID] = slices.Clone(tp.Partitions)
			}
		}
	}
	return resp
}

func (m *rawMember) request(epoch int32) *kmsg.ConsumerGroupHeartbeatRequest {
	req := kmsg.NewPtrConsumerGroupHeartbeatRequest()
	req.Group, req.MemberID, req.MemberEpoch, req.InstanceID = m.group, m.id, epoch, m.inst
	return req
}

func (m *rawMember) join(topics ...string) *kmsg.ConsumerGroupHeartbeatResponse {
	// The first request to a group may find its coordinator still loading
	// __consumer_offsets (just created): real clients retry, so do we.
	deadline := time.Now().Add(opTimeout)
	for {
		req := m.request(0)
		req.RebalanceTimeoutMillis = 20000
		req.SubscribedTopicNames = topics
		req.Topics = []kmsg.ConsumerGroupHeartbeatRequestTopic{}
		resp := m.send(req)
		if resp.ErrorCode != kerr.CoordinatorLoadInProgress.Code || time.Now().After(deadline) {
			return resp
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// beat is a full heartbeat: it reports every owned partition.
func (m *rawMember) beat() *kmsg.ConsumerGroupHeartbeatResponse {
	req := m.request(m.epoch)
	req.Topics = []kmsg.ConsumerGroupHeartbeatRequestTopic{}
	for id, ps := range m.owned {
		req.Topics = append(req.Topics, kmsg.ConsumerGroupHeartbeatRequestTopic{TopicID: id, Partitions: ps})
	}
	return m.send(req)
}

func (m *rawMember) count() int {
	n := 0
	for _, ps := range m.owned {
		n += len(ps)
	}
	return n
}

func wantCode(t *testing.T, what string, got int16, want *kerr.Error) {
	t.Helper()
	code := int16(0)
	if want != nil {
		code = want.Code
	}
	if got != code {
		t.Fatalf("%s: error %v, want %v", what, kerr.ErrorForCode(got), want)
	}
}

// settleRaw heartbeats the members in turn until none changes, checking
// after every response that no partition is owned by two of them.
func settleRaw(t *testing.T, ms ...*rawMember) {
	t.Helper()
	for round := 0; round < 30; round++ {
		changed := false
		for _, m := range ms {
			e, n := m.epoch, m.count()
			wantCode(t, "heartbeat of "+m.id, m.beat().ErrorCode, nil)
			seen := map[string]string{}
			for _, o := range ms {
				for id, ps := range o.owned {
					for _, p := range ps {
						k := fmt.Sprintf("%x-%d", id, p)
						if other, dup := seen[k]; dup {
							t.Fatalf("partition %s owned by %s and %s", k, other, o.id)
						}
						seen[k] = o.id
					}
				}
			}
			changed = changed || m.epoch != e || m.count() != n
		}
		if !changed {
			return
		}
	}
	t.Fatal("members did not settle")
}

// TestRawProtocol drives simulated members through joins, reconciliation
// (a partition moves only after its owner released it), a leave, fencing
// and Kafka's error codes for bad input, and checks offset commits with
// member epochs.
func TestRawProtocol(t *testing.T) {
	b := startBroker(t)
	cl := b.Client()
	adm := kadm.NewClient(cl)
	createTopic(t, adm, "raw", 6)
	const g = "raw-group"

	a, bm, c := newRawMember(t, cl, g, "member-a"), newRawMember(t, cl, g, "member-b"), newRawMember(t, cl, g, "member-c")
	wantCode(t, "join a", a.join("raw").ErrorCode, nil)
	if a.count() != 6 || a.epoch != 1 {
		t.Fatalf("a joined at epoch %d with %d partitions", a.epoch, a.count())
	}
	resp := bm.join("raw")
	wantCode(t, "join b", resp.ErrorCode, nil)
	if bm.count() != 0 || resp.HeartbeatIntervalMillis != 500 {
		t.Fatalf("b got %v before a released anything (interval %d)", bm.owned, resp.HeartbeatIntervalMillis)
	}
	wantCode(t, "join c", c.join("raw").ErrorCode, nil)
	settleRaw(t, a, bm, c)
	for _, m := range []*rawMember{a, bm, c} {
		if m.count() != 2 {
			t.Fatalf("%s owns %v, want 2 partitions", m.id, m.owned)
		}
	}
	d, err := describeCG(harness.Ctx(t, opTimeout), cl, g)
	if err != nil || d.State != "Stable" || d.AssignorName != "uniform" || len(d.Members) != 3 {
		t.Fatalf("described %+v %v", d, err)
	}

	// Bad input, answered with Kafka's codes.
	wantCode(t, "newer epoch", a.send(a.request(a.epoch+5)).ErrorCode, kerr.FencedMemberEpoch)
	ghost := newRawMember(t, cl, g, "ghost")
	wantCode(t, "unknown member", ghost.send(ghost.request(3)).ErrorCode, kerr.UnknownMemberID)
	bad := newRawMember(t, cl, g, "bad")
	req := bad.request(0)
	req.RebalanceTimeoutMillis, req.SubscribedTopicNames, req.Topics = 1000, []string{"raw"}, []kmsg.ConsumerGroupHeartbeatRequestTopic{}
	name := "roundrobin"
	req.ServerAssignor = &name
	wantCode(t, "unknown assignor", bad.send(req).ErrorCode, kerr.UnsupportedAssignor)
	req.ServerAssignor, req.RebalanceTimeoutMillis = nil, -1
	wantCode(t, "join without rebalance timeout", bad.send(req).ErrorCode, kerr.InvalidRequest)
	req.MemberID, req.RebalanceTimeoutMillis = "", 1000
	wantCode(t, "v1 join without member id", bad.send(req).ErrorCode, kerr.InvalidRequest)

	// Static members: a second process with the same instance id.
	inst := "static-1"
	s1, s2 := newRawMember(t, cl, g, "static-a"), newRawMember(t, cl, g, "static-b")
	s1.inst, s2.inst = &inst, &inst
	wantCode(t, "static join", s1.join("raw").ErrorCode, nil)
	wantCode(t, "same instance id", s2.join("raw").ErrorCode, kerr.UnreleasedInstanceID)
	settleRaw(t, a, bm, c, s1)

	// Commits carry the member epoch (OffsetCommit v9).
	commit := func(version int16, m *rawMember, epoch int32) int16 {
		t.Helper()
		req := kmsg.NewPtrOffsetCommitRequest()
		req.Version, req.Group, req.MemberID, req.Generation = version, g, m.id, epoch
		rt := kmsg.NewOffsetCommitRequestTopic()
		rt.Topic = "raw"
		for _, ps := range m.owned {
			for _, p := range ps {
				rp := kmsg.NewOffsetCommitRequestTopicPartition()
				rp.Partition, rp.Offset = p, 1
				rt.Partitions = append(rt.Partitions, rp)
			}
		}
		req.Topics = append(req.Topics, rt)
		resp, err := req.RequestWith(harness.Ctx(t, opTimeout), kmsgClient(t, b, version))
		if err != nil {
			t.Fatal(err)
		}
		return resp.Topics[0].Partitions[0].ErrorCode
	}
	wantCode(t, "commit at the member epoch", commit(9, a, a.epoch), nil)
	wantCode(t, "commit at a future epoch", commit(9, a, a.epoch+1), kerr.StaleMemberEpoch)
	wantCode(t, "commit with v8", commit(8, a, a.epoch), kerr.UnsupportedVersion)

	// c leaves; a, b and s1 share its partitions, never owning one twice.
	resp = c.send(c.request(-1))
	wantCode(t, "leave", resp.ErrorCode, nil)
	if resp.MemberEpoch != -1 {
		t.Fatalf("leave answered epoch %d", resp.MemberEpoch)
	}
	c.owned = nil
	settleRaw(t, a, bm, s1)
	if a.count()+bm.count()+s1.count() != 6 {
		t.Fatalf("after leave: %v %v %v", a.owned, bm.owned, s1.owned)
	}
	wantCode(t, "heartbeat after leaving", c.beat().ErrorCode, kerr.UnknownMemberID)

	// b goes silent: after group.consumer.session.timeout.ms (6 s) it is
	// fenced, and the others take its partitions.
	harness.WaitFor(t, 60*time.Second, "silent member expired", func() bool {
		settleRaw(t, a, s1)
		return a.count()+s1.count() == 6
	})
	wantCode(t, "heartbeat of the expired member", bm.beat().ErrorCode, kerr.UnknownMemberID)
}

// kmsgClient pins OffsetCommit at a version, for version-specific rules.
func kmsgClient(t *testing.T, b *harness.Broker, commitVersion int16) *kgo.Client {
	t.Helper()
	v := kversion.Stable()
	v.SetMaxKeyVersion(kmsg.OffsetCommit.Int16(), commitVersion)
	cl := b.Client(kgo.MaxVersions(v))
	t.Cleanup(cl.Close)
	return cl
}

// kmsgClientJoinV3 sends JoinGroup v3 (member ids given at once).
func kmsgClientJoinV3(t *testing.T, b *harness.Broker) *kgo.Client {
	t.Helper()
	v := kversion.Stable()
	v.SetMaxKeyVersion(kmsg.JoinGroup.Int16(), 3)
	cl := b.Client(kgo.MaxVersions(v))
	t.Cleanup(cl.Close)
	return cl
}

// TestClassicAndConsumerGroupsDoNotMix: a group with classic members
// refuses KIP-848 members and the other way round (GROUP_ID_NOT_FOUND,
// Kafka's answer when online migration is off); ListGroups v5 tells the
// types apart and filters by them.
func TestClassicAndConsumerGroupsDoNotMix(t *testing.T) {
	b := startBroker(t, "group.initial.rebalance.delay.ms=0")
	cl := b.Client()
	adm := kadm.NewClient(cl)
	createTopic(t, adm, "mix", 2)

	// A classic franz-go member holds group "classic".
	classic, err := kgo.NewClient(kgo.SeedBrokers(b.Addr), kgo.ConsumerGroup("classic"), kgo.ConsumeTopics("mix"))
	if err != nil {
		t.Fatal(err)
	}
	defer classic.Close()
	harness.WaitFor(t, 60*time.Second, "classic group stable", func() bool {
		ds, err := adm.DescribeGroups(context.Background(), "classic")
		return err == nil && ds["classic"].State == "Stable"
	})
	m := newRawMember(t, cl, "classic", "kip848")
	wantCode(t, "KIP-848 join to a classic group", m.join("mix").ErrorCode, kerr.GroupIDNotFound)

	// A KIP-848 member holds group "modern": a classic JoinGroup fails.
	m2 := newRawMember(t, cl, "modern", "kip848")
	wantCode(t, "join modern", m2.join("mix").ErrorCode, nil)
	jr := kmsg.NewPtrJoinGroupRequest()
	jr.Group, jr.SessionTimeoutMillis, jr.RebalanceTimeoutMillis, jr.ProtocolType = "modern", 10000, 10000, "consumer"
	jr.MemberID = "x"
	jr.Protocols = []kmsg.JoinGroupRequestProtocol{{Name: "range", Metadata: []byte{0, 0}}}
	jresp, err := jr.RequestWith(harness.Ctx(t, opTimeout), cl)
	if err != nil {
		t.Fatal(err)
	}
	wantCode(t, "classic join to a consumer group", jresp.ErrorCode, kerr.GroupIDNotFound)

	lg := kmsg.NewPtrListGroupsRequest()
	lresp, err := lg.RequestWith(harness.Ctx(t, opTimeout), cl)
	if err != nil {
		t.Fatal(err)
	}
	types := map[string]string{}
	for _, g := range lresp.Groups {
		types[g.Group] = g.GroupType + "/" + g.ProtocolType + "/" + g.GroupState
	}
	if types["classic"] != "classic/consumer/Stable" || types["modern"] != "consumer/consumer/Stable" {
		t.Fatalf("ListGroups: %v", types)
	}
	lg.TypesFilter = []string{"consumer"}
	if lresp, err = lg.RequestWith(harness.Ctx(t, opTimeout), cl); err != nil || len(lresp.Groups) != 1 || lresp.Groups[0].Group != "modern" {
		t.Fatalf("ListGroups of type consumer: %+v %v", lresp, err)
	}
	// ConsumerGroupDescribe of a classic group: GROUP_ID_NOT_FOUND.
	d, err := describeCG(harness.Ctx(t, opTimeout), cl, "classic")
	if err != nil {
		t.Fatal(err)
	}
	wantCode(t, "describe classic group as consumer group", d.ErrorCode, kerr.GroupIDNotFound)

	// Once the KIP-848 member leaves, the empty group takes classic members.
	wantCode(t, "leave", m2.send(m2.request(-1)).ErrorCode, nil)
	jr.MemberID = ""
	if jresp, err = jr.RequestWith(harness.Ctx(t, opTimeout), kmsgClientJoinV3(t, b)); err != nil {
		t.Fatal(err)
	}
	wantCode(t, "classic join to an empty consumer group", jresp.ErrorCode, nil)
}
