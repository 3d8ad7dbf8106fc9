package metadata

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"runtime/pprof"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/raft"
	raftboltdb "github.com/hashicorp/raft-boltdb/v2"
	"go.etcd.io/bbolt"

	"github.com/weir-project/weir/internal/coalesce"
)

// Config configures a Controller. Zero durations and counts take the
// defaults documented on each field.
type Config struct {
	NodeID int32
	// Dir holds raft.db (log and stable store) and snapshots/. The broker
	// passes "<first log dir>/__raft".
	Dir string
	// RaftAddr is the host:port the Raft transport binds (port 0 picks a
	// free port; see Controller.RaftAddr).
	RaftAddr string
	// Stream, if set, carries Raft's traffic instead of a listener of its
	// own on RaftAddr: the broker shares its CONTROLLER listener this way
	// (package mux). RaftAddr is then only informative.
	Stream StreamLayer
	// RaftAdvertiseAddr is the address peers use, when RaftAddr binds an
	// unspecified host such as 0.0.0.0. Optional.
	RaftAdvertiseAddr string
	// Voters maps node id to Raft address for the first bootstrap. Nil
	// means this node alone, at its bound address; otherwise this node is
	// named by its own entry, as every other voter names it.
	Voters map[int32]string
	// Join starts a node with an empty directory without bootstrapping: it
	// waits to be added to an existing cluster (a broker-only node, which
	// the controller adds with AddNonvoter). Voters must then be empty.
	Join bool
	// ClusterID, if set, is the id the first bootstrap records (e.g. from
	// meta.properties); otherwise a random one is generated.
	ClusterID string
	// DefaultMinISR is this node's static min.insync.replicas, which the
	// first bootstrap records as the default of topics that set none
	// (eligible leader replicas depend on it; elr.go).
	DefaultMinISR int32
	Logger        *slog.Logger

	// ValidateTopicName and ValidateTopicConfig are checked before a change
	// is proposed. Nil means Kafka's topic name rules and "any non-empty
	// key" respectively.
	ValidateTopicName   func(name string) error
	ValidateTopicConfig func(key, value string) error
	// ValidateBrokerConfig checks a value set on a broker resource
	// (AlterBrokerConfigs); its error should wrap ErrInvalidConfig, or
	// ErrInvalidRequest for a key that cannot be changed at runtime. Nil
	// refuses every key: nothing is dynamic unless the broker says so.
	ValidateBrokerConfig func(key, value string) error

	// UncleanLeaderElectionEnable is the broker default of
	// unclean.leader.election.enable (Kafka: false): where it (or the
	// topic's override) is true, an offline partition elects any live
	// replica (see ElectUncleanLeaders).
	UncleanLeaderElectionEnable bool

	// DefaultPartitions (num.partitions, default 1) and
	// DefaultReplicationFactor (default.replication.factor, default 1) are
	// used when a CreateTopic asks for -1.
	DefaultPartitions        int32
	DefaultReplicationFactor int16

	// Limits cap the partitions CreateTopic and CreatePartitions may add
	// (max.partitions, max.broker.partitions); zero fields mean no limit.
	Limits PartitionLimits
	// PendingTimeout (default 30s) bounds the activation, and the abort,
	// of a topic created with CreateTopic.Prepare. Each gets this long
	// after Prepare, past the request's own deadline: once the topic is
	// recorded, its creation must be finished or undone either way.
	PendingTimeout time.Duration

	// Raft timing. Defaults: 1s, 1s, 500ms; for a sole voter 100ms,
	// 100ms, 50ms (it leads within 100-200 ms of start). Tests use ~100 ms.
	HeartbeatTimeout   time.Duration
	ElectionTimeout    time.Duration
	LeaderLeaseTimeout time.Duration
	// SnapshotThreshold (default 1024 entries), SnapshotInterval (default
	// 30s between checks) and TrailingLogs (default 1024 entries kept
	// after a snapshot) control log compaction.
	SnapshotThreshold uint64
	SnapshotInterval  time.Duration
	TrailingLogs      uint64
}

