// Package controller is the active controller's Kafka-facing side: it
// answers the controller APIs brokers send on the CONTROLLER listener
// (BrokerRegistration, BrokerHeartbeat, AlterPartition,
// AllocateProducerIds), keeps each broker's heartbeat session, fences
// brokers whose session expires, and moves leadership back to preferred
// replicas. What a change does to the metadata is decided in package
// metadata; this package decides when to ask for it.
//
// Every node of the quorum runs a Service; only the Raft leader's acts.
// The others answer NOT_CONTROLLER and keep no sessions.
package controller

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"strconv"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/weir-project/weir/internal/errcode"
	"github.com/weir-project/weir/internal/metadata"
)

// Quorum is the metadata controller as the service uses it
// (*metadata.Controller).
type Quorum interface {
	IsLeader() bool
	// VerifyLeader confirms the leadership with the quorum, the image
	// holding every command committed before the call.
	VerifyLeader(ctx context.Context) error
	Image() *metadata.Image
	// Changes is closed when the image next changes.
	Changes() <-chan struct{}
	RegisterIncarnation(ctx context.Context, r metadata.BrokerRegistration) (int64, error)
	UnfenceBroker(ctx context.Context, id int32, epoch int64) error
	FenceBroker(ctx context.Context, id int32, epoch int64) error
	BeginControlledShutdown(ctx context.Context, id int32, epoch int64) error
	AlterPartition(ctx context.Context, r metadata.AlterPartitionRequest) ([]metadata.AlterPartitionResult, error)
	ElectLeaders(ctx context.Context, typ metadata.ElectionType, partitions []metadata.TopicPartition) ([]metadata.ElectionResult, error)
	ElectUncleanLeaders(ctx context.Context) ([]metadata.ElectionResult, error)
	AddNonvoter(ctx context.Context, id int32, addr string) error
	AllocateProducerIDs(ctx context.Context, n int64) (int64, error)
	// Quorum operations (quorum.go).
	Quorum() (metadata.QuorumState, error)
	AddVoter(ctx context.Context, id int32, addr string) error
	DemoteVoter(ctx context.Context, id int32) error
	UnregisterBroker(ctx context.Context, id int32) error
	RegisterController(ctx context.Context, r metadata.ControllerRecord) error
}

// Config configures a Service.
type Config struct {
	// Voters are the quorum's node ids (controller.quorum.voters); a
	// registering broker outside it is added to Raft as a non-voter.
	Voters map[int32]string
	// ControllerListener names the CONTROLLER listener (the one
	// AddRaftVoter picks among a new voter's listeners).
	ControllerListener string
	// SessionTimeout is broker.session.timeout.ms (9000).
	SessionTimeout time.Duration
	// AutoLeaderRebalance is auto.leader.rebalance.enable (true), checked
	// every LeaderImbalanceCheck (leader.imbalance.check.interval.seconds,
	// 300).
	AutoLeaderRebalance  bool
	LeaderImbalanceCheck time.Duration
	// ProducerIDBlock is how many producer ids one AllocateProducerIds
	// hands out (1000, as Kafka).
	ProducerIDBlock int64
	Logger          *slog.Logger
	// LocalID and LocalIncarnation name the broker of this very process,
	// on a node that is broker and controller at once. Its registration
	// is never refused as a duplicate: the earlier incarnation of its id
	// was an earlier process of this node, gone now, so waiting for that
	// one's session to expire (broker.session.timeout.ms) would only hold
	// up a restart after a crash. A zero LocalIncarnation names none.
	LocalID          int32
	LocalIncarnation [16]byte
}

// Service is one node's controller service.
type Service struct {
	cfg Config
	q   Quorum
	log *slog.Logger
	now func() time.Time

	mu       sync.Mutex
	leading  bool              // whether sessions below belong to this term
	sessions map[int32]session // broker id -> its heartbeat session
	// offsets is closed (and replaced) when a session reports a higher
	// metadata offset or the sessions start afresh: what AwaitApplied
	// waits on.
	offsets chan struct{}
}

