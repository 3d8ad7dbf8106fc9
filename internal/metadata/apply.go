package metadata

import (
	"fmt"
	"maps"
	"math"
	"slices"
)

// applyResult is what FSM.Apply returns through the ApplyFuture's Response.
type applyResult struct {
	topic           *Topic                 // create_topic
	firstProducerID int64                  // allocate_producer_ids
	brokerEpoch     int64                  // register_broker
	altered         []AlterPartitionResult // alter_partition
	elected         []ElectionResult       // elect_leaders
	reassigned      []error                // reassign_partitions, per partition
	err             error
}

// applyCommand applies one log entry to im and returns the next image. On
// error im itself is returned unchanged (with the index advanced), so a
// rejected command is a no-op on every replica alike. It never panics on
// malformed input.
func applyCommand(im *Image, index uint64, data []byte) (*Image, applyResult) {
	typ, payload, err := decodeCommand(data)
	if err != nil {
		return im.atIndex(index), applyResult{err: err}
	}
	next := im.clone()
	next.index = index
	var res applyResult
	switch c := payload.(type) {
	case *fenceBrokerCmd:
		res.err = applyFenceBroker(next, index, c)
	case *unfenceBrokerCmd:
		res.err = applyUnfenceBroker(next, c)
	case *controlledShutdownCmd:
		res.err = applyBeginControlledShutdown(next, c)
	case *alterPartitionCmd:
		res.altered, res.err = applyAlterPartition(next, c)
	case *electLeadersCmd:
		res.elected, res.err = applyElectLeaders(next, c)
	case *reassignPartitionsCmd:
		res.reassigned = applyReassignPartitions(next, c)
	case *unregisterBrokerCmd:
		res.err = applyUnregisterBroker(next, c)
	case *registerControllerCmd:
		res.err = applyRegisterController(next, c)
	case *bootstrapCmd:
		res.err = applyBootstrap(next, c)
	case *staticDefaultsCmd:
		res.err = applyStaticDefaults(next, c)
	case *registerBrokerCmd:
		res.brokerEpoch, res.err = applyRegisterBroker(next, index, c)
	case *createTopicCmd:
		res.topic, res.err = applyCreateTopic(next, c)
	case *deleteTopicCmd:
		res.err = applyDeleteTopic(next, c)
	case *createPartitionsCmd:
		res.err = applyCreatePartitions(next, c)
	case *alterConfigsCmd:
		res.err = applyAlterConfigs(next, c)
	case *alterBrokerConfigsCmd:
		res.err = applyAlterBrokerConfigs(next, c)
	case *allocateProducerIDsCmd:
		res.firstProducerID, res.err = applyAllocateProducerIDs(next, c)
	case *topicRefCmd:
		if typ == cmdActivateTopic {
			res.topic, res.err = applyActivateTopic(next, c)
		} else {
			res.err = applyAbortTopic(next, c)
		}
	default:
		res.err = fmt.Errorf("apply: no handler for command type %q", typ)
	}
	if res.err != nil {
		return im.atIndex(index), res
	}
	return next, res
}

// atIndex returns im with only the index moved; images are immutable, so
// this is a shallow copy sharing the maps.
func (im *Image) atIndex(index uint64) *Image {
	cp := *im
	cp.index = index
	return &cp
}

func applyBootstrap(im *Image, c *bootstrapCmd) error {
	if c.ClusterID == "" {
		return fmt.Errorf("bootstrap: empty cluster id")
	}
	if im.clusterID == "" {
		im.clusterID = c.ClusterID
		im.defaultMinISR = max(c.MinISR, 0)
	}
	return nil // a second bootstrap keeps the first id and default
}

// applyStaticDefaults replaces the recorded static min.insync.replicas.
// A lower minimum may be met by ISRs that were below the old one: their
// ELRs are emptied, as after a topic's own minimum is lowered. A higher
// one leaves every ELR valid: its members left an ISR below the old
// minimum, so below the new one too, and the high watermark has not moved
// since.
func applyStaticDefaults(im *Image, c *staticDefaultsCmd) error {
	if c.MinISR < 1 {
		return fmt.Errorf("%w: static min.insync.replicas %d below 1", ErrInvalidConfig, c.MinISR)
	}
	im.defaultMinISR = c.MinISR
	clearSatisfiedELRs(im)
	return nil
}

