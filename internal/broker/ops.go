package broker

import (
	"context"
	"crypto/rand"
	"fmt"
	"maps"
	"net"
	"strconv"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/weir-project/weir/internal/controller"
	"github.com/weir-project/weir/internal/metadata"
)

// Cluster operations (issue 13): leader elections, the metadata quorum's
// membership, unregistering brokers, moving replicas between log dirs
// (logdirs_move.go).

// opsAPIs are the APIs of this file, with their version ranges (merged
// into supported by apiVersions).
var opsAPIs = map[int16][2]int16{
	kmsg.ElectLeaders.Int16():           {0, 2},
	kmsg.DescribeQuorum.Int16():         {0, 2},
	kmsg.AddRaftVoter.Int16():           {0, 1},
	kmsg.RemoveRaftVoter.Int16():        {0, 0},
	kmsg.UnregisterBroker.Int16():       {0, 0},
	kmsg.ControllerRegistration.Int16(): {0, 0},
	kmsg.AlterReplicaLogDirs.Int16():    {0, 2},
}

// handleOps serves this file's APIs; ok is false for any other request.
//
// ElectLeaders changes partitions, so like every admin write it is served
// by the active controller (forwarded from any other broker). The quorum
// APIs and UnregisterBroker are the controller service's, and reach it the
// same way: clients may send them to any broker, as Kafka's admin client
// does.
func (b *Broker) handleOps(ctx context.Context, onController bool, req kmsg.Request) (resp kmsg.Response, ok bool, err error) {
	switch r := req.(type) {
	case *kmsg.ElectLeadersRequest:
		if !onController && !b.meta.IsLeader() {
			resp, err = b.forwardElectLeaders(ctx, r)
			return resp, true, err
		}
		return b.handleElectLeaders(ctx, r), true, nil
	case *kmsg.AlterReplicaLogDirsRequest:
		return b.handleAlterReplicaLogDirs(ctx, r), true, nil
	}
	if !controller.Forwarded(req) {
		return nil, false, nil
	}
	if b.ctrlSvc != nil && (onController || b.meta.IsLeader()) {
		resp, err = b.ctrlSvc.Handle(ctx, req)
		return resp, true, err
	}
	version := req.GetVersion()
	resp, err = b.forward(ctx, req)
	if err != nil {
		return nil, true, err
	}
	resp.SetVersion(version)
	return resp, true, nil
}

// mergedAPIs is supported with opsAPIs.
func mergedAPIs() map[int16][2]int16 {
	out := maps.Clone(supported)
	maps.Copy(out, opsAPIs)
	return out
}

// currentVoters is the quorum's voters as this node's Raft configuration
// has them (nil if it cannot be read).
func (b *Broker) currentVoters() map[int32]string {
	st, err := b.meta.Quorum()
	if err != nil {
		return nil
	}
	return st.Voters()
}

// quorumVoterCount is how many voters the quorum has now.
func (b *Broker) quorumVoterCount() int { return len(b.currentVoters()) }

// registerController sends this node's ControllerRegistration to the
// active controller until it is accepted: a controller that is not a
// voter of the first bootstrap (an observer) is added to Raft as a
// non-voter at its CONTROLLER listener this way, and can then be promoted
// with AddRaftVoter.
func (b *Broker) registerController(ctx context.Context, ctrlAddr string) error {
	host, portStr, err := net.SplitHostPort(ctrlAddr)
	if err != nil {
		return fmt.Errorf("controller listener address %q: %w", ctrlAddr, err)
	}
	if ip := net.ParseIP(host); host == "" || (ip != nil && ip.IsUnspecified()) {
		host = "127.0.0.1"
	}
	port, err := strconv.Atoi(portStr)
	if err != nil {
		return fmt.Errorf("controller listener address %q: %w", ctrlAddr, err)
	}
	req := kmsg.NewPtrControllerRegistrationRequest()
	req.ControllerID = b.nodeID
	if _, err := rand.Read(req.IncarnationID[:]); err != nil {
		return fmt.Errorf("controller incarnation id: %w", err)
	}
	l := kmsg.NewControllerRegistrationRequestListener()
	l.Name, l.Host, l.Port = b.opts.ControllerListener, host, uint16(port)
	req.Listeners = append(req.Listeners, l)
	for {
		resp, err := b.ctrl.Send(ctx, req)
		if err == nil {
			r := resp.(*kmsg.ControllerRegistrationResponse)
			if err = kerr.ErrorForCode(r.ErrorCode); err == nil {
				b.log.Info("registered as a controller; following the metadata log", "listener", l.Name, "addr", net.JoinHostPort(host, portStr))
				return nil
			}
		}
		b.log.Info("controller registration not accepted yet", "err", err)
		select {
		case <-ctx.Done():
			return fmt.Errorf("register controller %d: %w (last: %v)", b.nodeID, ctx.Err(), err)
		case <-time.After(200 * time.Millisecond):
		}
	}
}

