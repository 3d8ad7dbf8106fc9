package controller

import (
	"context"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/weir-project/weir/internal/metadata"
)

// fakeClock is a settable clock for session decisions.
type fakeClock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *fakeClock) now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *fakeClock) advance(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

// newService runs a single-node quorum (fast Raft timings) with brokers
// 1-3 as voters, so no registration adds a non-voter.
func newService(t *testing.T) (*Service, *metadata.Controller, *fakeClock) {
	t.Helper()
	q, err := metadata.Open(metadata.Config{
		NodeID: 1, Dir: t.TempDir(), RaftAddr: "127.0.0.1:0",
		Logger:           slog.New(slog.DiscardHandler),
		HeartbeatTimeout: 100 * time.Millisecond, ElectionTimeout: 100 * time.Millisecond, LeaderLeaseTimeout: 50 * time.Millisecond,
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { q.Close() })
	if err := q.WaitLeader(ctx(t)); err != nil {
		t.Fatal(err)
	}
	s := New(Config{Voters: map[int32]string{1: "", 2: "", 3: ""}, SessionTimeout: 2 * time.Second}, q)
	clock := &fakeClock{t: time.Unix(1_700_000_000, 0)}
	s.now = clock.now
	return s, q, clock
}

func ctx(t *testing.T) context.Context {
	c, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	return c
}

func register(t *testing.T, s *Service, id int32, inc byte) int64 {
	t.Helper()
	req := kmsg.NewPtrBrokerRegistrationRequest()
	req.SetVersion(3)
	req.BrokerID, req.IncarnationID = id, [16]byte{inc}
	req.PreviousBrokerEpoch = -1
	l := kmsg.NewBrokerRegistrationRequestListener()
	l.Name, l.Host, l.Port = "PLAINTEXT", "127.0.0.1", uint16(9090+id)
	req.Listeners = append(req.Listeners, l)
	resp, _ := s.Handle(ctx(t), req)
	r := resp.(*kmsg.BrokerRegistrationResponse)
	if err := kerr.ErrorForCode(r.ErrorCode); err != nil {
		t.Fatalf("register %d: %v", id, err)
	}
	return r.BrokerEpoch
}

func heartbeat(t *testing.T, s *Service, id int32, epoch, offset int64, shutdown bool) *kmsg.BrokerHeartbeatResponse {
	t.Helper()
	req := kmsg.NewPtrBrokerHeartbeatRequest()
	req.BrokerID, req.BrokerEpoch, req.CurrentMetadataOffset, req.WantShutdown = id, epoch, offset, shutdown
	resp, _ := s.Handle(ctx(t), req)
	return resp.(*kmsg.BrokerHeartbeatResponse)
}

func TestRegisterHeartbeatUnfenceAndExpire(t *testing.T) {
	s, q, clock := newService(t)
	e2 := register(t, s, 2, 1)
	if r := heartbeat(t, s, 2, e2, e2-1, false); r.ErrorCode != 0 || r.IsCaughtUp || !r.IsFenced {
		t.Fatalf("heartbeat behind the registration: %+v, want fenced and not caught up", r)
	}
	if r := heartbeat(t, s, 2, e2, e2, false); r.ErrorCode != 0 || !r.IsCaughtUp || r.IsFenced {
		t.Fatalf("heartbeat caught up: %+v, want unfenced", r)
	}
	if r := heartbeat(t, s, 2, e2+7, e2, false); r.ErrorCode != kerr.StaleBrokerEpoch.Code {
		t.Fatalf("heartbeat with a wrong epoch: code %d, want STALE_BROKER_EPOCH", r.ErrorCode)
	}
	if r := heartbeat(t, s, 9, 1, 1, false); r.ErrorCode != kerr.BrokerIDNotRegistered.Code {
		t.Fatalf("heartbeat of an unknown broker: code %d", r.ErrorCode)
	}

	// A second process with id 2 while the first is alive is refused.
	req := kmsg.NewPtrBrokerRegistrationRequest()
	req.BrokerID, req.IncarnationID = 2, [16]byte{2}
	req.Listeners = []kmsg.BrokerRegistrationRequestListener{{Name: "PLAINTEXT", Host: "h", Port: 1}}
	resp, _ := s.Handle(ctx(t), req)
	if code := resp.(*kmsg.BrokerRegistrationResponse).ErrorCode; code != kerr.DuplicateBrokerRegistration.Code {
		t.Fatalf("duplicate registration: code %d", code)
	}

	// Silent past the session timeout: fenced.
	clock.advance(3 * time.Second)
	s.expireSessions(ctx(t))
	if b, _ := q.Image().Broker(2); !b.Fenced {
		t.Fatal("broker 2 not fenced after its session expired")
	}
	// Now a new incarnation may register.
	if e := register(t, s, 2, 2); e <= e2 {
		t.Fatalf("new incarnation epoch %d, want above %d", e, e2)
	}
}

// TestFencedBrokerUnfencedOnlyOnceItKnows: a broker whose session
// expired (SIGSTOP, a cut) lost its leaderships in the command that fenced
// it. Its next heartbeat, still at the metadata offset it had applied
// before, does not unfence it: unfenced with that image it would serve,
// as their leader, partitions that moved on without it. Once its offset
// reaches the fencing, it is unfenced.
func TestFencedBrokerUnfencedOnlyOnceItKnows(t *testing.T) {
	s, q, clock := newService(t)
	epochs := map[int32]int64{}
	for id := int32(1); id <= 2; id++ {
		epochs[id] = register(t, s, id, byte(id))
		heartbeat(t, s, id, epochs[id], epochs[id], false)
	}
	top, err := q.CreateTopic(ctx(t), metadata.CreateTopic{Name: "t", NumPartitions: 1, ReplicationFactor: 2})
	if err != nil {
		t.Fatal(err)
	}
	leader := top.Partitions[0].Leader
	other := int32(3) - leader
	applied := int64(q.Image().Index())

	// Only the leader falls silent.
	clock.advance(3 * time.Second)
	heartbeat(t, s, other, epochs[other], int64(q.Image().Index()), false)
	s.expireSessions(ctx(t))
	b, _ := q.Image().Broker(leader)
	if !b.Fenced || b.FencedAt <= applied {
		t.Fatalf("leader %d after its session expired: fenced %v at %d, want fenced after %d", leader, b.Fenced, b.FencedAt, applied)
	}
	if p, _ := q.Image().Partition("t", 0); p.Leader != other {
		t.Fatalf("partition led by %d after fencing %d, want %d", p.Leader, leader, other)
	}
	if r := heartbeat(t, s, leader, epochs[leader], applied, false); r.ErrorCode != 0 || r.IsCaughtUp || !r.IsFenced {
		t.Fatalf("heartbeat from before the fencing: %+v, want fenced and not caught up", r)
	}
	if r := heartbeat(t, s, leader, epochs[leader], b.FencedAt, false); r.ErrorCode != 0 || !r.IsCaughtUp || r.IsFenced {
		t.Fatalf("heartbeat at the fencing: %+v, want unfenced", r)
	}
}

// TestStalledControllerFencesNoOne: a controller that itself stood still
// longer than half the session timeout (SIGSTOP) does not take its
// brokers' silence over that time for theirs: the round after the stall
// renews every session, and only a broker silent for a whole session
// after it is fenced.
func TestStalledControllerFencesNoOne(t *testing.T) {
	s, q, clock := newService(t)
	e := register(t, s, 2, 1)
	heartbeat(t, s, 2, e, e, false)
	var r rounds
	clock.advance(3 * time.Second)
	s.round(ctx(t), &r, 3*time.Second)
	if b, _ := q.Image().Broker(2); b.Fenced {
		t.Fatal("broker 2 fenced in the round after the controller's own 3 s stall")
	}
	clock.advance(time.Second)
	s.round(ctx(t), &r, 250*time.Millisecond)
	if b, _ := q.Image().Broker(2); b.Fenced {
		t.Fatal("broker 2 fenced 1 s after its session was renewed (timeout 2 s)")
	}
	clock.advance(time.Second)
	s.round(ctx(t), &r, 250*time.Millisecond)
	if b, _ := q.Image().Broker(2); !b.Fenced {
		t.Fatal("broker 2 not fenced 2 s after its session was renewed, silent since")
	}
}

func TestAlterPartitionCompareAndSet(t *testing.T) {
	s, q, _ := newService(t)
	for id := int32(1); id <= 2; id++ {
		e := register(t, s, id, byte(id))
		heartbeat(t, s, id, e, e, false)
	}
	top, err := q.CreateTopic(ctx(t), metadata.CreateTopic{Name: "t", NumPartitions: 1, ReplicationFactor: 2})
	if err != nil {
		t.Fatal(err)
	}
	p := top.Partitions[0]
	leader, _ := q.Image().Broker(p.Leader)
	follower := p.Replicas[1]
	if p.Replicas[0] != p.Leader {
		follower = p.Replicas[0]
	}
	alter := func(partitionEpoch int32, isr []int32) kmsg.AlterPartitionResponseTopicPartition {
		req := kmsg.NewPtrAlterPartitionRequest()
		req.SetVersion(2)
		req.BrokerID, req.BrokerEpoch = leader.ID, leader.Epoch
		rt := kmsg.NewAlterPartitionRequestTopic()
		rt.TopicID = top.ID
		rp := kmsg.NewAlterPartitionRequestTopicPartition()
		rp.Partition, rp.LeaderEpoch, rp.PartitionEpoch, rp.NewISR = 0, p.LeaderEpoch, partitionEpoch, isr
		rt.Partitions = append(rt.Partitions, rp)
		req.Topics = append(req.Topics, rt)
		resp, _ := s.Handle(ctx(t), req)
		r := resp.(*kmsg.AlterPartitionResponse)
		if r.ErrorCode != 0 {
			t.Fatalf("alter partition: top-level code %d", r.ErrorCode)
		}
		return r.Topics[0].Partitions[0]
	}
	got := alter(p.PartitionEpoch, []int32{leader.ID})
	if got.ErrorCode != 0 || len(got.ISR) != 1 || got.PartitionEpoch != p.PartitionEpoch+1 {
		t.Fatalf("shrink: %+v", got)
	}
	if stale := alter(p.PartitionEpoch, []int32{leader.ID, follower}); stale.ErrorCode != kerr.InvalidUpdateVersion.Code {
		t.Fatalf("stale partition epoch: code %d, want INVALID_UPDATE_VERSION", stale.ErrorCode)
	}
	if got := alter(got.PartitionEpoch, []int32{leader.ID, follower}); got.ErrorCode != 0 || len(got.ISR) != 2 {
		t.Fatalf("expand: %+v", got)
	}
}

// TestOwnIncarnationRegistersAtOnce: on a broker-and-controller node, the
// broker of this very process (LocalID, LocalIncarnation) re-registers at
// once although its predecessor's session is still live (it died with
// the predecessor's controller, in a kill -9); any other new incarnation
// of a live broker is still refused.
func TestOwnIncarnationRegistersAtOnce(t *testing.T) {
	s, _, _ := newService(t)
	s.cfg.LocalID, s.cfg.LocalIncarnation = 1, [16]byte{7}
	e1 := register(t, s, 1, 3) // the crashed process's incarnation
	e2 := register(t, s, 2, 1)
	for id, e := range map[int32]int64{1: e1, 2: e2} {
		if r := heartbeat(t, s, id, e, e, false); r.ErrorCode != 0 || r.IsFenced {
			t.Fatalf("broker %d not unfenced: %+v", id, r)
		}
	}

	req := kmsg.NewPtrBrokerRegistrationRequest()
	req.BrokerID, req.IncarnationID = 2, [16]byte{2}
	req.Listeners = []kmsg.BrokerRegistrationRequestListener{{Name: "PLAINTEXT", Host: "h", Port: 1}}
	resp, _ := s.Handle(ctx(t), req)
	if code := resp.(*kmsg.BrokerRegistrationResponse).ErrorCode; code != kerr.DuplicateBrokerRegistration.Code {
		t.Fatalf("new incarnation of live broker 2: code %d, want DUPLICATE_BROKER_REGISTRATION", code)
	}
	req.BrokerID, req.IncarnationID = 1, [16]byte{8} // id 1, not this process
	resp, _ = s.Handle(ctx(t), req)
	if code := resp.(*kmsg.BrokerRegistrationResponse).ErrorCode; code != kerr.DuplicateBrokerRegistration.Code {
		t.Fatalf("foreign incarnation of live broker 1: code %d, want DUPLICATE_BROKER_REGISTRATION", code)
	}
	if e := register(t, s, 1, 7); e <= e1 {
		t.Fatalf("own incarnation epoch %d, want above %d", e, e1)
	}
}
