package metadata

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
)

// CreateTopic describes a topic to create, as in Kafka's CreateTopics.
type CreateTopic struct {
	Name string
	// NumPartitions and ReplicationFactor: -1 means the configured default.
	// Both must be -1 when Assignments is given.
	NumPartitions     int32
	ReplicationFactor int16
	// Assignments optionally gives the replicas of each partition, keyed
	// 0..n-1; the first replica leads.
	Assignments map[int32][]int32
	Configs     map[string]string
	// ValidateOnly checks everything and returns the topic that would be
	// created (with a zero ID) without creating it.
	ValidateOnly bool
	// Internal marks a topic the brokers create for themselves
	// (__consumer_offsets): the partition limits do not refuse it, as
	// KIP-578 exempts internal topics so that group coordination keeps
	// working at the limit, but its partitions count towards them.
	Internal bool
	// Prepare, if set, makes the creation atomic: the topic is first
	// recorded as pending (its name and partitions reserved, invisible to
	// readers), then Prepare opens whatever must exist before clients may
	// use it (the local replicas), and only then is the topic activated.
	// If Prepare fails the topic is removed again and its error returned:
	// CreateTopic either succeeds with a usable topic or creates nothing.
	// Prepare gets ctx's values but not its deadline, since a creation
	// once recorded must be finished or undone, not left half-way.
	Prepare func(ctx context.Context, t *Topic) error
}

// RegisterBroker records b as a legacy registration (replacing an earlier
// registration of its id): unfenced at once, broker epoch 0, no
// incarnation. It is what a broker without heartbeats does at start; a
// broker that heartbeats registers with RegisterIncarnation instead.
func (c *Controller) RegisterBroker(ctx context.Context, b Broker) error {
	b.Incarnation, b.Epoch, b.Fenced, b.InControlledShutdown = [16]byte{}, 0, false, false
	_, err := c.propose(ctx, cmdRegisterBroker, registerBrokerCmd{Broker: b})
	if err != nil {
		return fmt.Errorf("register broker %d: %w", b.ID, err)
	}
	return nil
}

// CreateTopic validates r, places its replicas and creates the topic. The
// returned topic is shared with the image and must not be modified.
func (c *Controller) CreateTopic(ctx context.Context, r CreateTopic) (*Topic, error) {
	if err := c.checkLeader(); err != nil {
		return nil, err
	}
	im := c.Image()
	if err := c.checkTopicName(r.Name); err != nil {
		return nil, err
	}
	// A name held by a pending topic is neither free nor taken: its
	// creation may still activate it or abort it (an orphan is aborted
	// for sure). "Already exists" would name a topic that may never
	// appear, so the answer is retriable; the retry sees how it ended.
	if t := im.TopicByNameWithPending(r.Name); t != nil && t.Pending {
		if c.isOrphan(t) {
			c.requestSweep()
		}
		return nil, fmt.Errorf("%w: topic %q: retry", ErrTopicCreationUnsettled, r.Name)
	}
	if err := checkNewTopicName(im, r.Name); err != nil {
		return nil, err
	}
	assignments, err := c.assignmentsFor(im, r)
	if err != nil {
		return nil, fmt.Errorf("create topic %q: %w", r.Name, err)
	}
	for k, v := range r.Configs {
		if err := c.checkConfig(k, v); err != nil {
			return nil, fmt.Errorf("create topic %q: %w", r.Name, err)
		}
	}
	limits := c.limits()
	if r.Internal {
		limits = nil
	}
	if err := limits.check(im, r.Name, assignments); err != nil {
		return nil, err
	}
	if r.ValidateOnly {
		return &Topic{Name: r.Name, Partitions: newPartitions(im, 0, assignments), Configs: r.Configs}, nil
	}
	cmd := createTopicCmd{Name: r.Name, Assignments: assignments, Configs: r.Configs, Limits: limits, Pending: r.Prepare != nil}
	for {
		if cmd.ID, err = newUUID(); err != nil {
			return nil, err
		}
		if im.topicsByID[cmd.ID] == nil { // pending topics hold their id too
			break
		}
	}
	if r.Prepare != nil {
		return c.createPrepared(ctx, cmd, r.Prepare)
	}
	res, err := c.propose(ctx, cmdCreateTopic, cmd)
	if err != nil {
		return nil, fmt.Errorf("create topic %q: %w", r.Name, err)
	}
	return res.topic, nil
}

