package metadata

import (
	"fmt"
	"slices"
)

// Partition reassignment (KIP-455), as Kafka's KRaft controller runs it.
//
// A reassignment to target T of a partition with replicas R records
// Replicas = T followed by R−T, AddingReplicas = T−R and RemovingReplicas
// = R−T; leader and ISR stay. The brokers open the adding replicas, which
// fetch from the leader as followers; the leader adds each to the ISR
// (AlterPartition) once it has caught up. As soon as every adding replica
// is in the ISR and the ISR without the removing replicas is not empty,
// the reassignment completes in the same change: Replicas = T, the
// removing replicas leave the ISR, and a leader that was removed hands
// over to the first replica of T in the ISR that is eligible. A
// reassignment that adds nothing completes at once. A new reassignment of
// a partition being reassigned starts over from its current Replicas.
//
// Cancelling goes back to Replicas without the adding ones (and the ISR
// without them); if the ISR would be empty, that takes an unclean election
// among the original replicas, allowed only where
// unclean.leader.election.enable is, as in Kafka.
//
// Unlike Kafka, the leader epoch is bumped only when the leader changes:
// a removed follower is cut off by its own broker deleting the replica and
// by the leader forgetting it, so fencing every fetch of the remaining
// followers buys nothing.

// reassignmentRef is one partition of a reassign_partitions command.
type reassignmentRef struct {
	TopicID   [16]byte `json:"topicId"`
	Partition int32    `json:"partition"`
	// Replicas is the target; Cancel reverts instead (Kafka's null).
	Replicas []int32 `json:"replicas,omitempty"`
	Cancel   bool    `json:"cancel,omitempty"`
	// KeepReplicationFactor refuses a target of another size than the
	// partition's replication factor (KIP-860).
	KeepReplicationFactor bool `json:"keepReplicationFactor,omitempty"`
	// AllowUnclean lets a cancellation elect uncleanly where the ISR holds
	// adding replicas only; the proposer decides it from the topic's
	// unclean.leader.election.enable.
	AllowUnclean bool `json:"allowUnclean,omitempty"`
}

// reassignPartitionsCmd starts, changes or cancels reassignments.
type reassignPartitionsCmd struct {
	Partitions []reassignmentRef `json:"partitions"`
}

const cmdReassignPartitions cmdType = "reassign_partitions"

// applyReassignPartitions applies each partition in turn; a partition
// refused does not stop the others.
func applyReassignPartitions(im *Image, c *reassignPartitionsCmd) []error {
	e := newPartitionEdit(im)
	out := make([]error, len(c.Partitions))
	for i, r := range c.Partitions {
		t, np, changed, err := im.reassignOne(r)
		if err != nil {
			out[i] = err
			continue
		}
		if changed {
			e.put(t, np)
		}
	}
	return out
}

// reassignOne checks one reassignment against im and returns the
// partition's next state (changed false: nothing to do).
func (im *Image) reassignOne(r reassignmentRef) (*Topic, Partition, bool, error) {
	t := im.topicsByID[r.TopicID]
	if t == nil || t.Pending {
		return nil, Partition{}, false, fmt.Errorf("%w: reassign partition %d of topic id %s: no such topic", ErrUnknownTopic, r.Partition, FormatUUID(r.TopicID))
	}
	if r.Partition < 0 || int(r.Partition) >= len(t.Partitions) {
		return nil, Partition{}, false, fmt.Errorf("%w: reassign %s-%d: no such partition", ErrUnknownTopic, t.Name, r.Partition)
	}
	p := t.Partitions[r.Partition]
	var next Partition
	var err error
	if r.Cancel {
		next, err = im.revert(t.Name, p, r.AllowUnclean)
	} else {
		next, err = im.retarget(t.Name, p, r)
	}
	if err != nil {
		return nil, p, false, err
	}
	np, changed := im.settle(t, p, next)
	return t, np, changed, nil
}

// retarget is the state that starts a reassignment of p to r.Replicas.
func (im *Image) retarget(topic string, p Partition, r reassignmentRef) (Partition, error) {
	target := r.Replicas
	if err := im.checkTarget(topic, p.Partition, target); err != nil {
		return p, err
	}
	if rf := len(p.OriginalReplicas()); r.KeepReplicationFactor && len(target) != rf {
		return p, fmt.Errorf("%w: The replication factor is changed from %d to %d", ErrInvalidReplicationFactor, rf, len(target))
	}
	removing := minus(p.Replicas, target)
	next := p
	next.Replicas = slices.Concat(target, removing)
	next.AddingReplicas = minus(target, p.Replicas)
	next.RemovingReplicas = removing
	next.ISR = inReplicaOrder(next.Replicas, p.ISR)
	return next, nil
}

