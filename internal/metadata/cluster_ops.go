package metadata

import (
	"context"
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"
)

// BrokerRegistration is what a broker's BrokerRegistration request says.
type BrokerRegistration struct {
	ID int32
	// Incarnation is random for every start of the broker process (Kafka's
	// IncarnationId); it must not be zero.
	Incarnation [16]byte
	// Host and Port are what Metadata responses advertise (the first
	// listener); Endpoints lists every listener.
	Host      string
	Port      int32
	Rack      string
	Endpoints []Endpoint
	// PreviousEpoch is the epoch of the broker's last registration if its
	// logs lost nothing since (a clean shutdown, or a crash the machine
	// survived, so the page cache kept every write); -1 otherwise
	// (Kafka's PreviousBrokerEpoch, KIP-966). A broker that names another
	// epoch than its last leaves every ELR (elr.go).
	PreviousEpoch int64
}

// RegisterIncarnation registers a broker process and returns its broker
// epoch. A new incarnation starts fenced (call UnfenceBroker once its
// heartbeat says it caught up); an earlier incarnation of the same id is
// fenced first. Registering the same incarnation again returns the same
// epoch and changes nothing.
//
// Kafka refuses a new incarnation with DUPLICATE_BROKER_REGISTRATION while
// the old one still has a live heartbeat session; sessions are the
// caller's (the heartbeat handler's), so that check is the caller's too.
func (c *Controller) RegisterIncarnation(ctx context.Context, r BrokerRegistration) (int64, error) {
	if err := c.checkLeader(); err != nil {
		return 0, err
	}
	switch {
	case r.ID < 0:
		return 0, fmt.Errorf("%w: register broker: invalid id %d", ErrInvalidRequest, r.ID)
	case r.Incarnation == [16]byte{}:
		return 0, fmt.Errorf("%w: register broker %d: zero incarnation id", ErrInvalidRequest, r.ID)
	case r.Port < 0 || r.Port > math.MaxUint16:
		return 0, fmt.Errorf("%w: register broker %d: invalid port %d", ErrInvalidRequest, r.ID, r.Port)
	}
	b := Broker{ID: r.ID, Host: r.Host, Port: r.Port, Rack: r.Rack, Endpoints: r.Endpoints, Incarnation: r.Incarnation}
	old, _ := c.Image().Broker(r.ID)
	res, err := c.propose(ctx, cmdRegisterBroker, registerBrokerCmd{Broker: b, PreviousEpoch: &r.PreviousEpoch})
	if err != nil {
		return 0, fmt.Errorf("register broker %d: %w", r.ID, err)
	}
	if old.Incarnation != r.Incarnation {
		c.electUncleanAfter(ctx, "registration")
	}
	return res.brokerEpoch, nil
}

// FenceBroker fences broker id at registration epoch (its session timed
// out, or its heartbeat asked WantFence): it leaves every ISR it is in but
// the ones it is alone in, and every partition it led elects a new leader
// from the ISR or goes offline. Fencing a fenced broker does nothing.
func (c *Controller) FenceBroker(ctx context.Context, id int32, epoch int64) error {
	b, err := c.checkBroker(id, epoch)
	if err != nil {
		return fmt.Errorf("fence broker: %w", err)
	}
	if b.Fenced {
		return nil
	}
	if _, err := c.propose(ctx, cmdFenceBroker, fenceBrokerCmd{brokerRef{ID: id, Epoch: epoch}}); err != nil {
		return fmt.Errorf("fence broker %d: %w", id, err)
	}
	c.electUncleanAfter(ctx, "fence")
	return nil
}

// UnfenceBroker unfences broker id at registration epoch (its heartbeat
// says it caught up with the metadata); it then leads the offline
// partitions whose ISR holds it. A broker in controlled shutdown cannot be
// unfenced (ErrInvalidRequest), as in Kafka. Unfencing an unfenced broker
// does nothing.
func (c *Controller) UnfenceBroker(ctx context.Context, id int32, epoch int64) error {
	b, err := c.checkBroker(id, epoch)
	if err != nil {
		return fmt.Errorf("unfence broker: %w", err)
	}
	if b.InControlledShutdown {
		return fmt.Errorf("%w: unfence broker %d: it is in controlled shutdown", ErrInvalidRequest, id)
	}
	if !b.Fenced {
		return nil
	}
	if _, err := c.propose(ctx, cmdUnfenceBroker, unfenceBrokerCmd{brokerRef{ID: id, Epoch: epoch}}); err != nil {
		return fmt.Errorf("unfence broker %d: %w", id, err)
	}
	c.electUncleanAfter(ctx, "unfence")
	return nil
}

