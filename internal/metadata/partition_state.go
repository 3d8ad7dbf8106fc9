package metadata

import (
	"maps"
	"slices"
)

// partitionEdit collects the partition changes of one command on the image
// being built. A topic is copied (with its Partitions slice) the first time
// one of its partitions changes, so images published earlier never change.
type partitionEdit struct {
	im     *Image
	copied map[[16]byte]*Topic
}

func newPartitionEdit(im *Image) *partitionEdit {
	return &partitionEdit{im: im, copied: map[[16]byte]*Topic{}}
}

// put stores np as partition np.Partition of the topic with t's id.
func (e *partitionEdit) put(t *Topic, np Partition) {
	ct := e.copied[t.ID]
	if ct == nil {
		cp := *t
		cp.Partitions = slices.Clone(t.Partitions)
		ct = &cp
		e.copied[t.ID] = ct
		e.im.putTopic(ct)
	}
	ct.Partitions[np.Partition] = np
}

// sortedTopics is every topic in name order: commands that scan all
// partitions visit them in the same order on every replica (map order is
// random), and the scan may replace topics in the map as it goes.
func (im *Image) sortedTopics() []*Topic {
	names := slices.Sorted(maps.Keys(im.topics))
	out := make([]*Topic, len(names))
	for i, n := range names {
		out[i] = im.topics[n]
	}
	return out
}

// eligible reports whether broker id is registered, unfenced and not in
// controlled shutdown: only such a broker may lead or join an ISR.
func (im *Image) eligible(id int32) bool {
	b := im.brokers[id]
	return b != nil && b.Eligible()
}

// electFrom is the leader election rule used everywhere: the first replica,
// in replica order, that is in isr, is not except and is eligible; -1
// (offline) when there is none.
func (im *Image) electFrom(replicas, isr []int32, except int32) int32 {
	for _, r := range replicas {
		if r != except && slices.Contains(isr, r) && im.eligible(r) {
			return r
		}
	}
	return -1
}

// withState returns p, of topic t, with the given leader, ISR and leader
// recovery state, its ELR and epochs following (finish). changed is false,
// and p returned as it is, when nothing differs.
func (im *Image) withState(t *Topic, p Partition, leader int32, isr []int32, recovery int8) (np Partition, changed bool) {
	next := p
	next.Leader, next.ISR, next.LeaderRecoveryState = leader, slices.Clone(isr), recovery
	return im.finish(t, p, next, -1)
}

// without returns isr minus id (a new slice).
func without(isr []int32, id int32) []int32 {
	out := make([]int32, 0, len(isr))
	for _, r := range isr {
		if r != id {
			out = append(out, r)
		}
	}
	return out
}

// inReplicaOrder returns the members of set in the order of replicas: the
// ISR is kept in replica order, so that equal sets compare equal.
func inReplicaOrder(replicas, set []int32) []int32 {
	out := make([]int32, 0, len(set))
	for _, r := range replicas {
		if slices.Contains(set, r) {
			out = append(out, r)
		}
	}
	return out
}

// fenceFromPartitions takes broker id out of every ISR and leadership, as
// fencing does (Kafka's handleBrokerFenced): it leaves every ISR it is in,
// except where it is the only member (Kafka never empties an ISR), and each
// partition it led elects a new leader from the remaining ISR, else from
// the ELR (electClean), or goes offline (-1) when no member is eligible.
// unflushed says the broker comes back from a restart in which its logs
// may have lost unflushed records; see dropUnflushed for what that adds.
func fenceFromPartitions(e *partitionEdit, id int32, unflushed bool) {
	tainted := int32(-1)
	if unflushed {
		tainted = id
	}
	for _, t := range e.im.sortedTopics() {
		for _, p := range t.Partitions {
			inISR := slices.Contains(p.ISR, id)
			if !inISR && p.Leader != id && !(unflushed && slices.Contains(p.ELR, id)) {
				continue
			}
			next := p
			if inISR && len(p.ISR) > 1 {
				next.ISR = without(p.ISR, id)
			}
			if p.Leader == id {
				next.Leader, next.ISR = e.im.electClean(p, next.ISR, id)
			}
			if unflushed {
				next = dropUnflushed(e.im, next, id)
			}
			if np, ok := e.im.finish(t, p, next, tainted); ok {
				e.put(t, np)
			}
		}
	}
}

// drainFromPartitions is controlled shutdown's move (Kafka's
// handleBrokerInControlledShutdown, except that an unmovable leadership
// stays): every partition broker id leads moves to the first eligible other
// ISR member, and id leaves every ISR that has other members. A partition
// it leads with no eligible other ISR member keeps it as leader and in its
// ISR, so the partition stays available until the broker really stops.
func drainFromPartitions(e *partitionEdit, id int32) {
	for _, t := range e.im.sortedTopics() {
		for _, p := range t.Partitions {
			if !slices.Contains(p.ISR, id) {
				continue
			}
			others := without(p.ISR, id)
			leader := p.Leader
			switch {
			case leader == id:
				if leader = e.im.electFrom(p.Replicas, others, id); leader == -1 {
					continue // unmovable
				}
			case len(others) == 0:
				continue // the only ISR member of an offline partition
			}
			if np, ok := e.im.withState(t, p, leader, others, p.LeaderRecoveryState); ok {
				e.put(t, np)
			}
		}
	}
}

// electOffline gives every offline partition whose ISR or ELR holds
// broker id (just made eligible) a leader by the election rule (Kafka's
// handleBrokerUnfenced).
func electOffline(e *partitionEdit, id int32) {
	for _, t := range e.im.sortedTopics() {
		for _, p := range t.Partitions {
			if p.Leader != -1 || !slices.Contains(p.ISR, id) && !slices.Contains(p.ELR, id) {
				continue
			}
			leader, isr := e.im.electClean(p, p.ISR, -1)
			if leader == -1 {
				continue
			}
			if np, ok := e.im.withState(t, p, leader, isr, p.LeaderRecoveryState); ok {
				e.put(t, np)
			}
		}
	}
}

// movableLeaderships reports whether broker id leads a partition that
// another eligible ISR member could take over.
func (im *Image) movableLeaderships(id int32) bool {
	for _, t := range im.topics {
		for _, p := range t.Partitions {
			if p.Leader == id && im.electFrom(p.Replicas, p.ISR, id) != -1 {
				return true
			}
		}
	}
	return false
}
