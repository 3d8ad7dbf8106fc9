package controller

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strconv"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/weir-project/weir/internal/errcode"
	"github.com/weir-project/weir/internal/metadata"
)

// The quorum and cluster operations (KIP-853's DescribeQuorum,
// AddRaftVoter and RemoveRaftVoter; UnregisterBroker; a controller's
// ControllerRegistration). Clients reach them through any broker, which
// forwards them here.

// clusterMetadataTopic names the metadata log in DescribeQuorum, as Kafka
// names its KRaft log; weir's is a Raft log of one partition too.
const clusterMetadataTopic = "__cluster_metadata"

// notLeader is how the Raft APIs say "ask the leader" (Kafka's KRaft
// answers NOT_LEADER_OR_FOLLOWER; the forwarding broker then tries the
// next controller).
var notLeader = kerr.NotLeaderForPartition

// isOpsRequest reports whether req is one of this file's APIs.
func isOpsRequest(req kmsg.Request) bool {
	switch req.(type) {
	case *kmsg.ControllerRegistrationRequest, *kmsg.DescribeQuorumRequest, *kmsg.AddRaftVoterRequest,
		*kmsg.RemoveRaftVoterRequest, *kmsg.UnregisterBrokerRequest:
		return true
	}
	return false
}

// handleOps answers one of isOpsRequest's requests.
func (s *Service) handleOps(ctx context.Context, req kmsg.Request) kmsg.Response {
	switch r := req.(type) {
	case *kmsg.ControllerRegistrationRequest:
		return s.registerController(ctx, r)
	case *kmsg.DescribeQuorumRequest:
		return s.describeQuorum(r)
	case *kmsg.AddRaftVoterRequest:
		return s.addRaftVoter(ctx, r)
	case *kmsg.RemoveRaftVoterRequest:
		return s.removeRaftVoter(ctx, r)
	case *kmsg.UnregisterBrokerRequest:
		return s.unregisterBroker(ctx, r)
	}
	return nil
}

func (s *Service) registerController(ctx context.Context, r *kmsg.ControllerRegistrationRequest) kmsg.Response {
	resp := r.ResponseKind().(*kmsg.ControllerRegistrationResponse)
	if !s.leader() {
		resp.ErrorCode = kerr.NotController.Code
		return resp
	}
	rec := metadata.ControllerRecord{ID: r.ControllerID, Incarnation: r.IncarnationID}
	for _, l := range r.Listeners {
		rec.Endpoints = append(rec.Endpoints, metadata.Endpoint{Listener: l.Name, Host: l.Host, Port: int32(l.Port), SecurityProtocol: securityProtocol(l.SecurityProtocol)})
	}
	if err := s.q.RegisterController(ctx, rec); err != nil {
		resp.ErrorCode, resp.ErrorMessage = errcode.Code(err), errcode.Message(err)
		s.log.Warn("controller registration failed", "controller", r.ControllerID, "err", err)
		return resp
	}
	s.log.Info("controller registered", "controller", r.ControllerID, "raft", rec.RaftAddr())
	return resp
}

// describeQuorum answers DescribeQuorum (v0-2) from the leader: the term,
// the commit index as high watermark, and each voter and observer. Raft
// does not expose its followers' match indexes, so a follower's log end
// offset and fetch times are what its broker heartbeats last said (the
// index of the metadata it has applied): -1 where none came to this
// leader yet.
func (s *Service) describeQuorum(r *kmsg.DescribeQuorumRequest) kmsg.Response {
	resp := r.ResponseKind().(*kmsg.DescribeQuorumResponse)
	if len(r.Topics) != 1 || r.Topics[0].Topic != clusterMetadataTopic ||
		len(r.Topics[0].Partitions) != 1 || r.Topics[0].Partitions[0].Partition != 0 {
		resp.ErrorCode = kerr.UnknownTopicOrPartition.Code
		return resp
	}
	rt := kmsg.NewDescribeQuorumResponseTopic()
	rt.Topic = clusterMetadataTopic
	rp := kmsg.NewDescribeQuorumResponseTopicPartition()
	st, err := s.q.Quorum()
	switch {
	case !s.leader():
		rp.ErrorCode = notLeader.Code
		rp.LeaderID, rp.LeaderEpoch = st.LeaderID, int32(st.Term)
	case err != nil:
		rp.ErrorCode, rp.ErrorMessage = errcode.Code(err), errcode.Message(err)
	default:
		rp.LeaderID, rp.LeaderEpoch, rp.HighWatermark = st.LeaderID, int32(st.Term), int64(st.CommitIndex)
		img := s.q.Image()
		for _, srv := range st.Servers {
			rs := s.replicaState(srv.ID, st)
			if srv.Voter {
				rp.CurrentVoters = append(rp.CurrentVoters, rs)
			} else {
				rp.Observers = append(rp.Observers, rs)
			}
			resp.Nodes = append(resp.Nodes, quorumNode(img, srv, s.cfg.ControllerListener))
		}
	}
	rt.Partitions = append(rt.Partitions, rp)
	resp.Topics = append(resp.Topics, rt)
	return resp
}

