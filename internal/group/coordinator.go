package group

import (
	"context"
	"log/slog"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
)

// Log is the coordinator's view of the __consumer_offsets partitions this
// broker leads. The broker implements it on its replicas, as a
// PipelinedLog.
type Log interface {
	// Append writes records (keyed; nil value = tombstone) to partition
	// p and returns once they are committed (acks=-1) or failed.
	Append(ctx context.Context, p int32, records []Record) error
	// Replay calls fn for every record of partition p in offset order, up
	// to the end of the log (as Kafka's coordinator loads it).
	Replay(ctx context.Context, p int32, fn func(Record) error) error
}

// PipelinedLog is a Log that separates appending from waiting for the
// replicas, as Kafka's coordinator does: records are appended under the
// group's lock, so that the log holds them in the order the group
// changed, and the wait for the high watermark happens without it, so
// that the group's other requests go on meanwhile (write.go). A Log that
// is not a PipelinedLog is used through Append, under the lock: fine for
// a log whose Append does not wait (an in-memory one).
type PipelinedLog interface {
	Log
	// AppendLeader appends records to partition p as one batch, as its
	// leader, without waiting for replication. Appends to a partition
	// land in the order of the calls. An error means the records will not
	// be committed through this call: nothing was appended
	// (NOT_LEADER_OR_FOLLOWER, NOT_ENOUGH_REPLICAS, a storage error), or
	// the leadership was lost right after the append.
	AppendLeader(p int32, records []Record) (Appended, error)
	// AwaitCommit returns nil once the batch a is committed (the high
	// watermark passed it), or the reason it cannot be any more (the
	// leadership was lost, the ISR fell below min.insync.replicas), or
	// ctx's error.
	AwaitCommit(ctx context.Context, p int32, a Appended) error
}

// Appended is where AppendLeader put a batch: its last offset and the
// leader epoch it was written in.
type Appended struct {
	LastOffset  int64
	LeaderEpoch int32
	// Committed: the batch was committed when AppendLeader returned (the
	// leader is the only replica in the ISR); there is nothing to wait for.
	Committed bool
}

// syncLog adapts a plain Log: every append is committed when it returns.
type syncLog struct {
	Log
	timeout time.Duration
}

func (l syncLog) AppendLeader(p int32, recs []Record) (Appended, error) {
	ctx, cancel := context.WithTimeout(context.Background(), l.timeout)
	defer cancel()
	if err := l.Append(ctx, p, recs); err != nil {
		return Appended{}, err
	}
	return Appended{LastOffset: -1, LeaderEpoch: -1, Committed: true}, nil
}

func (syncLog) AwaitCommit(context.Context, int32, Appended) error { return nil }

// Topics answers whether a partition exists, for offset commits.
type Topics interface {
	PartitionExists(topic string, partition int32) bool
}

// Config configures a Coordinator. Durations are Kafka's group.* and
// offsets.* keys.
type Config struct {
	Log    Log
	Topics Topics
	Clock  Clock        // nil = SystemClock
	Logger *slog.Logger // nil = slog.Default()

	InitialRebalanceDelay  time.Duration // group.initial.rebalance.delay.ms
	MinSessionTimeout      time.Duration // group.min.session.timeout.ms
	MaxSessionTimeout      time.Duration // group.max.session.timeout.ms
	OffsetsRetention       time.Duration // offsets.retention.minutes
	RetentionCheckInterval time.Duration // offsets.retention.check.interval.ms; 0 = 10 minutes
	MaxMetadataSize        int           // offset.metadata.max.bytes; 0 = 4096
	CommitTimeout          time.Duration // offsets.commit.timeout.ms; 0 = 5 s

	// The consumer protocol (KIP-848).
	TopicMeta                 TopicMetadata // topics by name and id; nil = none exist
	ConsumerHeartbeatInterval time.Duration // group.consumer.heartbeat.interval.ms; 0 = 5 s
	ConsumerSessionTimeout    time.Duration // group.consumer.session.timeout.ms; 0 = 45 s
}

// Coordinator serves the groups whose __consumer_offsets partition this
// broker leads.
type Coordinator struct {
	cfg   Config
	clock Clock
	log   *slog.Logger
	plog  PipelinedLog // cfg.Log

	mu            sync.Mutex
	numPartitions int32
	parts         map[int32]*ownedPartition
	groups        map[string]*group
	closed        bool
	expiry        Timer
}

// ownedPartition is a partition of __consumer_offsets we lead: loading
// until its replay is done. ctx lives as long as we own it: Resign
// cancels it with NOT_COORDINATOR as the cause, which ends the load and
// every wait for a commit of its groups' records.
type ownedPartition struct {
	loaded bool
	epoch  int32 // the leader epoch it was elected at; -1: unknown
	ctx    context.Context
	cancel context.CancelCauseFunc
	done   chan struct{}
}