func (cfg *Config) setDefaults() {
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	if cfg.ValidateTopicName == nil {
		cfg.ValidateTopicName = validTopicName
	}
	if cfg.ValidateTopicConfig == nil {
		cfg.ValidateTopicConfig = defaultValidateTopicConfig
	}
	if cfg.ValidateBrokerConfig == nil {
		cfg.ValidateBrokerConfig = func(key, _ string) error {
			return fmt.Errorf("%w: Cannot update these configs dynamically: [%s]", ErrInvalidRequest, key)
		}
	}
	if cfg.DefaultPartitions <= 0 {
		cfg.DefaultPartitions = 1
	}
	if cfg.DefaultReplicationFactor <= 0 {
		cfg.DefaultReplicationFactor = 1
	}
	setDur := func(d *time.Duration, def time.Duration) {
		if *d <= 0 {
			*d = def
		}
	}
	if cfg.soleVoter() {
		// No peer to disagree with or to flood: a node that is the whole
		// quorum elects itself within 100-200 ms of start rather than
		// 1-2 s, which is most of a single node's start-up.
		setDur(&cfg.HeartbeatTimeout, 100*time.Millisecond)
		setDur(&cfg.ElectionTimeout, 100*time.Millisecond)
		setDur(&cfg.LeaderLeaseTimeout, 50*time.Millisecond)
	}
	setDur(&cfg.HeartbeatTimeout, time.Second)
	setDur(&cfg.ElectionTimeout, time.Second)
	setDur(&cfg.LeaderLeaseTimeout, 500*time.Millisecond)
	setDur(&cfg.SnapshotInterval, 30*time.Second)
	setDur(&cfg.PendingTimeout, 30*time.Second)
	if cfg.SnapshotThreshold == 0 {
		cfg.SnapshotThreshold = 1024
	}
	if cfg.TrailingLogs == 0 {
		cfg.TrailingLogs = 1024
	}
}

// soleVoter reports whether this node is the quorum's only voter
// (controller.quorum.voters names none but it).
func (cfg *Config) soleVoter() bool {
	if cfg.Join {
		return false
	}
	for id := range cfg.Voters {
		if id != cfg.NodeID {
			return false
		}
	}
	return true
}

// Controller owns this node's Raft instance and metadata state machine.
type Controller struct {
	cfg       Config
	log       *slog.Logger
	fsm       *fsm
	raft      *raft.Raft
	transport *raft.NetworkTransport
	streams   *streamLayer // the transport's, nil on a bare TCP transport
	store     *raftboltdb.BoltStore
	logs      *grownLogStore // store as Raft's log store

	stop      context.CancelFunc
	bg        sync.WaitGroup
	closeOnce sync.Once
	closeErr  error
	closed    chan struct{}

	// futures counts the goroutines waiting on raft futures (see await).
	// Close lets them finish before it shuts raft down: raft never
	// answers a future it has handed to its state machine goroutine when
	// that goroutine stops first, and such a waiter would wait forever.
	// Close closes closed under futMu, so that await, checking it under
	// futMu, never adds to futures once Close waits for them.
	futMu   sync.Mutex
	futures sync.WaitGroup

	// preparing holds the ids of the pending topics a CreateTopic call of
	// this process is still preparing; every other pending topic is an
	// orphan (its creator crashed or lost the leadership) and is aborted
	// by sweepPending. sweep asks for a sweep now.
	mu        sync.Mutex
	preparing map[[16]byte]bool
	sweep     chan struct{}

	// push asks pushCommits to tell the followers the commit index now.
	push chan struct{}

	// checks coalesces VerifyLeader's barriers (verifyleader.go).
	checks *coalesce.Runner[struct{}]
}

// boltLockTimeout bounds the wait for raft.db's file lock, so a second
// process on the same directory fails instead of hanging.
const boltLockTimeout = 5 * time.Second

// Open starts Raft on cfg.Dir. On an empty directory it bootstraps a new
// cluster of cfg.Voters; otherwise it recovers from the snapshot and log.
// Open does not wait for a leader: call WaitLeader.
func Open(cfg Config) (*Controller, error) {
	cfg.setDefaults()
	if cfg.Dir == "" || cfg.RaftAddr == "" {
		return nil, fmt.Errorf("open metadata: Dir and RaftAddr are required")
	}
	if cfg.NodeID < 0 {
		return nil, fmt.Errorf("open metadata: invalid node id %d", cfg.NodeID)
	}
	if cfg.Join && len(cfg.Voters) > 0 {
		return nil, fmt.Errorf("open metadata: a node that joins an existing cluster bootstraps no voters")
	}
	if err := os.MkdirAll(cfg.Dir, 0o755); err != nil {
		return nil, fmt.Errorf("open metadata dir: %w", err)
	}
	c := &Controller{
		cfg:       cfg,
		log:       cfg.Logger.With("component", "metadata"),
		fsm:       newFSM(),
		closed:    make(chan struct{}),
		preparing: make(map[[16]byte]bool),
		sweep:     make(chan struct{}, 1),
		push:      make(chan struct{}, 1),
	}
	c.checks = coalesce.NewErr(c.commitBarrier)
	if err := c.start(); err != nil {
		c.release()
		return nil, err
	}
	ctx, cancel := context.WithCancel(context.Background())
	c.stop = cancel
	c.bg.Add(2)
	go c.watchLeadership(ctx)
	go c.pushCommits(ctx)
	return c, nil
}