// BeginControlledShutdown starts (or continues) broker id's controlled
// shutdown (its heartbeat says WantShutDown): its leaderships move to other
// eligible ISR members and it leaves every ISR that has other members; a
// partition it alone can lead keeps it. Answer the heartbeat with
// Image().ShouldShutDown(id) afterwards, and fence the broker once it is
// true (Kafka's SHUTDOWN_NOW).
func (c *Controller) BeginControlledShutdown(ctx context.Context, id int32, epoch int64) error {
	b, err := c.checkBroker(id, epoch)
	if err != nil {
		return fmt.Errorf("begin controlled shutdown: %w", err)
	}
	if b.InControlledShutdown && c.Image().ShouldShutDown(id) {
		return nil
	}
	if _, err := c.propose(ctx, cmdBeginControlledShutdown, controlledShutdownCmd{brokerRef{ID: id, Epoch: epoch}}); err != nil {
		return fmt.Errorf("begin controlled shutdown of broker %d: %w", id, err)
	}
	return nil
}

// checkBroker fails fast unless this node leads and broker id is
// registered at epoch.
func (c *Controller) checkBroker(id int32, epoch int64) (*Broker, error) {
	if err := c.checkLeader(); err != nil {
		return nil, err
	}
	return checkBrokerEpoch(c.Image(), id, epoch)
}

// AlterPartition applies an AlterPartition request and answers each update
// (see AlterPartitionResult). The request fails as a whole with
// ErrStaleBrokerEpoch, ErrNotController or ErrClosed. Updates that already
// fail against the current image are answered without being proposed.
func (c *Controller) AlterPartition(ctx context.Context, r AlterPartitionRequest) ([]AlterPartitionResult, error) {
	im := c.Image()
	if _, err := c.checkBroker(r.BrokerID, r.BrokerEpoch); err != nil {
		return nil, fmt.Errorf("alter partition: %w", err)
	}
	out := make([]AlterPartitionResult, len(r.Updates))
	var propose []ISRUpdate
	var at []int
	for i, u := range r.Updates {
		if _, _, err := alterOne(im, r.BrokerID, u); err != nil {
			out[i] = AlterPartitionResult{TopicID: u.TopicID, Partition: u.Partition, Err: err}
			continue
		}
		propose = append(propose, u)
		at = append(at, i)
	}
	if len(propose) == 0 {
		return out, nil
	}
	res, err := c.propose(ctx, cmdAlterPartition, alterPartitionCmd{BrokerID: r.BrokerID, BrokerEpoch: r.BrokerEpoch, Updates: propose})
	if err != nil {
		return nil, fmt.Errorf("alter partition from broker %d: %w", r.BrokerID, err)
	}
	for j, i := range at {
		out[i] = res.altered[j]
	}
	return out, nil
}

// ElectLeaders runs preferred or unclean elections, as Kafka's ElectLeaders
// does, and answers each partition (see ElectionResult) in request order.
// partitions nil means every partition of every topic, and then the
// partitions that need no election are left out of the answer. An unclean
// election asked for here is an admin's explicit choice and ignores
// unclean.leader.election.enable, as in Kafka.
func (c *Controller) ElectLeaders(ctx context.Context, typ ElectionType, partitions []TopicPartition) ([]ElectionResult, error) {
	if err := c.checkLeader(); err != nil {
		return nil, err
	}
	if typ != ElectPreferred && typ != ElectUnclean {
		return nil, fmt.Errorf("%w: elect leaders: unknown %v", ErrInvalidRequest, typ)
	}
	im := c.Image()
	all := partitions == nil
	if all {
		for _, name := range im.SortedTopicNames() {
			for _, p := range im.TopicByName(name).Partitions {
				partitions = append(partitions, TopicPartition{Topic: name, Partition: p.Partition})
			}
		}
	}
	out := make([]ElectionResult, len(partitions))
	var cmd electLeadersCmd
	var at []int
	for i, tp := range partitions {
		out[i] = ElectionResult{Topic: tp.Topic, Partition: tp.Partition, Leader: -1}
		t := im.TopicByName(tp.Topic)
		if t == nil || tp.Partition < 0 || int(tp.Partition) >= len(t.Partitions) {
			out[i].Err = fmt.Errorf("elect leaders: %w: %s-%d", ErrUnknownTopic, tp.Topic, tp.Partition)
			continue
		}
		if _, err := im.elect(t, t.Partitions[tp.Partition], typ); err != nil {
			out[i].Err = fmt.Errorf("elect leaders: %s-%d: %w", tp.Topic, tp.Partition, err)
			continue
		}
		cmd.Partitions = append(cmd.Partitions, partitionRef{TopicID: t.ID, Partition: tp.Partition})
		at = append(at, i)
	}
	if len(at) > 0 {
		cmd.Type = typ
		res, err := c.propose(ctx, cmdElectLeaders, cmd)
		if err != nil {
			return nil, fmt.Errorf("elect %v leaders: %w", typ, err)
		}
		for j, i := range at {
			out[i].Leader, out[i].Err = res.elected[j].Leader, res.elected[j].Err
		}
	}
	if all {
		out = slices.DeleteFunc(out, func(r ElectionResult) bool { return errors.Is(r.Err, ErrElectionNotNeeded) })
	}
	return out, nil
}