// New returns a coordinator that owns no partition yet: every group gets
// NOT_COORDINATOR until Elect.
func New(cfg Config) *Coordinator {
	if cfg.Clock == nil {
		cfg.Clock = SystemClock{}
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	if cfg.RetentionCheckInterval <= 0 {
		cfg.RetentionCheckInterval = 10 * time.Minute
	}
	if cfg.MaxMetadataSize <= 0 {
		cfg.MaxMetadataSize = 4096
	}
	if cfg.CommitTimeout <= 0 {
		cfg.CommitTimeout = 5 * time.Second
	}
	if cfg.ConsumerHeartbeatInterval <= 0 {
		cfg.ConsumerHeartbeatInterval = 5 * time.Second
	}
	if cfg.ConsumerSessionTimeout <= 0 {
		cfg.ConsumerSessionTimeout = 45 * time.Second
	}
	c := &Coordinator{
		cfg: cfg, clock: cfg.Clock, log: cfg.Logger,
		parts: map[int32]*ownedPartition{}, groups: map[string]*group{},
	}
	if pl, ok := cfg.Log.(PipelinedLog); ok {
		c.plog = pl
	} else {
		c.plog = syncLog{Log: cfg.Log, timeout: cfg.CommitTimeout}
	}
	c.scheduleExpiry()
	return c
}

// Close resigns every partition and stops the timers. Waiting joins and
// syncs are answered NOT_COORDINATOR.
func (c *Coordinator) Close() {
	c.mu.Lock()
	c.closed = true
	if c.expiry != nil {
		c.expiry.Stop()
	}
	var ps []int32
	for p := range c.parts {
		ps = append(ps, p)
	}
	c.mu.Unlock()
	for _, p := range ps {
		c.Resign(p)
	}
}

// Elect makes this coordinator the owner of partition p of a
// __consumer_offsets with n partitions. The partition is replayed in the
// background; its groups answer COORDINATOR_LOAD_IN_PROGRESS meanwhile.
// Electing an owned partition again does nothing.
func (c *Coordinator) Elect(p, n int32) { c.ElectEpoch(p, n, -1) }

// ElectEpoch is Elect at the partition's leader epoch (Kafka's
// coordinator epoch). Owned at another epoch, the partition is resigned
// and loaded again: the leadership went away and came back, and another
// coordinator may have written to it meanwhile. -1 matches any epoch.
func (c *Coordinator) ElectEpoch(p, n, epoch int32) {
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		return
	}
	c.numPartitions = n
	if op := c.parts[p]; op != nil {
		if epoch < 0 || op.epoch < 0 || op.epoch == epoch {
			c.mu.Unlock()
			return
		}
		c.mu.Unlock()
		c.log.Info("consumer offsets partition led again at a new leader epoch; reloading",
			slog.Int("partition", int(p)), slog.Int("old.epoch", int(op.epoch)), slog.Int("epoch", int(epoch)))
		c.Resign(p)
		c.mu.Lock()
		if c.closed || c.parts[p] != nil {
			c.mu.Unlock()
			return
		}
	}
	defer c.mu.Unlock()
	ctx, cancel := context.WithCancelCause(context.Background())
	op := &ownedPartition{epoch: epoch, ctx: ctx, cancel: cancel, done: make(chan struct{})}
	c.parts[p] = op
	go func() {
		defer close(op.done)
		c.load(ctx, p, op)
	}()
}

// Resign forgets partition p's groups (another broker leads it now, or
// the topic went away). Members waiting in JoinGroup or SyncGroup, and
// requests waiting for their records to commit, are answered
// NOT_COORDINATOR and find the new coordinator.
func (c *Coordinator) Resign(p int32) {
	c.mu.Lock()
	op := c.parts[p]
	delete(c.parts, p)
	var gs []*group
	for id, g := range c.groups {
		if g.partition == p {
			gs = append(gs, g)
			delete(c.groups, id)
		}
	}
	c.mu.Unlock()
	if op != nil {
		op.cancel(kerr.NotCoordinator)
		<-op.done
	}
	for _, g := range gs {
		g.mu.Lock()
		c.shutdownGroup(g, kerr.NotCoordinator)
		g.mu.Unlock()
	}
}

// Owned lists the partitions this coordinator owns and whether each has
// finished loading.
func (c *Coordinator) Owned() map[int32]bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := make(map[int32]bool, len(c.parts))
	for p, op := range c.parts {
		out[p] = op.loaded
	}
	return out
}

