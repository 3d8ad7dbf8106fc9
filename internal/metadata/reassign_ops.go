package metadata

import (
	"context"
	"fmt"
)

// Reassignment asks for one partition's replicas to become Replicas, or,
// with Replicas nil, for its reassignment in progress to be cancelled
// (AlterPartitionReassignments).
type Reassignment struct {
	Topic     string
	Partition int32
	Replicas  []int32
}

// AlterPartitionReassignments starts, changes or cancels reassignments
// (see reassign.go) and answers each in request order: nil, or an error
// wrapping ErrUnknownTopic, ErrInvalidReplicaAssignment,
// ErrInvalidReplicationFactor (allowRFChange false and the target has
// another size than the partition's replication factor, KIP-860) or
// ErrNoReassignmentInProgress. The call fails as a whole only when this
// node is not the controller or the command could not be committed.
// Partitions already refused by the current image are not proposed.
func (c *Controller) AlterPartitionReassignments(ctx context.Context, rs []Reassignment, allowRFChange bool) ([]error, error) {
	if err := c.checkLeader(); err != nil {
		return nil, err
	}
	im := c.Image()
	out := make([]error, len(rs))
	var cmd reassignPartitionsCmd
	var at []int
	for i, r := range rs {
		t := im.TopicByName(r.Topic)
		if t == nil {
			out[i] = fmt.Errorf("%w: reassign %s-%d: Unable to find a topic named %s.", ErrUnknownTopic, r.Topic, r.Partition, r.Topic)
			continue
		}
		ref := reassignmentRef{
			TopicID: t.ID, Partition: r.Partition, Replicas: r.Replicas, Cancel: r.Replicas == nil,
			KeepReplicationFactor: !allowRFChange,
			AllowUnclean:          r.Replicas == nil && c.uncleanEnabled(t),
		}
		if _, _, _, err := im.reassignOne(ref); err != nil {
			out[i] = err
			continue
		}
		cmd.Partitions = append(cmd.Partitions, ref)
		at = append(at, i)
	}
	if len(at) == 0 {
		return out, nil
	}
	res, err := c.propose(ctx, cmdReassignPartitions, cmd)
	if err != nil {
		return nil, fmt.Errorf("alter partition reassignments: %w", err)
	}
	for j, i := range at {
		out[i] = res.reassigned[j]
	}
	for j, ref := range cmd.Partitions {
		if res.reassigned[j] == nil {
			c.log.Info("partition reassignment", "topic", rs[at[j]].Topic, "partition", ref.Partition,
				"target", ref.Replicas, "cancel", ref.Cancel)
		}
	}
	return out, nil
}

// ReassigningPartitions returns the partitions with a reassignment in
// progress, in topic name and partition order.
func (im *Image) ReassigningPartitions() []PartitionRef {
	return im.partitionsWhere(func(t *Topic, p *Partition) bool { return !t.Pending && p.Reassigning() })
}