// start opens the stores and transport and starts Raft; on error the
// caller releases whatever was opened.
func (c *Controller) start() error {
	hlog := newHCLog(c.log, hclog.Warn)
	dbPath := filepath.Join(c.cfg.Dir, "raft.db")
	store, err := raftboltdb.New(raftboltdb.Options{
		Path:        dbPath,
		BoltOptions: &bbolt.Options{Timeout: boltLockTimeout},
	})
	if err != nil {
		return fmt.Errorf("open raft store %s: %w", dbPath, err)
	}
	c.store = store
	snaps, err := raft.NewFileSnapshotStoreWithLogger(c.cfg.Dir, 2, hlog)
	if err != nil {
		return fmt.Errorf("open raft snapshots in %s: %w", c.cfg.Dir, err)
	}
	var advertise net.Addr
	if c.cfg.RaftAdvertiseAddr != "" {
		if advertise, err = net.ResolveTCPAddr("tcp", c.cfg.RaftAdvertiseAddr); err != nil {
			return fmt.Errorf("resolve raft advertise address: %w", err)
		}
	}
	// MaxRPCsInFlight 1: no pipelined replication. hashicorp/raft
	// v1.7.2's pipeline deadlocks when a follower refuses an append
	// (log mismatch) while the next one is being sent: its decoder stops
	// reading responses, the transport's reader waits to hand one over,
	// and the sender waits on the reader. Replication to that follower
	// stops for good, with the leader still heartbeating (so keeping its
	// lease), and raft's shutdown waits for the sender forever (seen in
	// a goroutine dump of a node whose stop hung). Metadata commits are
	// few and small; one request at a time per follower costs nothing
	// that matters here.
	tcfg := &raft.NetworkTransportConfig{MaxPool: 3, Timeout: raftIOTimeout, Logger: hlog, MaxRPCsInFlight: 1}
	var transport *raft.NetworkTransport
	if c.cfg.Stream != nil {
		c.streams = newStreamLayer(c.cfg.Stream, advertise)
		tcfg.Stream = c.streams
		transport = raft.NewNetworkTransportWithConfig(tcfg)
	} else {
		transport, err = raft.NewTCPTransportWithConfig(c.cfg.RaftAddr, advertise, tcfg)
		if err != nil {
			return fmt.Errorf("raft transport on %s: %w", c.cfg.RaftAddr, err)
		}
	}
	c.transport = transport

	rc := raft.DefaultConfig()
	rc.LocalID = raft.ServerID(strconv.Itoa(int(c.cfg.NodeID)))
	rc.Logger = hlog
	rc.HeartbeatTimeout = c.cfg.HeartbeatTimeout
	rc.ElectionTimeout = c.cfg.ElectionTimeout
	rc.LeaderLeaseTimeout = c.cfg.LeaderLeaseTimeout
	rc.SnapshotThreshold = c.cfg.SnapshotThreshold
	rc.SnapshotInterval = c.cfg.SnapshotInterval
	rc.TrailingLogs = c.cfg.TrailingLogs
	// A voter taken out of the quorum (DemoteVoter) goes on following the
	// log: this node may still be a broker that needs it.
	rc.ShutdownOnRemove = false
	if err := raft.ValidateConfig(rc); err != nil {
		return fmt.Errorf("raft config: %w", err)
	}

	existing, err := raft.HasExistingState(store, store, snaps)
	if err != nil {
		return fmt.Errorf("inspect raft state in %s: %w", c.cfg.Dir, err)
	}
	if !existing && c.cfg.Join {
		c.log.Info("waiting to be added to the metadata raft cluster", "dir", c.cfg.Dir)
	} else if !existing {
		voters := c.bootstrapServers(rc.LocalID)
		if err := raft.BootstrapCluster(rc, store, store, snaps, transport, voters); err != nil {
			return fmt.Errorf("bootstrap raft cluster: %w", err)
		}
		c.log.Info("bootstrapped metadata raft cluster", "voters", len(voters.Servers), "dir", c.cfg.Dir)
	}
	// Raft reads its requests through commitBound (raftcommit.go); it
	// closes the wrapper, and the transport with it, when it shuts down.
	bound := newCommitBound(transport)
	c.logs = newGrownLogStore(store)
	r, err := raft.NewRaft(rc, c.fsm, c.logs, store, snaps, bound)
	if err != nil {
		bound.Close()
		return fmt.Errorf("start raft: %w", err)
	}
	c.raft = r
	return nil
}

func (c *Controller) bootstrapServers(self raft.ServerID) raft.Configuration {
	var conf raft.Configuration
	selfAddr := c.transport.LocalAddr()
	if addr, ok := c.cfg.Voters[c.cfg.NodeID]; ok && addr != "" {
		// Every voter must name this node by the same address.
		selfAddr = raft.ServerAddress(addr)
	}
	conf.Servers = append(conf.Servers, raft.Server{Suffrage: raft.Voter, ID: self, Address: selfAddr})
	for id, addr := range c.cfg.Voters {
		if id == c.cfg.NodeID {
			continue
		}
		conf.Servers = append(conf.Servers, raft.Server{
			Suffrage: raft.Voter,
			ID:       raft.ServerID(strconv.Itoa(int(id))),
			Address:  raft.ServerAddress(addr),
		})
	}
	return conf
}

