package metadata

import (
	"fmt"
	"slices"
)

// ISRMember is one broker of a proposed ISR, with the broker epoch the
// leader saw it at (AlterPartition v3+, KIP-903): a replica that restarted
// since is refused. BrokerEpoch -1 skips that check (AlterPartition v0-2).
type ISRMember struct {
	BrokerID    int32 `json:"id"`
	BrokerEpoch int64 `json:"epoch"`
}

// ISRMembers wraps broker ids as members whose epochs are not checked.
func ISRMembers(ids []int32) []ISRMember {
	out := make([]ISRMember, len(ids))
	for i, id := range ids {
		out[i] = ISRMember{BrokerID: id, BrokerEpoch: -1}
	}
	return out
}

// ISRUpdate is one partition of an AlterPartition request: the ISR its
// leader wants, made at the given leader and partition epochs.
type ISRUpdate struct {
	TopicID        [16]byte    `json:"topicId"`
	Partition      int32       `json:"partition"`
	LeaderEpoch    int32       `json:"leaderEpoch"`
	PartitionEpoch int32       `json:"partitionEpoch"`
	NewISR         []ISRMember `json:"newIsr"`
	// LeaderRecoveryState: LeaderRecovered, or LeaderRecovering while a
	// leader elected uncleanly has not finished recovering.
	LeaderRecoveryState int8 `json:"leaderRecoveryState,omitempty"`
}

// AlterPartitionRequest is Kafka's AlterPartition (v2+: topics by id) from
// broker BrokerID at registration BrokerEpoch.
type AlterPartitionRequest struct {
	BrokerID    int32
	BrokerEpoch int64
	Updates     []ISRUpdate
}

// AlterPartitionResult answers one ISRUpdate. Err is nil or wraps one
// sentinel (ErrUnknownTopicID, ErrUnknownTopic, ErrNotController,
// ErrFencedLeaderEpoch, ErrNotPartitionLeader, ErrInvalidUpdateVersion,
// ErrInvalidRequest, ErrIneligibleReplica). On success State is the
// partition as it now is, which the response carries (leader, ISR, epochs,
// recovery state); an update that asks for the ISR the partition already
// has succeeds without bumping anything, as in Kafka.
type AlterPartitionResult struct {
	TopicID   [16]byte
	Partition int32
	Err       error
	State     Partition
}

// applyAlterPartition applies each update in turn (a later update of the
// same partition sees the earlier one's epochs). A stale broker epoch
// refuses the whole request, as Kafka's STALE_BROKER_EPOCH does.
func applyAlterPartition(im *Image, c *alterPartitionCmd) ([]AlterPartitionResult, error) {
	if _, err := checkBrokerEpoch(im, c.BrokerID, c.BrokerEpoch); err != nil {
		return nil, fmt.Errorf("alter partition: %w", err)
	}
	e := newPartitionEdit(im)
	out := make([]AlterPartitionResult, len(c.Updates))
	for i, u := range c.Updates {
		out[i] = AlterPartitionResult{TopicID: u.TopicID, Partition: u.Partition}
		t, np, err := alterOne(im, c.BrokerID, u)
		if err != nil {
			out[i].Err = err
			continue
		}
		if !samePartition(np, t.Partitions[np.Partition]) {
			e.put(t, np)
		}
		out[i].State = np
	}
	return out, nil
}