func (s *Service) replicaState(id int32, st metadata.QuorumState) kmsg.DescribeQuorumResponseTopicPartitionReplicaState {
	rs := kmsg.NewDescribeQuorumResponseTopicPartitionReplicaState()
	rs.ReplicaID, rs.LogEndOffset = id, -1
	if id == st.LeaderID {
		now := s.now().UnixMilli()
		rs.LogEndOffset, rs.LastFetchTimestamp, rs.LastCaughtUpTimestamp = int64(st.LastIndex), now, now
		return rs
	}
	s.mu.Lock()
	ss, ok := s.sessions[id]
	s.mu.Unlock()
	if ok && !ss.lastBeat.IsZero() && ss.offset >= 0 {
		rs.LogEndOffset, rs.LastFetchTimestamp = ss.offset, ss.lastBeat.UnixMilli()
		if !ss.caughtUp.IsZero() {
			rs.LastCaughtUpTimestamp = ss.caughtUp.UnixMilli()
		}
	}
	return rs
}

// quorumNode names where a quorum member is reached: the listeners of its
// controller registration, else its Raft address under the listener it
// belongs to (a broker-only node's is its inter-broker listener).
func quorumNode(img *metadata.Image, srv metadata.QuorumServer, controllerListener string) kmsg.DescribeQuorumResponseNode {
	n := kmsg.NewDescribeQuorumResponseNode()
	n.NodeID = srv.ID
	if c, ok := img.ControllerRegistration(srv.ID); ok {
		for _, ep := range c.Endpoints {
			n.Listeners = append(n.Listeners, nodeListener(ep.Listener, ep.Host, ep.Port))
		}
		return n
	}
	host, portStr, err := net.SplitHostPort(srv.Addr)
	port, perr := strconv.Atoi(portStr)
	if err != nil || perr != nil {
		return n
	}
	name := controllerListener
	if b, ok := img.Broker(srv.ID); ok {
		for _, ep := range b.Endpoints {
			if ep.Host == host && int(ep.Port) == port {
				name = ep.Listener
			}
		}
	}
	n.Listeners = append(n.Listeners, nodeListener(name, host, int32(port)))
	return n
}

func nodeListener(name, host string, port int32) kmsg.DescribeQuorumResponseNodeListener {
	l := kmsg.NewDescribeQuorumResponseNodeListener()
	l.Name, l.Host, l.Port = name, host, uint16(port)
	return l
}

// checkClusterID answers INCONSISTENT_CLUSTER_ID for a request naming
// another cluster (a null id is not checked, as in Kafka).
func (s *Service) checkClusterID(id *string) error {
	if id != nil && *id != s.q.Image().ClusterID() {
		return fmt.Errorf("cluster id %q is not this cluster's: %w", *id, kerr.InconsistentClusterID)
	}
	return nil
}