// limits is the configured partition limits, nil when there are none.
func (c *Controller) limits() *PartitionLimits {
	if c.cfg.Limits.none() {
		return nil
	}
	l := c.cfg.Limits
	return &l
}

// assignmentsFor returns the replica lists for a new topic: the manual
// assignment checked, or a placement over the available brokers.
func (c *Controller) assignmentsFor(im *Image, r CreateTopic) ([][]int32, error) {
	if len(r.Assignments) > 0 {
		if r.NumPartitions != -1 || r.ReplicationFactor != -1 {
			return nil, fmt.Errorf("%w: with a replica assignment, partitions and replication factor must be -1", ErrInvalidRequest)
		}
		if err := checkPartitionCount(len(r.Assignments)); err != nil {
			return nil, err
		}
		out := make([][]int32, len(r.Assignments))
		for p, replicas := range r.Assignments {
			if p < 0 || int(p) >= len(out) {
				return nil, fmt.Errorf("%w: partitions must be numbered 0 to %d, got %d", ErrInvalidReplicaAssignment, len(out)-1, p)
			}
			out[p] = replicas
		}
		return out, checkAssignments(im, out, 0, 0)
	}
	np, rf := int(r.NumPartitions), int(r.ReplicationFactor)
	if np == -1 {
		np = int(c.cfg.DefaultPartitions)
	}
	if rf == -1 {
		rf = int(c.cfg.DefaultReplicationFactor)
	}
	if err := checkPartitionCount(np); err != nil {
		return nil, err
	}
	brokers, err := brokersFor(im, rf)
	if err != nil {
		return nil, err
	}
	return place(brokers, 0, np, rf, rand.IntN(len(brokers))), nil
}

// brokersFor returns the brokers placement may use (registered, unfenced,
// not shutting down) if they can hold rf replicas of a partition.
func brokersFor(im *Image, rf int) ([]placementBroker, error) {
	if rf < 1 {
		return nil, fmt.Errorf("%w: replication factor must be at least 1, got %d", ErrInvalidReplicationFactor, rf)
	}
	brokers := im.placementBrokers()
	if rf > len(brokers) {
		return nil, fmt.Errorf("%w: replication factor %d larger than %d available brokers", ErrInvalidReplicationFactor, rf, len(brokers))
	}
	return brokers, nil
}

func (c *Controller) checkTopicName(name string) error {
	if err := c.cfg.ValidateTopicName(name); err != nil {
		if errors.Is(err, ErrInvalidTopic) {
			return err
		}
		return fmt.Errorf("%w: %v", ErrInvalidTopic, err)
	}
	return validTopicName(name) // what the state machine will check again
}

func (c *Controller) checkConfig(k, v string) error {
	if err := c.cfg.ValidateTopicConfig(k, v); err != nil {
		if errors.Is(err, ErrInvalidConfig) {
			return err
		}
		return fmt.Errorf("%w: %v", ErrInvalidConfig, err)
	}
	return defaultValidateTopicConfig(k, v)
}

// DeleteTopic deletes the named topic.
func (c *Controller) DeleteTopic(ctx context.Context, name string) error {
	if err := c.checkLeader(); err != nil {
		return err
	}
	t := c.Image().TopicByName(name)
	if t == nil {
		return fmt.Errorf("delete topic: %w: topic %q does not exist", ErrUnknownTopic, name)
	}
	if _, err := c.propose(ctx, cmdDeleteTopic, deleteTopicCmd{Name: name, ID: t.ID}); err != nil {
		return fmt.Errorf("delete topic %q: %w", name, err)
	}
	return nil
}