// handleElectLeaders runs elections on the active controller (see
// metadata.Controller.ElectLeaders). v0 has no election type: preferred.
// Null topics means every partition, answered only where an election was
// made or failed for another reason than ELECTION_NOT_NEEDED, as Kafka
// does. An unknown election type fails the whole request with
// INVALID_REQUEST, at the top level (v1+) and on every partition named.
func (b *Broker) handleElectLeaders(ctx context.Context, req *kmsg.ElectLeadersRequest) kmsg.Response {
	resp := req.ResponseKind().(*kmsg.ElectLeadersResponse)
	ctx, cancel := requestTimeout(ctx, req.TimeoutMillis)
	defer cancel()
	typ := metadata.ElectPreferred
	if req.Version >= 1 {
		typ = metadata.ElectionType(req.ElectionType)
	}
	var parts []metadata.TopicPartition
	if req.Topics != nil {
		parts = []metadata.TopicPartition{}
		for _, rt := range req.Topics {
			for _, p := range rt.Partitions {
				parts = append(parts, metadata.TopicPartition{Topic: rt.Topic, Partition: p})
			}
		}
	}
	wholeErr := func(err error) kmsg.Response {
		resp.ErrorCode = errorCode(err)
		for _, rt := range req.Topics {
			st := kmsg.NewElectLeadersResponseTopic()
			st.Topic = rt.Topic
			for _, p := range rt.Partitions {
				sp := kmsg.NewElectLeadersResponseTopicPartition()
				sp.Partition, sp.ErrorCode, sp.ErrorMessage = p, resp.ErrorCode, errorMessage(err)
				st.Partitions = append(st.Partitions, sp)
			}
			resp.Topics = append(resp.Topics, st)
		}
		return resp
	}
	if typ != metadata.ElectPreferred && typ != metadata.ElectUnclean {
		return wholeErr(fmt.Errorf("%w: unknown election type %d", metadata.ErrInvalidRequest, req.ElectionType))
	}
	results, err := b.meta.ElectLeaders(ctx, typ, parts)
	if err != nil {
		return wholeErr(err)
	}
	for _, r := range results {
		if n := len(resp.Topics); n == 0 || resp.Topics[n-1].Topic != r.Topic {
			st := kmsg.NewElectLeadersResponseTopic()
			st.Topic = r.Topic
			resp.Topics = append(resp.Topics, st)
		}
		sp := kmsg.NewElectLeadersResponseTopicPartition()
		sp.Partition = r.Partition
		if r.Err != nil {
			sp.ErrorCode, sp.ErrorMessage = errorCode(r.Err), errorMessage(r.Err)
		}
		st := &resp.Topics[len(resp.Topics)-1]
		st.Partitions = append(st.Partitions, sp)
	}
	return resp
}

// forwardElectLeaders forwards ElectLeaders to the active controller and
// waits (bounded) until this broker's image shows the elected leaders, so
// that a Metadata request here next sees them.
func (b *Broker) forwardElectLeaders(ctx context.Context, req *kmsg.ElectLeadersRequest) (kmsg.Response, error) {
	version := req.Version
	resp, err := b.forward(ctx, req)
	if err != nil {
		return nil, err
	}
	resp.SetVersion(version)
	r := resp.(*kmsg.ElectLeadersResponse)
	wctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	preferred := version == 0 || req.ElectionType == int8(metadata.ElectPreferred)
	for _, rt := range r.Topics {
		for _, rp := range rt.Partitions {
			if rp.ErrorCode != 0 {
				continue
			}
			topic, p := rt.Topic, rp.Partition
			b.waitImage(wctx, func(im *metadata.Image) bool {
				st, ok := im.Partition(topic, p)
				if !ok {
					return true
				}
				if preferred {
					return st.Leader == st.Replicas[0]
				}
				return st.Leader >= 0
			})
		}
	}
	return resp, nil
}
