package metadata

import (
	"context"
	"fmt"
	"slices"
	"strconv"

	"github.com/hashicorp/raft"
)

// The metadata quorum's membership (KIP-853's dynamic quorum, on
// hashicorp/raft): voters elect the controller and commit the log;
// non-voters (Kafka's observers: broker-only nodes, and controllers not
// yet promoted) replicate and apply it. Raft's configuration, kept in the
// Raft log itself, is the truth; controller.quorum.voters only seeds the
// first bootstrap and tells a starting node where to look.

// QuorumServer is one member of the Raft configuration.
type QuorumServer struct {
	ID    int32
	Addr  string // where its Raft traffic goes
	Voter bool
}

// QuorumState is the quorum as this node sees it.
type QuorumState struct {
	LeaderID    int32 // -1 if none known
	Term        uint64
	CommitIndex uint64
	LastIndex   uint64 // this node's last log index
	Servers     []QuorumServer
}

// Quorum returns the current Raft configuration (the latest, committed or
// not, as raft reports it) and this node's view of the leader.
func (c *Controller) Quorum() (QuorumState, error) {
	f := c.raft.GetConfiguration()
	if err := f.Error(); err != nil {
		return QuorumState{}, fmt.Errorf("read raft configuration: %w", mapRaftErr(err))
	}
	st := QuorumState{LeaderID: -1, Term: c.raft.CurrentTerm(), CommitIndex: c.raft.CommitIndex(), LastIndex: c.raft.LastIndex()}
	if id, _, ok := c.Leader(); ok {
		st.LeaderID = id
	}
	for _, s := range f.Configuration().Servers {
		id, err := strconv.ParseInt(string(s.ID), 10, 32)
		if err != nil {
			continue // not one of ours
		}
		st.Servers = append(st.Servers, QuorumServer{ID: int32(id), Addr: string(s.Address), Voter: s.Suffrage == raft.Voter})
	}
	slices.SortFunc(st.Servers, func(a, b QuorumServer) int { return int(a.ID) - int(b.ID) })
	return st, nil
}

// Server returns member id of the configuration, if it is one.
func (st QuorumState) Server(id int32) (QuorumServer, bool) {
	for _, s := range st.Servers {
		if s.ID == id {
			return s, true
		}
	}
	return QuorumServer{}, false
}

// Voters returns the voters' Raft addresses by id: where a node finds the
// controllers after the quorum changed.
func (st QuorumState) Voters() map[int32]string {
	out := map[int32]string{}
	for _, s := range st.Servers {
		if s.Voter {
			out[s.ID] = s.Addr
		}
	}
	return out
}

// AddVoter promotes non-voter id, reached at addr, to a voter (KIP-853's
// AddRaftVoter). Leader only. The caller checks first that the node has
// caught up with the log: raft counts a new voter in the quorum at once,
// and one far behind would hold up every commit until it caught up.
func (c *Controller) AddVoter(ctx context.Context, id int32, addr string) error {
	if err := c.checkLeader(); err != nil {
		return err
	}
	st, err := c.Quorum()
	if err != nil {
		return err
	}
	if s, ok := st.Server(id); ok && s.Voter {
		return fmt.Errorf("%w: node %d is already a voter", ErrDuplicateVoter, id)
	}
	if err := c.await(ctx, func() raft.Future {
		return c.raft.AddVoter(raftID(id), raft.ServerAddress(addr), 0, timeoutOf(ctx))
	}); err != nil {
		return fmt.Errorf("add voter %d at %s: %w", id, addr, err)
	}
	c.log.Info("metadata quorum voter added", "node", id, "addr", addr)
	return nil
}