// CreatePartitions grows the named topic to total partitions. assignments,
// if not nil, gives the replicas of each new partition (total minus the
// current count of them), with the topic's replication factor.
func (c *Controller) CreatePartitions(ctx context.Context, name string, total int32, assignments [][]int32, validateOnly bool) error {
	if err := c.checkLeader(); err != nil {
		return err
	}
	im := c.Image()
	t := im.TopicByName(name)
	if t == nil {
		return fmt.Errorf("create partitions: %w: topic %q does not exist", ErrUnknownTopic, name)
	}
	cur := len(t.Partitions)
	if err := checkTotalPartitions(name, cur, int(total)); err != nil {
		return err
	}
	rf := len(t.Partitions[0].TargetReplicas())
	add := int(total) - cur
	if assignments != nil {
		if len(assignments) != add {
			return fmt.Errorf("%w: topic %q: adding %d partitions but %d assignments given", ErrInvalidReplicaAssignment, name, add, len(assignments))
		}
		if err := checkAssignments(im, assignments, rf, cur); err != nil {
			return fmt.Errorf("create partitions for %q: %w", name, err)
		}
	} else {
		brokers, err := brokersFor(im, rf)
		if err != nil {
			return fmt.Errorf("create partitions for %q: %w", name, err)
		}
		assignments = place(brokers, cur, add, rf, rand.IntN(len(brokers)))
	}
	limits := c.limits()
	if err := limits.check(im, name, assignments); err != nil {
		return err
	}
	if validateOnly {
		return nil
	}
	cmd := createPartitionsCmd{Name: name, ID: t.ID, Total: total, Assignments: assignments, Limits: limits}
	if _, err := c.propose(ctx, cmdCreatePartitions, cmd); err != nil {
		return fmt.Errorf("create partitions for %q: %w", name, err)
	}
	return nil
}

// AlterTopicConfigs changes the named topic's config overrides: a nil value
// deletes an override; replaceAll (legacy AlterConfigs) drops every
// override not named in set.
func (c *Controller) AlterTopicConfigs(ctx context.Context, name string, set map[string]*string, replaceAll, validateOnly bool) error {
	if err := c.checkLeader(); err != nil {
		return err
	}
	t := c.Image().TopicByName(name)
	if t == nil {
		return fmt.Errorf("alter configs: %w: topic %q does not exist", ErrUnknownTopic, name)
	}
	for k, v := range set {
		if v == nil {
			// Deleting needs no value check, only a real key.
			if k == "" {
				return fmt.Errorf("alter configs for %q: %w: empty config name", name, ErrInvalidConfig)
			}
			continue
		}
		if err := c.checkConfig(k, *v); err != nil {
			return fmt.Errorf("alter configs for %q: %w", name, err)
		}
	}
	if validateOnly {
		return nil
	}
	cmd := alterConfigsCmd{Name: name, ID: t.ID, Set: set, ReplaceAll: replaceAll}
	if _, err := c.propose(ctx, cmdAlterConfigs, cmd); err != nil {
		return fmt.Errorf("alter configs for %q: %w", name, err)
	}
	return nil
}

// AllocateProducerIDs reserves n consecutive producer ids and returns the
// first. Blocks never overlap, across restarts and leader changes alike.
func (c *Controller) AllocateProducerIDs(ctx context.Context, n int64) (int64, error) {
	if n < 1 || n > maxProducerIDBlock {
		return 0, fmt.Errorf("allocate producer ids: %w: block size %d not in [1, %d]", ErrInvalidRequest, n, maxProducerIDBlock)
	}
	res, err := c.propose(ctx, cmdAllocateProducerIDs, allocateProducerIDsCmd{N: n})
	if err != nil {
		return 0, fmt.Errorf("allocate %d producer ids: %w", n, err)
	}
	return res.firstProducerID, nil
}