// alterOne checks one update against im and returns the partition's next
// state. The checks and their order are Kafka's
// (ReplicationControlManager.validateAlterPartitionData), except that the
// leader may leave the ISR to hand the partition to the first eligible
// remaining member (see resign below).
func alterOne(im *Image, brokerID int32, u ISRUpdate) (*Topic, Partition, error) {
	t := im.topicsByID[u.TopicID]
	if t == nil {
		return nil, Partition{}, fmt.Errorf("%w: alter partition: topic id %s", ErrUnknownTopicID, FormatUUID(u.TopicID))
	}
	if u.Partition < 0 || int(u.Partition) >= len(t.Partitions) {
		return nil, Partition{}, fmt.Errorf("%w: alter partition: %s-%d does not exist", ErrUnknownTopic, t.Name, u.Partition)
	}
	p := t.Partitions[u.Partition]
	where := fmt.Sprintf("alter partition %s-%d from broker %d", t.Name, p.Partition, brokerID)
	// Epochs newer than ours mean this controller is behind: Kafka says
	// NOT_CONTROLLER so that the leader retries, finding the real one.
	if u.LeaderEpoch > p.LeaderEpoch || u.PartitionEpoch > p.PartitionEpoch {
		return nil, p, fmt.Errorf("%w: %s: epochs %d/%d are newer than the controller's %d/%d", ErrNotController, where, u.LeaderEpoch, u.PartitionEpoch, p.LeaderEpoch, p.PartitionEpoch)
	}
	if u.LeaderEpoch < p.LeaderEpoch {
		return nil, p, fmt.Errorf("%w: %s: leader epoch %d, the partition is at %d", ErrFencedLeaderEpoch, where, u.LeaderEpoch, p.LeaderEpoch)
	}
	if brokerID != p.Leader {
		return nil, p, fmt.Errorf("%w: %s: the leader is %d", ErrNotPartitionLeader, where, p.Leader)
	}
	if u.PartitionEpoch < p.PartitionEpoch {
		return nil, p, fmt.Errorf("%w: %s: partition epoch %d, the partition is at %d", ErrInvalidUpdateVersion, where, u.PartitionEpoch, p.PartitionEpoch)
	}
	ids := make([]int32, 0, len(u.NewISR))
	for _, m := range u.NewISR {
		if !slices.Contains(p.Replicas, m.BrokerID) || slices.Contains(ids, m.BrokerID) {
			return nil, p, fmt.Errorf("%w: %s: ISR %v is not a set of replicas %v", ErrInvalidRequest, where, u.NewISR, p.Replicas)
		}
		ids = append(ids, m.BrokerID)
	}
	// A leader leaving the ISR hands the partition over (weir's
	// extension; Kafka refuses it): its log cannot take writes (a full
	// or failing disk), and another ISR member, which holds everything
	// below the high watermark, can lead instead. Only a subset of the
	// ISR: a replica joining at the same time would be elected on the
	// word of a leader that is going away.
	resign := !slices.Contains(ids, p.Leader)
	if resign && (len(ids) == 0 || len(minus(ids, p.ISR)) > 0 ||
		u.LeaderRecoveryState != LeaderRecovered || p.LeaderRecoveryState != LeaderRecovered) {
		return nil, p, fmt.Errorf("%w: %s: ISR %v leaves out the leader but is not a recovered leader's hand-over to members of ISR %v", ErrInvalidRequest, where, ids, p.ISR)
	}
	switch u.LeaderRecoveryState {
	case LeaderRecovered:
	case LeaderRecovering:
		if len(ids) > 1 {
			return nil, p, fmt.Errorf("%w: %s: ISR %v while the leader is still recovering", ErrInvalidRequest, where, ids)
		}
		if p.LeaderRecoveryState == LeaderRecovered {
			return nil, p, fmt.Errorf("%w: %s: a recovered leader cannot go back to recovering", ErrInvalidRequest, where)
		}
	default:
		return nil, p, fmt.Errorf("%w: %s: unknown leader recovery state %d", ErrInvalidRequest, where, u.LeaderRecoveryState)
	}
	for _, m := range u.NewISR {
		if err := checkISRMember(im, m); err != nil {
			return nil, p, fmt.Errorf("%w: %s: %v", ErrIneligibleReplica, where, err)
		}
	}
	// The ISR may now hold every adding replica of a reassignment, which
	// then completes in the same change (reassign.go).
	next := p
	next.ISR = inReplicaOrder(p.Replicas, ids)
	next.LeaderRecoveryState = u.LeaderRecoveryState
	if resign {
		// Every member is eligible (checked above), so one is elected.
		next.Leader = im.electFrom(p.Replicas, next.ISR, p.Leader)
	}
	np, _ := im.settle(t, p, next)
	return t, np, nil
}

// samePartition reports whether a and b are the same state (epochs say
// it: every change bumps the partition epoch).
func samePartition(a, b Partition) bool {
	return a.PartitionEpoch == b.PartitionEpoch && a.LeaderEpoch == b.LeaderEpoch
}

// checkISRMember says why m may not be in an ISR, if it may not: every
// member must be registered, unfenced and not shutting down (Kafka checks
// the whole new ISR, the leader included), at the epoch given.
func checkISRMember(im *Image, m ISRMember) error {
	b := im.brokers[m.BrokerID]
	switch {
	case b == nil:
		return fmt.Errorf("broker %d is not registered", m.BrokerID)
	case b.InControlledShutdown:
		return fmt.Errorf("broker %d is shutting down", m.BrokerID)
	case b.Fenced:
		return fmt.Errorf("broker %d is fenced", m.BrokerID)
	case m.BrokerEpoch != -1 && m.BrokerEpoch != b.Epoch:
		return fmt.Errorf("broker %d is at epoch %d, not %d", m.BrokerID, b.Epoch, m.BrokerEpoch)
	}
	return nil
}