// DemoteVoter makes voter id a non-voter (KIP-853's RemoveRaftVoter): it
// votes no more but still follows the log, as a removed Kafka voter goes
// on as an observer, so a node that is also a broker keeps its metadata.
// The last voter cannot go. Demoting the leader itself commits the change
// and then steps down; the other voters elect a new leader.
func (c *Controller) DemoteVoter(ctx context.Context, id int32) error {
	if err := c.checkLeader(); err != nil {
		return err
	}
	st, err := c.Quorum()
	if err != nil {
		return err
	}
	if s, ok := st.Server(id); !ok || !s.Voter {
		return fmt.Errorf("%w: node %d is not a voter", ErrVoterNotFound, id)
	}
	if len(st.Voters()) == 1 {
		return fmt.Errorf("%w: node %d is the only voter", ErrInvalidRequest, id)
	}
	if err := c.await(ctx, func() raft.Future {
		return c.raft.DemoteVoter(raftID(id), 0, timeoutOf(ctx))
	}); err != nil {
		return fmt.Errorf("remove voter %d: %w", id, err)
	}
	c.log.Info("metadata quorum voter removed; it follows the log as a non-voter", "node", id)
	return nil
}

// RemoveNonvoter takes non-voter id out of the Raft configuration: the
// leader stops sending it the log. A voter is left alone (remove it from
// the voters first). Not being a member is no error.
func (c *Controller) RemoveNonvoter(ctx context.Context, id int32) error {
	if err := c.checkLeader(); err != nil {
		return err
	}
	st, err := c.Quorum()
	if err != nil {
		return err
	}
	s, ok := st.Server(id)
	if !ok || s.Voter {
		return nil
	}
	if err := c.await(ctx, func() raft.Future { return c.raft.RemoveServer(raftID(id), 0, timeoutOf(ctx)) }); err != nil {
		return fmt.Errorf("remove non-voter %d: %w", id, err)
	}
	return nil
}

// UnregisterBroker removes broker id's registration for good (Kafka's
// UnregisterBroker): it disappears from the metadata, its ISR memberships
// and leaderships move on, and, if it is only a non-voter of the metadata
// quorum, the quorum stops replicating to it. Only a fenced broker (one
// that stopped, or whose session expired) can go; a voter stays a voter
// (remove it from the quorum with DemoteVoter first).
func (c *Controller) UnregisterBroker(ctx context.Context, id int32) error {
	if err := c.checkLeader(); err != nil {
		return err
	}
	b, ok := c.Image().Broker(id)
	if !ok {
		return fmt.Errorf("unregister broker: %w: broker %d is not currently registered", ErrBrokerNotRegistered, id)
	}
	if _, err := c.propose(ctx, cmdUnregisterBroker, unregisterBrokerCmd{brokerRef{ID: id, Epoch: b.Epoch}}); err != nil {
		return fmt.Errorf("unregister broker %d: %w", id, err)
	}
	if err := c.RemoveNonvoter(ctx, id); err != nil {
		c.log.Warn("broker unregistered but still a raft non-voter", "broker", id, "err", err)
	}
	c.electUncleanAfter(ctx, "unregister")
	c.log.Info("broker unregistered", "broker", id)
	return nil
}

// RegisterController records controller r's listeners (Kafka's
// ControllerRegistration) and, unless it is a voter already, adds it to
// Raft as a non-voter at its first listener, so that it follows the log
// where AddVoter can later promote it.
func (c *Controller) RegisterController(ctx context.Context, r ControllerRecord) error {
	if err := c.checkLeader(); err != nil {
		return err
	}
	if old, ok := c.Image().ControllerRegistration(r.ID); !ok || !slices.Equal(old.Endpoints, r.Endpoints) || old.Incarnation != r.Incarnation {
		if _, err := c.propose(ctx, cmdRegisterController, registerControllerCmd{Controller: r}); err != nil {
			return fmt.Errorf("register controller %d: %w", r.ID, err)
		}
	}
	st, err := c.Quorum()
	if err != nil {
		return err
	}
	if s, ok := st.Server(r.ID); ok && (s.Voter || s.Addr == r.RaftAddr()) {
		return nil
	}
	return c.AddNonvoter(ctx, r.ID, r.RaftAddr())
}

func raftID(id int32) raft.ServerID { return raft.ServerID(strconv.Itoa(int(id))) }