// checkTarget applies Kafka's checks of a manual assignment: not empty, no
// broker twice, every broker registered (a fenced one is allowed: its
// replica catches up once it is back).
func (im *Image) checkTarget(topic string, partition int32, target []int32) error {
	where := fmt.Sprintf("reassign %s-%d", topic, partition)
	if len(target) == 0 {
		return fmt.Errorf("%w: %s: The manual partition assignment includes an empty replica list.", ErrInvalidReplicaAssignment, where)
	}
	for j, id := range target {
		if im.brokers[id] == nil {
			return fmt.Errorf("%w: %s: The manual partition assignment includes broker %d, but no such broker is registered.", ErrInvalidReplicaAssignment, where, id)
		}
		if slices.Contains(target[:j], id) {
			return fmt.Errorf("%w: %s: The manual partition assignment includes the broker %d more than once.", ErrInvalidReplicaAssignment, where, id)
		}
	}
	return nil
}

// revert is the state that cancels p's reassignment.
func (im *Image) revert(topic string, p Partition, allowUnclean bool) (Partition, error) {
	if !p.Reassigning() {
		return p, fmt.Errorf("%w: %s-%d is not being reassigned", ErrNoReassignmentInProgress, topic, p.Partition)
	}
	next := p
	next.Replicas = p.OriginalReplicas()
	next.ISR = minus(p.ISR, p.AddingReplicas)
	next.AddingReplicas, next.RemovingReplicas = nil, nil
	if len(next.ISR) > 0 {
		if !slices.Contains(next.ISR, next.Leader) {
			next.Leader = im.electFrom(next.Replicas, next.ISR, -1)
		}
		return next, nil
	}
	// Only adding replicas are in sync: going back loses what only they
	// have.
	if !allowUnclean {
		return p, fmt.Errorf("%w: Unable to revert partition assignment for %s:%d because it would require an unclean leader election.", ErrInvalidReplicaAssignment, topic, p.Partition)
	}
	for _, r := range next.Replicas {
		if im.eligible(r) {
			next.Leader, next.ISR, next.LeaderRecoveryState = r, []int32{r}, LeaderRecovering
			return next, nil
		}
	}
	return p, fmt.Errorf("%w: Unable to revert partition assignment for %s:%d: no original replica is live.", ErrInvalidReplicaAssignment, topic, p.Partition)
}

// settle completes next's reassignment if it can (see the top of this
// file), then bumps the epochs from prev's: the partition epoch on any
// change, the leader epoch on a change of leader. changed is false, and
// prev returned, when nothing differs.
func (im *Image) settle(t *Topic, prev, next Partition) (Partition, bool) {
	return im.finish(t, prev, im.complete(next), -1)
}

// finish gives next, a change of prev, its ELR (nextELR) and epochs: the
// partition epoch is bumped on any change and the leader epoch when the
// leader changes (to -1 included, as in Kafka). changed is false, and prev
// returned, when nothing differs.
func (im *Image) finish(t *Topic, prev, next Partition, tainted int32) (Partition, bool) {
	next.ELR = im.nextELR(t, prev, next, tainted)
	if samePartitionState(prev, next) {
		return prev, false
	}
	next.PartitionEpoch = prev.PartitionEpoch + 1
	next.LeaderEpoch = prev.LeaderEpoch
	if next.Leader != prev.Leader {
		next.LeaderEpoch++
	}
	return next, true
}

// complete returns p with its reassignment completed, or p itself while it
// cannot be: an adding replica is not in the ISR yet, the ISR would be
// empty, or the leader is removed and no member of the remaining ISR is
// eligible to take over (the removed leader then keeps serving).
func (im *Image) complete(p Partition) Partition {
	if !p.Reassigning() {
		return p
	}
	isr := minus(p.ISR, p.RemovingReplicas)
	if len(isr) == 0 {
		return p
	}
	for _, a := range p.AddingReplicas {
		if !slices.Contains(isr, a) {
			return p
		}
	}
	np := p
	np.Replicas = p.TargetReplicas()
	np.ISR = inReplicaOrder(np.Replicas, isr)
	np.AddingReplicas, np.RemovingReplicas = nil, nil
	if p.Leader != -1 && !slices.Contains(np.ISR, p.Leader) {
		if np.Leader = im.electFrom(np.Replicas, np.ISR, -1); np.Leader == -1 {
			return p
		}
	}
	return np
}

// samePartitionState compares everything but the epochs.
func samePartitionState(a, b Partition) bool {
	return a.Leader == b.Leader && a.LeaderRecoveryState == b.LeaderRecoveryState &&
		slices.Equal(a.Replicas, b.Replicas) && slices.Equal(a.ISR, b.ISR) &&
		slices.Equal(a.AddingReplicas, b.AddingReplicas) && slices.Equal(a.RemovingReplicas, b.RemovingReplicas) &&
		slices.Equal(a.ELR, b.ELR)
}

// minus returns the members of a not in b, in a's order (a new slice; nil
// when empty, so that a finished reassignment compares and encodes as
// none).
func minus(a, b []int32) []int32 {
	var out []int32
	for _, x := range a {
		if !slices.Contains(b, x) {
			out = append(out, x)
		}
	}
	return out
}