// addRaftVoter promotes an observer to a voter, in KIP-853's steps: the
// node must be following the metadata log at the listener the request
// names (a controller registered, not yet a voter), and caught up, before
// raft counts it in the quorum; otherwise REQUEST_TIMED_OUT once the
// request's timeout passes. A broker-only node follows the log on its
// inter-broker listener and serves no controller APIs, so it cannot
// lead: it is refused with INVALID_REQUEST (restart it with
// process.roles=broker,controller first).
func (s *Service) addRaftVoter(ctx context.Context, r *kmsg.AddRaftVoterRequest) kmsg.Response {
	resp := r.ResponseKind().(*kmsg.AddRaftVoterResponse)
	fail := func(err error) kmsg.Response {
		resp.ErrorCode, resp.ErrorMessage = errcode.Code(err), errcode.Message(err)
		return resp
	}
	if !s.leader() {
		resp.ErrorCode = notLeader.Code
		return resp
	}
	if err := s.checkClusterID(r.ClusterID); err != nil {
		return fail(err)
	}
	if r.VoterID < 0 || len(r.Listeners) == 0 {
		return fail(fmt.Errorf("%w: voter id %d with %d listeners", metadata.ErrInvalidRequest, r.VoterID, len(r.Listeners)))
	}
	l := r.Listeners[0]
	for _, cand := range r.Listeners {
		if cand.Name == s.cfg.ControllerListener {
			l = cand
		}
	}
	addr := net.JoinHostPort(l.Host, strconv.Itoa(int(l.Port)))
	timeout := time.Duration(r.TimeoutMillis) * time.Millisecond
	if timeout <= 0 {
		timeout = 30 * time.Second
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	if err := s.awaitObserver(ctx, r.VoterID, addr); err != nil {
		return fail(err)
	}
	if err := s.q.AddVoter(ctx, r.VoterID, addr); err != nil {
		if errors.Is(err, metadata.ErrNotController) {
			resp.ErrorCode = notLeader.Code
			return resp
		}
		return fail(err)
	}
	return resp
}

// awaitObserver waits until node id follows the metadata log as a
// non-voter at addr and has applied everything this leader had when it
// was asked.
func (s *Service) awaitObserver(ctx context.Context, id int32, addr string) error {
	target := int64(s.q.Image().Index())
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	why := ""
	for {
		st, err := s.q.Quorum()
		if err != nil {
			return err
		}
		srv, member := st.Server(id)
		switch {
		case member && srv.Voter:
			return fmt.Errorf("%w: node %d is already a voter", metadata.ErrDuplicateVoter, id)
		case member && srv.Addr != addr:
			if _, isBroker := s.q.Image().Broker(id); isBroker {
				if _, ctrl := s.q.Image().ControllerRegistration(id); !ctrl {
					return fmt.Errorf("%w: node %d is a broker-only node (it follows the metadata log at %s and has no controller listener); restart it with process.roles=broker,controller to make it a voter", metadata.ErrInvalidRequest, id, srv.Addr)
				}
			}
			return fmt.Errorf("%w: node %d follows the metadata log at %s, not at %s", metadata.ErrInvalidRequest, id, srv.Addr, addr)
		case !member:
			why = fmt.Sprintf("node %d is not following the metadata log (is it running, with process.roles=broker,controller?)", id)
		default:
			s.mu.Lock()
			ss, ok := s.sessions[id]
			s.mu.Unlock()
			if ok && ss.offset >= target {
				return nil
			}
			why = fmt.Sprintf("node %d has not caught up with the metadata log (index %d)", id, target)
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("add voter: %s: %w", why, kerr.RequestTimedOut)
		case <-tick.C:
		}
	}
}

func (s *Service) removeRaftVoter(ctx context.Context, r *kmsg.RemoveRaftVoterRequest) kmsg.Response {
	resp := r.ResponseKind().(*kmsg.RemoveRaftVoterResponse)
	if !s.leader() {
		resp.ErrorCode = notLeader.Code
		return resp
	}
	err := s.checkClusterID(r.ClusterID)
	if err == nil {
		err = s.q.DemoteVoter(ctx, r.VoterID)
	}
	if errors.Is(err, metadata.ErrNotController) {
		resp.ErrorCode = notLeader.Code
		return resp
	}
	resp.ErrorCode, resp.ErrorMessage = errcode.Code(err), errcode.Message(err)
	return resp
}

func (s *Service) unregisterBroker(ctx context.Context, r *kmsg.UnregisterBrokerRequest) kmsg.Response {
	resp := r.ResponseKind().(*kmsg.UnregisterBrokerResponse)
	if !s.leader() {
		resp.ErrorCode = kerr.NotController.Code
		return resp
	}
	err := s.q.UnregisterBroker(ctx, r.BrokerID)
	resp.ErrorCode, resp.ErrorMessage = errcode.Code(err), errcode.Message(err)
	if err == nil {
		s.mu.Lock()
		delete(s.sessions, r.BrokerID)
		s.mu.Unlock()
	}
	return resp
}

// followsLog reports whether node id has its own place in the metadata
// quorum, which its broker registration must leave alone: a voter (of
// controller.quorum.voters or added since) or a registered controller.
func (s *Service) followsLog(id int32) bool {
	if _, ok := s.cfg.Voters[id]; ok {
		return true
	}
	if _, ok := s.q.Image().ControllerRegistration(id); ok {
		return true
	}
	st, err := s.q.Quorum()
	if err != nil {
		return false
	}
	srv, ok := st.Server(id)
	return ok && srv.Voter
}