// newPartitions builds fresh partitions numbered from first, epochs 0: the
// ISR is the eligible replicas (an empty partition's replicas all hold
// everything, as in Kafka) and the leader the first of them, -1 if none
// (checkAssignments refuses that).
func newPartitions(im *Image, first int, assignments [][]int32) []Partition {
	out := make([]Partition, len(assignments))
	for i, replicas := range assignments {
		isr := make([]int32, 0, len(replicas))
		for _, r := range replicas {
			if im.eligible(r) {
				isr = append(isr, r)
			}
		}
		leader := int32(-1)
		if len(isr) > 0 {
			leader = isr[0]
		}
		out[i] = Partition{
			Partition: int32(first + i),
			Leader:    leader,
			Replicas:  slices.Clone(replicas),
			ISR:       isr,
		}
	}
	return out
}

func applyCreateTopic(im *Image, c *createTopicCmd) (*Topic, error) {
	if err := validTopicName(c.Name); err != nil {
		return nil, err
	}
	if err := checkNewTopicName(im, c.Name); err != nil {
		return nil, err
	}
	if c.ID == ([16]byte{}) {
		return nil, fmt.Errorf("%w: create topic %q: zero topic id", ErrInvalidRequest, c.Name)
	}
	if other := im.topicsByID[c.ID]; other != nil {
		return nil, fmt.Errorf("%w: create topic %q: id already used by topic %q", ErrInvalidRequest, c.Name, other.Name)
	}
	if err := checkPartitionCount(len(c.Assignments)); err != nil {
		return nil, err
	}
	if err := checkAssignments(im, c.Assignments, 0, 0); err != nil {
		return nil, err
	}
	if err := c.Limits.check(im, c.Name, c.Assignments); err != nil {
		return nil, err
	}
	for k := range c.Configs {
		if k == "" {
			return nil, fmt.Errorf("%w: create topic %q: empty config name", ErrInvalidConfig, c.Name)
		}
	}
	t := &Topic{
		Name:       c.Name,
		ID:         c.ID,
		Partitions: newPartitions(im, 0, c.Assignments),
		Configs:    maps.Clone(c.Configs),
		Pending:    c.Pending,
	}
	im.putTopic(t)
	return t, nil
}

// lookupTopic finds the topic a command refers to, by name and, when the
// command carries one, by id. A pending topic is not there yet for any
// command but activate and abort.
func lookupTopic(im *Image, name string, id [16]byte) (*Topic, error) {
	t, err := lookupAnyTopic(im, name, id)
	if err == nil && t.Pending {
		return nil, fmt.Errorf("%w: topic %q is still being created", ErrUnknownTopic, name)
	}
	return t, err
}

func lookupAnyTopic(im *Image, name string, id [16]byte) (*Topic, error) {
	t := im.topics[name]
	if t == nil || (id != [16]byte{} && t.ID != id) {
		return nil, fmt.Errorf("%w: topic %q does not exist", ErrUnknownTopic, name)
	}
	return t, nil
}

// lookupPendingTopic finds the pending topic an activate or abort names.
func lookupPendingTopic(im *Image, c *topicRefCmd) (*Topic, error) {
	if c.ID == ([16]byte{}) {
		return nil, fmt.Errorf("%w: topic %q: zero topic id", ErrInvalidRequest, c.Name)
	}
	t, err := lookupAnyTopic(im, c.Name, c.ID)
	if err != nil {
		return nil, err
	}
	if !t.Pending {
		return nil, fmt.Errorf("%w: topic %q is not being created", ErrInvalidRequest, c.Name)
	}
	return t, nil
}