// session is a broker's heartbeat session on the active controller.
type session struct {
	epoch    int64
	lastBeat time.Time
	// offset is the metadata offset its last heartbeat reported (-1
	// none yet), caughtUp when it last reported the leader's own.
	offset   int64
	caughtUp time.Time
}

// New returns the service of one quorum node.
func New(cfg Config, q Quorum) *Service {
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	if cfg.SessionTimeout <= 0 {
		cfg.SessionTimeout = 9 * time.Second
	}
	if cfg.LeaderImbalanceCheck <= 0 {
		cfg.LeaderImbalanceCheck = 300 * time.Second
	}
	if cfg.ProducerIDBlock <= 0 {
		cfg.ProducerIDBlock = 1000
	}
	if cfg.ControllerListener == "" {
		cfg.ControllerListener = "CONTROLLER"
	}
	return &Service{cfg: cfg, q: q, log: cfg.Logger, now: time.Now, sessions: map[int32]session{}, offsets: make(chan struct{})}
}

// Handles reports whether req is a controller API this service answers.
func Handles(req kmsg.Request) bool {
	switch req.(type) {
	case *kmsg.BrokerRegistrationRequest, *kmsg.BrokerHeartbeatRequest,
		*kmsg.AlterPartitionRequest, *kmsg.AllocateProducerIDsRequest:
		return true
	}
	return isOpsRequest(req)
}

// Forwarded reports whether req is a controller API that clients send to
// any broker, which forwards it to the active controller (DescribeQuorum,
// AddRaftVoter, RemoveRaftVoter, UnregisterBroker).
func Forwarded(req kmsg.Request) bool {
	_, reg := req.(*kmsg.ControllerRegistrationRequest)
	return isOpsRequest(req) && !reg
}

// Handle answers one controller request.
//
// Version notes: BrokerRegistration v0-4 (v2+ log dirs are accepted and
// ignored; v3+ PreviousBrokerEpoch lets a cleanly stopped broker come
// back before its old session expires, and one that does not name its
// last epoch leaves every ELR: KIP-966). BrokerHeartbeat v0-1 (offline log
// dirs ignored). AlterPartition v0-3 (v0-1 by topic name, v2+ by id, v3+
// member broker epochs). AllocateProducerIds v0.
func (s *Service) Handle(ctx context.Context, req kmsg.Request) (kmsg.Response, error) {
	switch r := req.(type) {
	case *kmsg.BrokerRegistrationRequest:
		return s.register(ctx, r), nil
	case *kmsg.BrokerHeartbeatRequest:
		return s.heartbeat(ctx, r), nil
	case *kmsg.AlterPartitionRequest:
		return s.alterPartition(ctx, r), nil
	case *kmsg.AllocateProducerIDsRequest:
		return s.allocateProducerIDs(ctx, r), nil
	}
	if resp := s.handleOps(ctx, req); resp != nil {
		return resp, nil
	}
	return nil, fmt.Errorf("controller: no handler for %s", kmsg.NameForKey(req.Key()))
}

// leader reports whether this node acts; on a new term it gives every
// registered broker a fresh session, as Kafka's new controller does,
// rather than fencing brokers whose heartbeats went to its predecessor.
func (s *Service) leader() bool {
	if !s.q.IsLeader() {
		s.mu.Lock()
		s.leading = false
		s.mu.Unlock()
		return false
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.leading {
		s.leading = true
		s.sessions = map[int32]session{}
		now := s.now()
		for _, b := range s.q.Image().Brokers() {
			s.sessions[b.ID] = session{epoch: b.Epoch, lastBeat: now, offset: -1}
		}
		s.offsetsMoved()
	}
	return true
}

func (s *Service) touch(id int32, epoch int64) { s.touchAt(id, epoch, -1) }

// touchAt renews a session with the metadata offset a heartbeat reported
// (-1: none), kept for DescribeQuorum and AddRaftVoter.
func (s *Service) touchAt(id int32, epoch, offset int64) {
	now := s.now()
	s.mu.Lock()
	defer s.mu.Unlock()
	ss := s.sessions[id]
	if ss.epoch != epoch {
		ss = session{offset: -1}
	}
	ss.epoch, ss.lastBeat = epoch, now
	if offset >= 0 {
		if offset > ss.offset {
			s.offsetsMoved()
		}
		ss.offset = offset
		if offset >= int64(s.q.Image().Index()) {
			ss.caughtUp = now
		}
	}
	s.sessions[id] = ss
}

// liveSession reports whether broker id has an unexpired session at epoch.
func (s *Service) liveSession(id int32, epoch int64) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	ss, ok := s.sessions[id]
	return ok && ss.epoch == epoch && s.now().Sub(ss.lastBeat) < s.cfg.SessionTimeout
}

