package metadata

import (
	"fmt"
	"slices"
)

// ElectionType is ElectLeaders' election type, with Kafka's values.
type ElectionType int8

const (
	// ElectPreferred makes the first replica leader where it is in the ISR
	// and eligible.
	ElectPreferred ElectionType = 0
	// ElectUnclean gives an offline partition a leader even from outside
	// the ISR (data written to the old ISR only may be lost).
	ElectUnclean ElectionType = 1
)

func (t ElectionType) String() string {
	switch t {
	case ElectPreferred:
		return "preferred"
	case ElectUnclean:
		return "unclean"
	}
	return fmt.Sprintf("election type %d", int8(t))
}

// TopicPartition names a partition by topic name, as ElectLeaders does.
type TopicPartition struct {
	Topic     string
	Partition int32
}

// ElectionResult answers one partition of ElectLeaders. Err is nil (Leader
// is then the new leader) or wraps ErrUnknownTopic, ErrElectionNotNeeded,
// ErrPreferredLeaderNotAvailable or ErrEligibleLeadersNotAvailable.
type ElectionResult struct {
	Topic     string
	Partition int32
	Leader    int32
	Err       error
}

// applyElectLeaders runs the election on each partition in turn.
func applyElectLeaders(im *Image, c *electLeadersCmd) ([]ElectionResult, error) {
	if c.Type != ElectPreferred && c.Type != ElectUnclean {
		return nil, fmt.Errorf("%w: elect leaders: unknown %v", ErrInvalidRequest, c.Type)
	}
	e := newPartitionEdit(im)
	out := make([]ElectionResult, len(c.Partitions))
	for i, ref := range c.Partitions {
		out[i] = ElectionResult{Partition: ref.Partition, Leader: -1}
		t := im.topicsByID[ref.TopicID]
		if t == nil || ref.Partition < 0 || int(ref.Partition) >= len(t.Partitions) {
			out[i].Err = fmt.Errorf("%w: elect leaders: partition %d of topic id %s", ErrUnknownTopic, ref.Partition, FormatUUID(ref.TopicID))
			continue
		}
		out[i].Topic = t.Name
		np, err := im.elect(t, t.Partitions[ref.Partition], c.Type)
		if err != nil {
			out[i].Err = fmt.Errorf("elect leaders: %s-%d: %w", t.Name, ref.Partition, err)
			continue
		}
		e.put(t, np)
		out[i].Leader = np.Leader
	}
	return out, nil
}

// elect returns p after an election of type typ, or the reason there is
// none (Kafka's ReplicationControlManager.electLeader).
//
// Preferred: the first replica, if it is in the ISR and eligible and not
// already leader. (Kafka's preferred election would also give an offline
// partition another eligible ISR member; here an offline partition has
// none, since every rule elects one as soon as there is one.)
//
// Unclean: only for an offline partition. An eligible ISR member is taken
// first (a clean election); otherwise the first eligible replica in
// replica order leads with ISR = {it}, recovering (KIP-704). Whether an
// unclean election is allowed (unclean.leader.election.enable, or an
// admin's explicit request) is the proposer's decision.
func (im *Image) elect(t *Topic, p Partition, typ ElectionType) (Partition, error) {
	switch typ {
	case ElectPreferred:
		pref := p.Replicas[0]
		if p.Leader == pref {
			return p, ErrElectionNotNeeded
		}
		if !slices.Contains(p.ISR, pref) || !im.eligible(pref) {
			return p, ErrPreferredLeaderNotAvailable
		}
		np, _ := im.withState(t, p, pref, p.ISR, p.LeaderRecoveryState)
		return np, nil
	case ElectUnclean:
		if p.Leader != -1 {
			return p, ErrElectionNotNeeded
		}
		if leader, isr := im.electClean(p, p.ISR, -1); leader != -1 {
			np, _ := im.withState(t, p, leader, isr, p.LeaderRecoveryState)
			return np, nil
		}
		for _, r := range p.Replicas {
			if im.eligible(r) {
				np, _ := im.withState(t, p, r, []int32{r}, LeaderRecovering)
				return np, nil
			}
		}
		return p, ErrEligibleLeadersNotAvailable
	}
	return p, fmt.Errorf("%w: unknown %v", ErrInvalidRequest, typ)
}