// ElectUncleanLeaders gives a leader, by unclean election, to every offline
// partition whose topic enables unclean.leader.election.enable (its
// override, else Config.UncleanLeaderElectionEnable) and that has a live
// replica. FenceBroker, UnfenceBroker and RegisterIncarnation call it after
// their change, as Kafka elects uncleanly where allowed on those events;
// call it periodically too to retry after a failure, and to act on a
// topic whose config was switched on while it was offline.
//
// Every election it makes is logged here, whichever path asked for it;
// an unclean one as a warning naming the partition, the new leader and
// the ISR it replaces: records only those replicas had may be lost.
func (c *Controller) ElectUncleanLeaders(ctx context.Context) ([]ElectionResult, error) {
	if err := c.checkLeader(); err != nil {
		return nil, err
	}
	im := c.Image()
	var cmd electLeadersCmd
	var before []Partition
	cmd.Type = ElectUnclean
	for _, t := range im.sortedTopics() {
		if !c.uncleanEnabled(t) {
			continue
		}
		for _, p := range t.Partitions {
			if _, err := im.elect(t, p, ElectUnclean); err == nil {
				cmd.Partitions = append(cmd.Partitions, partitionRef{TopicID: t.ID, Partition: p.Partition})
				before = append(before, p)
			}
		}
	}
	if len(cmd.Partitions) == 0 {
		return nil, nil
	}
	res, err := c.propose(ctx, cmdElectLeaders, cmd)
	if err != nil {
		return nil, fmt.Errorf("elect unclean leaders: %w", err)
	}
	after := c.Image()
	for i, r := range res.elected {
		if r.Err != nil {
			continue
		}
		np, _ := after.Partition(r.Topic, r.Partition)
		attrs := []any{"topic", r.Topic, "partition", r.Partition, "leader", r.Leader, "leader_epoch", np.LeaderEpoch,
			"old_isr", before[i].ISR, "replicas", before[i].Replicas}
		if slices.Contains(before[i].ISR, r.Leader) {
			c.log.Info("offline partition led again by a member of its ISR", attrs...)
			continue
		}
		c.log.Warn("unclean leader election: records only the old ISR had may be lost", attrs...)
	}
	return res.elected, nil
}

// electUncleanAfter runs ElectUncleanLeaders after a lifecycle change. Its
// failure does not undo the change; the next change or periodic call
// retries, so it is only logged.
func (c *Controller) electUncleanAfter(ctx context.Context, what string) {
	if _, err := c.ElectUncleanLeaders(ctx); err != nil {
		c.log.Warn("unclean leader election after "+what, "err", err)
	}
}

// uncleanEnabled resolves unclean.leader.election.enable for t.
func (c *Controller) uncleanEnabled(t *Topic) bool {
	if v, ok := t.Configs[uncleanLeaderElectionKey]; ok {
		return strings.EqualFold(strings.TrimSpace(v), "true")
	}
	return c.cfg.UncleanLeaderElectionEnable
}

// uncleanLeaderElectionKey is Kafka's topic (and broker default) config.
const uncleanLeaderElectionKey = "unclean.leader.election.enable"