// shutdownGroup fails whoever waits on g and stops its timers; g is Dead.
func (c *Coordinator) shutdownGroup(g *group, err *kerr.Error) {
	for _, m := range g.members {
		if m.hbTimer != nil {
			m.hbTimer.Stop()
		}
		m.hbSeq++
		if m.joinCB != nil {
			m.joinCB(JoinResult{Err: err, MemberID: m.id, Generation: -1})
			m.joinCB = nil
		}
		if m.syncCB != nil {
			m.syncCB(SyncResult{Err: err})
			m.syncCB = nil
		}
	}
	for _, t := range g.pending {
		t.Stop()
	}
	if g.rebalanceTimer != nil {
		g.rebalanceTimer.Stop()
	}
	g.rebalanceSeq++
	c.stopPendingSync(g)
	if g.consumer != nil {
		for _, m := range g.consumer.members {
			m.stopTimers()
		}
	}
	g.transition(Dead, c.clock.Now())
}

// partitionOfLocked checks that this coordinator serves group id and
// returns the group's partition. The empty id is refused unless
// allowEmpty (see lockOffsetsGroup).
func (c *Coordinator) partitionOfLocked(id string, allowEmpty bool) (int32, *kerr.Error) {
	if id == "" && !allowEmpty {
		return 0, kerr.InvalidGroupID
	}
	if c.closed || c.numPartitions <= 0 {
		return 0, kerr.NotCoordinator
	}
	p := PartitionFor(id, c.numPartitions)
	op := c.parts[p]
	switch {
	case op == nil:
		return 0, kerr.NotCoordinator
	case !op.loaded:
		return 0, kerr.CoordinatorLoadInProgress
	}
	return p, nil
}

// CheckGroup reports the error a request for group id gets before
// anything else: INVALID_GROUP_ID, NOT_COORDINATOR or
// COORDINATOR_LOAD_IN_PROGRESS (nil when this coordinator serves it).
func (c *Coordinator) CheckGroup(id string) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, err := c.partitionOfLocked(id, false); err != nil {
		return err
	}
	return nil
}

// checkOffsetsGroup is CheckGroup for the APIs that accept the empty
// group id (see lockOffsetsGroup).
func (c *Coordinator) checkOffsetsGroup(id string) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, err := c.partitionOfLocked(id, true); err != nil {
		return err
	}
	return nil
}

// lockGroup returns group id locked, creating it (Empty) if asked. A nil
// group and nil error mean "no such group". The empty id is
// INVALID_GROUP_ID.
func (c *Coordinator) lockGroup(id string, create bool) (*group, error) {
	return c.lockGroupID(id, create, false)
}

// lockOffsetsGroup is lockGroup for the APIs where Kafka accepts the
// empty group id: OffsetCommit and OffsetFetch (for backwards
// compatibility), DescribeGroups and DeleteGroups (so that such a
// group's state can be seen and removed).
func (c *Coordinator) lockOffsetsGroup(id string, create bool) (*group, error) {
	return c.lockGroupID(id, create, true)
}

func (c *Coordinator) lockGroupID(id string, create, allowEmpty bool) (*group, error) {
	for {
		c.mu.Lock()
		p, kerrErr := c.partitionOfLocked(id, allowEmpty)
		if kerrErr != nil {
			c.mu.Unlock()
			return nil, kerrErr
		}
		g := c.groups[id]
		if g == nil && create {
			g = newGroup(id, p, c.clock.Now())
			g.ctx = c.parts[p].ctx
			c.groups[id] = g
		}
		c.mu.Unlock()
		if g == nil {
			return nil, nil
		}
		g.mu.Lock()
		if g.state != Dead {
			return g, nil
		}
		g.mu.Unlock()
		c.forget(g)
		if !create {
			return nil, nil
		}
	}
}

// forget removes a Dead group from the map (if it is still the one there).
func (c *Coordinator) forget(g *group) {
	c.mu.Lock()
	if c.groups[g.id] == g {
		delete(c.groups, g.id)
	}
	c.mu.Unlock()
}

// snapshotGroups lists the groups currently known.
func (c *Coordinator) snapshotGroups() []*group {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := make([]*group, 0, len(c.groups))
	for _, g := range c.groups {
		out = append(out, g)
	}
	return out
}

// storeGroup appends g's metadata (members, generation, and the given
// assignments, or the members' own if nil); complete runs once it is
// committed or failed (see write).
func (c *Coordinator) storeGroup(g *group, assignments map[string][]byte, complete func(error)) (*pendingWrite, error) {
	return c.write(g, []Record{groupRecord(g.id, g.metadataValueWith(c.clock.Now(), assignments))}, plainWrite, complete)
}
