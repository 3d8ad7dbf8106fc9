package cli

import (
	"cmp"
	"fmt"
	"slices"
)

// The planner behind `topic reassign --generate`, `cluster drain` and
// `cluster rebalance`: it moves as few replicas as it can so that, over
// the brokers given, every broker holds an even share of the replicas
// (within one) and leads an even share of the partitions, with each
// partition's replicas on distinct racks where the racks allow. It is
// deterministic: the same cluster gives the same plan.

// planPartition is one partition's current replicas.
type planPartition struct {
	Topic     string
	Partition int32
	Replicas  []int32
}

// planBroker is a broker the plan may place replicas on.
type planBroker struct {
	ID   int32
	Rack string // "" = no rack
}

// plan returns the new replicas of every partition (same order as parts)
// over brokers, keeping each partition's replication factor. It fails if a
// partition has more replicas than there are brokers.
func plan(parts []planPartition, brokers []planBroker, rackAware bool) ([][]int32, error) {
	if len(brokers) == 0 {
		return nil, fmt.Errorf("no brokers to place replicas on")
	}
	rack := map[int32]string{}
	allowed := map[int32]bool{}
	for _, b := range brokers {
		allowed[b.ID] = true
		rack[b.ID] = b.Rack
		if !rackAware {
			rack[b.ID] = ""
		}
	}
	ids := make([]int32, 0, len(brokers))
	for _, b := range brokers {
		ids = append(ids, b.ID)
	}
	slices.Sort(ids)
	racks := map[string]bool{}
	for _, id := range ids {
		racks[rack[id]] = true
	}
	load := map[int32]int{}
	out := make([][]int32, len(parts))
	total := 0
	for i, p := range parts {
		if len(p.Replicas) > len(ids) {
			return nil, fmt.Errorf("%s-%d has %d replicas, more than the %d brokers given", p.Topic, p.Partition, len(p.Replicas), len(ids))
		}
		total += len(p.Replicas)
		for _, r := range p.Replicas {
			if allowed[r] && !slices.Contains(out[i], r) {
				out[i] = append(out[i], r)
				load[r]++
			}
		}
	}
	// Each broker's share: floor or ceil of the average, the ceil going
	// to the lowest ids first.
	share := map[int32]int{}
	for k, id := range ids {
		share[id] = total / len(ids)
		if k < total%len(ids) {
			share[id]++
		}
	}
	// rackOK: broker b may join partition i's replicas without putting two
	// on one rack while an unused rack is left.
	rackOK := func(i int, b int32, without int32) bool {
		used := map[string]bool{}
		for _, r := range out[i] {
			if r != without {
				used[rack[r]] = true
			}
		}
		return !used[rack[b]] || len(used) >= len(racks)
	}
	// pick the least loaded broker (below its share first) that may join
	// partition i in place of without (-1: none).
	pick := func(i int, without int32, needBelowShare bool) int32 {
		best := int32(-1)
		for _, b := range ids {
			if slices.Contains(out[i], b) || (needBelowShare && load[b] >= share[b]) {
				continue
			}
			if !rackOK(i, b, without) {
				continue
			}
			if best == -1 || load[b]-share[b] < load[best]-share[best] {
				best = b
			}
		}
		if best == -1 && !needBelowShare {
			for _, b := range ids { // racks cannot all differ: any broker
				if !slices.Contains(out[i], b) && (best == -1 || load[b]-share[b] < load[best]-share[best]) {
					best = b
				}
			}
		}
		return best
	}
	// Fill the replicas dropped from brokers not in the list.
	for i, p := range parts {
		for len(out[i]) < len(p.Replicas) {
			b := pick(i, -1, false)
			out[i] = append(out[i], b)
			load[b]++
		}
	}
	// Move replicas off brokers above their share onto brokers below it.
	for moved := true; moved; {
		moved = false
		for _, from := range ids {
			for i := range out {
				if load[from] <= share[from] {
					break
				}
				j := slices.Index(out[i], from)
				if j < 0 {
					continue
				}
				to := pick(i, from, true)
				if to == -1 {
					continue
				}
				out[i][j] = to
				load[from]--
				load[to]++
				moved = true
			}
		}
	}
	balanceLeaders(out, ids)
	return out, nil
}

// balanceLeaders reorders replicas so that the first replica (the
// preferred leader) is spread evenly: a partition whose leader leads more
// than its share gets, as leader, its replica that leads the fewest.
func balanceLeaders(out [][]int32, ids []int32) {
	leads := map[int32]int{}
	for _, r := range out {
		leads[r[0]]++
	}
	share := (len(out) + len(ids) - 1) / len(ids)
	for changed := true; changed; {
		changed = false
		for _, r := range out {
			lead := r[0]
			if leads[lead] <= share {
				continue
			}
			best := 0
			for j := 1; j < len(r); j++ {
				if leads[r[j]] < leads[r[best]] {
					best = j
				}
			}
			if best == 0 || leads[r[best]]+1 >= leads[lead] {
				continue
			}
			r[0], r[best] = r[best], r[0]
			leads[lead]--
			leads[r[0]]++
			changed = true
		}
	}
}

// sortPlanPartitions orders partitions by topic and partition.
func sortPlanPartitions(parts []planPartition) {
	slices.SortFunc(parts, func(a, b planPartition) int {
		if c := cmp.Compare(a.Topic, b.Topic); c != 0 {
			return c
		}
		return cmp.Compare(a.Partition, b.Partition)
	})
}