func (s *Service) register(ctx context.Context, r *kmsg.BrokerRegistrationRequest) kmsg.Response {
	resp := r.ResponseKind().(*kmsg.BrokerRegistrationResponse)
	resp.BrokerEpoch = -1
	if !s.leader() {
		resp.ErrorCode = kerr.NotController.Code
		return resp
	}
	img := s.q.Image()
	if r.ClusterID != "" && img.ClusterID() != "" && r.ClusterID != img.ClusterID() {
		resp.ErrorCode = kerr.InconsistentClusterID.Code
		return resp
	}
	if len(r.Listeners) == 0 {
		resp.ErrorCode = kerr.InvalidRequest.Code
		return resp
	}
	if old, ok := img.Broker(r.BrokerID); ok && old.Incarnation != r.IncarnationID && old.Incarnation != ([16]byte{}) {
		// Another process with this id may still be alive: refuse until
		// its session expires, unless it shut down cleanly (it then
		// names its last epoch), is fenced, or is stopping.
		clean := r.Version >= 3 && r.PreviousBrokerEpoch == old.Epoch
		self := r.BrokerID == s.cfg.LocalID && r.IncarnationID == s.cfg.LocalIncarnation && r.IncarnationID != ([16]byte{})
		if !clean && !self && !old.Fenced && !old.InControlledShutdown && s.liveSession(old.ID, old.Epoch) {
			resp.ErrorCode = kerr.DuplicateBrokerRegistration.Code
			return resp
		}
	}
	reg := metadata.BrokerRegistration{ID: r.BrokerID, Incarnation: r.IncarnationID, PreviousEpoch: -1}
	if r.Version >= 3 {
		reg.PreviousEpoch = r.PreviousBrokerEpoch
	}
	if r.Rack != nil {
		reg.Rack = *r.Rack
	}
	for i, l := range r.Listeners {
		reg.Endpoints = append(reg.Endpoints, metadata.Endpoint{Listener: l.Name, Host: l.Host, Port: int32(l.Port), SecurityProtocol: securityProtocol(l.SecurityProtocol)})
		if i == 0 {
			reg.Host, reg.Port = l.Host, int32(l.Port)
		}
	}
	// A voter, or a controller added at its CONTROLLER listener, has its
	// place in Raft elsewhere than at its broker listener.
	if !s.followsLog(r.BrokerID) {
		// A broker-only node follows the metadata log as a Raft
		// non-voter, on its inter-broker listener (the first).
		addr := net.JoinHostPort(reg.Host, strconv.Itoa(int(reg.Port)))
		if err := s.q.AddNonvoter(ctx, r.BrokerID, addr); err != nil {
			resp.ErrorCode = errcode.Code(err)
			s.log.Warn("add broker as raft non-voter", "broker", r.BrokerID, "addr", addr, "err", err)
			return resp
		}
	}
	epoch, err := s.q.RegisterIncarnation(ctx, reg)
	if err != nil {
		resp.ErrorCode = errcode.Code(err)
		s.log.Warn("broker registration failed", "broker", r.BrokerID, "err", err)
		return resp
	}
	s.touch(r.BrokerID, epoch)
	s.log.Info("broker registered", "broker", r.BrokerID, "epoch", epoch, "rack", reg.Rack, "endpoint", net.JoinHostPort(reg.Host, strconv.Itoa(int(reg.Port))))
	resp.BrokerEpoch = epoch
	return resp
}

