package metadata

import (
	"fmt"
	"maps"
	"slices"
)

// PartitionLimits caps the partitions of the cluster (KIP-578's
// max.partitions) and the partition replicas of each broker
// (max.broker.partitions). Every partition costs a broker memory, file
// descriptors and startup time whether or not it is used, so a cap turns
// "a client asked for 25000 partitions" from a broker that runs out of
// file descriptors into an error. Zero or less means no limit.
type PartitionLimits struct {
	MaxBrokerPartitions int32 `json:"maxBrokerPartitions,omitempty"`
	MaxPartitions       int32 `json:"maxPartitions,omitempty"`
}

func (l *PartitionLimits) none() bool {
	return l == nil || (l.MaxBrokerPartitions <= 0 && l.MaxPartitions <= 0)
}

// check fails with ErrPolicyViolation when adding partitions with the given
// replica assignments to im would exceed a limit. Pending topics count:
// their partitions are already reserved.
func (l *PartitionLimits) check(im *Image, topic string, assignments [][]int32) error {
	if l.none() {
		return nil
	}
	total, perBroker := im.partitionCounts()
	if l.MaxPartitions > 0 && total+len(assignments) > int(l.MaxPartitions) {
		return fmt.Errorf("%w: adding %d partitions for topic %q would make %d partitions in the cluster, more than max.partitions=%d",
			ErrPolicyViolation, len(assignments), topic, total+len(assignments), l.MaxPartitions)
	}
	if l.MaxBrokerPartitions <= 0 {
		return nil
	}
	add := make(map[int32]int)
	for _, replicas := range assignments {
		for _, id := range replicas {
			add[id]++
		}
	}
	for _, id := range slices.Sorted(maps.Keys(add)) {
		if n := perBroker[id] + add[id]; n > int(l.MaxBrokerPartitions) {
			return fmt.Errorf("%w: adding %d partition replicas for topic %q to broker %d would make %d on it, more than max.broker.partitions=%d",
				ErrPolicyViolation, add[id], topic, id, n, l.MaxBrokerPartitions)
		}
	}
	return nil
}