// raftIOTimeout bounds each read and write of the Raft transport.
const raftIOTimeout = 10 * time.Second

// raftShutdownGrace is how long raft may take to stop before the
// connections to its peers are cut.
const raftShutdownGrace = 500 * time.Millisecond

// shutdownRaft stops raft. A leader's replication to a peer that does
// not answer (paused, or cut off by the network) waits for that peer
// until raftIOTimeout, and raft's shutdown waits for it: a controller
// stopping beside a paused node took 10 s. Past raftShutdownGrace the
// connections this node dialed are closed, which ends those waits.
func (c *Controller) shutdownRaft() error {
	f := c.raft.Shutdown()
	done := make(chan error, 1)
	go func() { done <- f.Error() }()
	select {
	case err := <-done:
		return err
	case <-time.After(raftShutdownGrace):
	}
	if c.streams != nil {
		n := c.streams.closeDialed()
		c.log.Info("raft still stopping; closed the connections to its peers", "connections", n, "grace", raftShutdownGrace)
	}
	select {
	case err := <-done:
		return err
	case <-time.After(raftStopMax):
	}
	// Something in raft waits on what will not come (its replication
	// pipeline did, until it was turned off: see start). Its log and
	// stable store were fsynced entry by entry, so the process may exit
	// without it; where it waited goes to the log.
	var stacks strings.Builder
	_ = pprof.Lookup("goroutine").WriteTo(&stacks, 2)
	c.log.Error("raft did not stop; leaving it to the process's exit", "waited", raftShutdownGrace+raftStopMax, "goroutines", stacks.String())
	return errRaftStuck
}

// raftStopMax bounds the wait for raft's stop once its connections are
// cut: every wait of its own is bounded by raftIOTimeout by then.
const raftStopMax = 2 * raftIOTimeout

// errRaftStuck: raft did not stop within raftStopMax; its store is left
// open, as raft may still be using it.
var errRaftStuck = errors.New("raft did not stop")

// release closes whatever start opened, in reverse order.
func (c *Controller) release() error {
	var errs []error
	stuck := false
	if c.raft != nil {
		if err := c.shutdownRaft(); err != nil {
			errs = append(errs, fmt.Errorf("shut down raft: %w", err))
			stuck = errors.Is(err, errRaftStuck)
		}
	}
	if c.transport != nil {
		if err := c.transport.Close(); err != nil {
			errs = append(errs, fmt.Errorf("close raft transport: %w", err))
		}
	}
	if c.store != nil && !stuck {
		if err := c.store.Close(); err != nil {
			errs = append(errs, fmt.Errorf("close raft store: %w", err))
		}
	}
	return errors.Join(errs...)
}

// Close stops Raft and closes the transport and stores. Calls in flight
// fail with ErrClosed or ErrNotController. Close is idempotent.
func (c *Controller) Close() error {
	c.closeOnce.Do(func() {
		c.futMu.Lock()
		close(c.closed)
		c.futMu.Unlock()
		c.stop()
		c.bg.Wait()
		c.drainFutures()
		c.closeErr = c.release()
	})
	return c.closeErr
}

// RaftAddr is the address the Raft transport is bound to.
func (c *Controller) RaftAddr() string { return string(c.transport.LocalAddr()) }

// Image returns the current metadata image; never nil.
func (c *Controller) Image() *Image { return c.fsm.current() }

// Changes returns a channel that is closed at the next change to the image
// (a new channel is handed out after that). To follow changes without
// missing any: ch := c.Changes(); im := c.Image(); use im; <-ch; repeat.
// Rejected commands do not close it.
func (c *Controller) Changes() <-chan struct{} { return c.fsm.changes() }

// LogGrown returns a channel closed when entries are next stored in this
// node's Raft log, for a waiter on CaughtUpTo: it can turn true without
// an image change, when the entries still missing were not commands.
func (c *Controller) LogGrown() <-chan struct{} { return c.logs.next() }

// IsLeader reports whether this node is the Raft leader (the controller).
func (c *Controller) IsLeader() bool { return c.raft.State() == raft.Leader }

// Leader returns the current Raft leader's node id and address, if known.
func (c *Controller) Leader() (id int32, addr string, ok bool) {
	a, sid := c.raft.LeaderWithID()
	if sid == "" {
		return -1, "", false
	}
	n, err := strconv.ParseInt(string(sid), 10, 32)
	if err != nil {
		return -1, string(a), false
	}
	return int32(n), string(a), true
}