// securityProtocol names Kafka's security protocol id.
func securityProtocol(id int16) string {
	switch id {
	case 1:
		return "SSL"
	case 2:
		return "SASL_PLAINTEXT"
	case 3:
		return "SASL_SSL"
	}
	return "PLAINTEXT"
}

func (s *Service) heartbeat(ctx context.Context, r *kmsg.BrokerHeartbeatRequest) kmsg.Response {
	resp := r.ResponseKind().(*kmsg.BrokerHeartbeatResponse)
	resp.IsFenced = true
	if !s.leader() {
		resp.ErrorCode = kerr.NotController.Code
		return resp
	}
	b, ok := s.q.Image().Broker(r.BrokerID)
	switch {
	case !ok:
		resp.ErrorCode = kerr.BrokerIDNotRegistered.Code
		return resp
	case b.Epoch != r.BrokerEpoch:
		resp.ErrorCode = kerr.StaleBrokerEpoch.Code
		return resp
	}
	s.touchAt(b.ID, b.Epoch, r.CurrentMetadataOffset)
	// Caught up once the broker has applied its own registration (from
	// then on its image holds every partition it must serve) and its last
	// fencing (a broker back from SIGSTOP or a cut must first learn which
	// leaderships it lost, or it would serve them once unfenced).
	caughtUp := r.CurrentMetadataOffset >= b.CaughtUpAt()
	resp.IsCaughtUp = caughtUp
	var err error
	switch {
	case r.WantShutdown:
		if err = s.q.BeginControlledShutdown(ctx, b.ID, b.Epoch); err == nil && s.q.Image().ShouldShutDown(b.ID) {
			// Nothing left to move: fence it so that no partition waits
			// on it (Kafka's SHUTDOWN_NOW).
			err = s.q.FenceBroker(ctx, b.ID, b.Epoch)
			resp.ShouldShutdown = err == nil
		}
	case r.WantFence:
		err = s.q.FenceBroker(ctx, b.ID, b.Epoch)
	case b.Fenced && caughtUp && !b.InControlledShutdown:
		err = s.q.UnfenceBroker(ctx, b.ID, b.Epoch)
		if err == nil {
			s.log.Info("broker unfenced", "broker", b.ID, "epoch", b.Epoch)
		}
	}
	if err != nil {
		resp.ErrorCode = errcode.Code(err)
		if !errors.Is(err, metadata.ErrNotController) {
			s.log.Warn("heartbeat action failed", "broker", b.ID, "err", err)
		}
		return resp
	}
	if now, ok := s.q.Image().Broker(b.ID); ok {
		resp.IsFenced = now.Fenced
	}
	if !resp.IsFenced {
		// "Unfenced" keeps the broker serving as leader for a session
		// (ctrlclient.Lifecycle.InSession); only a leader the quorum
		// still follows, with an image as of after the heartbeat
		// arrived, knows it was not fenced meanwhile.
		if err := s.q.VerifyLeader(ctx); err != nil {
			resp.IsFenced, resp.ErrorCode = true, errcode.Code(err)
			s.log.Info("heartbeat not answered: leadership not confirmed", "broker", b.ID, "err", err)
		} else if now, ok := s.q.Image().Broker(b.ID); !ok || now.Fenced || now.Epoch != b.Epoch {
			resp.IsFenced = true
		}
	}
	return resp
}

func (s *Service) allocateProducerIDs(ctx context.Context, r *kmsg.AllocateProducerIDsRequest) kmsg.Response {
	resp := r.ResponseKind().(*kmsg.AllocateProducerIDsResponse)
	resp.ProducerIDStart = -1
	if !s.leader() {
		resp.ErrorCode = kerr.NotController.Code
		return resp
	}
	if b, ok := s.q.Image().Broker(r.BrokerID); !ok || b.Epoch != r.BrokerEpoch {
		resp.ErrorCode = kerr.StaleBrokerEpoch.Code
		return resp
	}
	first, err := s.q.AllocateProducerIDs(ctx, s.cfg.ProducerIDBlock)
	if err != nil {
		resp.ErrorCode = errcode.Code(err)
		return resp
	}
	resp.ProducerIDStart, resp.ProducerIDLen = first, int32(s.cfg.ProducerIDBlock)
	return resp
}