// applyActivateTopic makes a pending topic visible.
func applyActivateTopic(im *Image, c *topicRefCmd) (*Topic, error) {
	t, err := lookupPendingTopic(im, c)
	if err != nil {
		return nil, err
	}
	nt := *t
	nt.Pending = false
	im.putTopic(&nt)
	return &nt, nil
}

// applyAbortTopic removes a pending topic; an active one is never touched,
// so an abort that loses a race with the activation changes nothing.
func applyAbortTopic(im *Image, c *topicRefCmd) error {
	if _, err := lookupPendingTopic(im, c); err != nil {
		return err
	}
	im.removeTopic(c.Name)
	return nil
}

func applyDeleteTopic(im *Image, c *deleteTopicCmd) error {
	if _, err := lookupTopic(im, c.Name, c.ID); err != nil {
		return err
	}
	im.removeTopic(c.Name)
	return nil
}

func applyCreatePartitions(im *Image, c *createPartitionsCmd) error {
	t, err := lookupTopic(im, c.Name, c.ID)
	if err != nil {
		return err
	}
	cur := len(t.Partitions)
	if err := checkTotalPartitions(c.Name, cur, int(c.Total)); err != nil {
		return err
	}
	if cur+len(c.Assignments) != int(c.Total) {
		return fmt.Errorf("%w: topic %q: %d new assignments do not take %d partitions to %d", ErrInvalidReplicaAssignment, c.Name, len(c.Assignments), cur, c.Total)
	}
	want := 0
	if cur > 0 {
		want = len(t.Partitions[0].TargetReplicas())
	}
	if err := checkAssignments(im, c.Assignments, want, cur); err != nil {
		return err
	}
	if err := c.Limits.check(im, c.Name, c.Assignments); err != nil {
		return err
	}
	nt := *t
	nt.Partitions = slices.Concat(t.Partitions, newPartitions(im, cur, c.Assignments))
	im.putTopic(&nt)
	return nil
}

// checkTotalPartitions checks a CreatePartitions target against the current
// count: partitions can only be added.
func checkTotalPartitions(name string, cur, total int) error {
	if total == cur {
		return fmt.Errorf("%w: topic %q already has %d partitions", ErrInvalidPartitions, name, cur)
	}
	if total < cur {
		return fmt.Errorf("%w: topic %q has %d partitions, more than the requested %d; partitions cannot be removed", ErrInvalidPartitions, name, cur, total)
	}
	return checkPartitionCount(total)
}

func applyAlterConfigs(im *Image, c *alterConfigsCmd) error {
	t, err := lookupTopic(im, c.Name, c.ID)
	if err != nil {
		return err
	}
	nt := *t
	nt.Configs = mergeConfigs(t.Configs, c.Set, c.ReplaceAll)
	for k := range nt.Configs {
		if k == "" {
			return fmt.Errorf("%w: topic %q: empty config name", ErrInvalidConfig, c.Name)
		}
	}
	im.putTopic(&nt)
	clearSatisfiedELRs(im)
	return nil
}

// mergeConfigs returns the overrides after applying set: a nil value
// deletes the key; replaceAll drops every override not named in set.
func mergeConfigs(cur map[string]string, set map[string]*string, replaceAll bool) map[string]string {
	out := map[string]string{}
	if !replaceAll {
		maps.Copy(out, cur)
	}
	for k, v := range set {
		if v == nil {
			delete(out, k)
		} else {
			out[k] = *v
		}
	}
	if len(out) == 0 {
		return nil
	}
	return out
}

func applyAllocateProducerIDs(im *Image, c *allocateProducerIDsCmd) (int64, error) {
	if c.N < 1 || c.N > maxProducerIDBlock {
		return 0, fmt.Errorf("%w: producer id block size %d not in [1, %d]", ErrInvalidRequest, c.N, maxProducerIDBlock)
	}
	first := im.nextProducerID
	if first > math.MaxInt64-c.N {
		return 0, fmt.Errorf("producer ids exhausted at %d", first)
	}
	im.nextProducerID = first + c.N
	return first, nil
}
