package controller

import (
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/weir-project/weir/internal/metadata"
)

func describe(t *testing.T, s *Service, topic string) *kmsg.DescribeQuorumResponse {
	t.Helper()
	req := kmsg.NewPtrDescribeQuorumRequest()
	rt := kmsg.NewDescribeQuorumRequestTopic()
	rt.Topic = topic
	rt.Partitions = []kmsg.DescribeQuorumRequestTopicPartition{kmsg.NewDescribeQuorumRequestTopicPartition()}
	req.Topics = append(req.Topics, rt)
	resp, err := s.Handle(ctx(t), req)
	if err != nil {
		t.Fatal(err)
	}
	return resp.(*kmsg.DescribeQuorumResponse)
}

// TestDescribeQuorumReportsHeartbeats: the leader describes itself from
// Raft and a heartbeating broker's offset from its heartbeat; a follower
// that has reported the leader's offset counts as caught up.
func TestDescribeQuorumReportsHeartbeats(t *testing.T) {
	s, q, _ := newService(t)
	if r := describe(t, s, "other"); r.ErrorCode != kerr.UnknownTopicOrPartition.Code {
		t.Fatalf("DescribeQuorum of another topic: code %d", r.ErrorCode)
	}
	e1 := register(t, s, 1, 1)
	heartbeat(t, s, 1, e1, int64(q.Image().Index()), false)
	r := describe(t, s, clusterMetadataTopic)
	p := r.Topics[0].Partitions[0]
	if p.ErrorCode != 0 || p.LeaderID != 1 || p.HighWatermark <= 0 || len(p.CurrentVoters) != 1 || len(p.Observers) != 0 {
		t.Fatalf("quorum %+v", p)
	}
	if v := p.CurrentVoters[0]; v.ReplicaID != 1 || v.LogEndOffset < p.HighWatermark || v.LastCaughtUpTimestamp <= 0 {
		t.Fatalf("leader state %+v", v)
	}
	if len(r.Nodes) != 1 || r.Nodes[0].NodeID != 1 || len(r.Nodes[0].Listeners) != 1 {
		t.Fatalf("nodes %+v", r.Nodes)
	}
	s.mu.Lock()
	ss := s.sessions[1]
	s.mu.Unlock()
	if ss.offset < e1 || ss.caughtUp.IsZero() {
		t.Fatalf("session %+v", ss)
	}
}

// TestAddRaftVoterRefusals: a node that is not following the log times
// out (REQUEST_TIMED_OUT, within the request's timeout); a broker-only
// node, which follows it at its broker listener, is refused.
func TestAddRaftVoterRefusals(t *testing.T) {
	s, q, _ := newService(t)
	add := func(id int32, port uint16, timeout int32) *kmsg.AddRaftVoterResponse {
		t.Helper()
		req := kmsg.NewPtrAddRaftVoterRequest()
		req.VoterID, req.TimeoutMillis = id, timeout
		l := kmsg.NewAddRaftVoterRequestListener()
		l.Name, l.Host, l.Port = "CONTROLLER", "127.0.0.1", port
		req.Listeners = append(req.Listeners, l)
		resp, _ := s.Handle(ctx(t), req)
		return resp.(*kmsg.AddRaftVoterResponse)
	}
	start := time.Now()
	if r := add(8, 1, 300); r.ErrorCode != kerr.RequestTimedOut.Code || time.Since(start) > 10*time.Second {
		t.Fatalf("absent node: code %d after %v", r.ErrorCode, time.Since(start))
	}
	// Node 8 as a broker-only node: a non-voter at its broker address.
	if err := q.AddNonvoter(ctx(t), 8, "127.0.0.1:9098"); err != nil {
		t.Fatal(err)
	}
	if _, err := q.RegisterIncarnation(ctx(t), metadata.BrokerRegistration{ID: 8, Incarnation: [16]byte{8}, Host: "127.0.0.1", Port: 9098}); err != nil {
		t.Fatal(err)
	}
	r := add(8, 9093, 5000)
	if r.ErrorCode != kerr.InvalidRequest.Code || r.ErrorMessage == nil {
		t.Fatalf("broker-only node: code %d message %v", r.ErrorCode, r.ErrorMessage)
	}
	if st, _ := q.Quorum(); len(st.Voters()) != 1 {
		t.Fatalf("voters changed: %+v", st)
	}
}
