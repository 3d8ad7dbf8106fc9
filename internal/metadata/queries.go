package metadata

import (
	"cmp"
	"slices"
)

// PartitionRef names one partition of a query's answer.
type PartitionRef struct {
	Topic     string
	TopicID   [16]byte
	Partition int32
}

// LiveBrokers returns the unfenced brokers sorted by id: the ones Metadata
// responses list (a broker in controlled shutdown is still live).
func (im *Image) LiveBrokers() []Broker {
	out := make([]Broker, 0, len(im.brokers))
	for _, b := range im.brokers {
		if !b.Fenced {
			out = append(out, *b)
		}
	}
	slices.SortFunc(out, func(a, b Broker) int { return cmp.Compare(a.ID, b.ID) })
	return out
}

// BrokerEligible reports whether broker id may lead and join ISRs:
// registered, unfenced and not in controlled shutdown.
func (im *Image) BrokerEligible(id int32) bool { return im.eligible(id) }

// ShouldShutDown reports whether broker id, in controlled shutdown, may now
// stop (BrokerHeartbeat's ShouldShutDown): it leads nothing that another
// eligible ISR member could take over. A fenced broker in controlled
// shutdown leads nothing and may always stop. A broker not in controlled
// shutdown should not.
func (im *Image) ShouldShutDown(id int32) bool {
	b := im.brokers[id]
	if b == nil || !b.InControlledShutdown {
		return false
	}
	return b.Fenced || !im.movableLeaderships(id)
}

// partitionsWhere returns the partitions, in topic name and partition
// order, for which keep is true. Topics not yet visible to clients are
// included: brokers host their replicas too.
func (im *Image) partitionsWhere(keep func(t *Topic, p *Partition) bool) []PartitionRef {
	var out []PartitionRef
	for _, t := range im.sortedTopics() {
		for i := range t.Partitions {
			if keep(t, &t.Partitions[i]) {
				out = append(out, PartitionRef{Topic: t.Name, TopicID: t.ID, Partition: t.Partitions[i].Partition})
			}
		}
	}
	return out
}

// BrokerPartitions returns the partitions broker id leads and those it
// follows (is a replica of, not leading).
func (im *Image) BrokerPartitions(id int32) (led, followed []PartitionRef) {
	led = im.partitionsWhere(func(_ *Topic, p *Partition) bool { return p.Leader == id })
	followed = im.partitionsWhere(func(_ *Topic, p *Partition) bool {
		return p.Leader != id && slices.Contains(p.Replicas, id)
	})
	return led, followed
}

// OfflinePartitions returns the partitions without a leader.
func (im *Image) OfflinePartitions() []PartitionRef {
	return im.partitionsWhere(func(_ *Topic, p *Partition) bool { return p.Leader == -1 })
}

// UnderReplicatedPartitions returns the partitions whose ISR is smaller
// than their replica set.
func (im *Image) UnderReplicatedPartitions() []PartitionRef {
	return im.partitionsWhere(func(_ *Topic, p *Partition) bool { return len(p.ISR) < len(p.Replicas) })
}

// UnderMinISRPartitions returns the partitions whose ISR is smaller than
// minISR(topic), the topic's effective min.insync.replicas (the image
// holds overrides only; the caller knows the broker default).
func (im *Image) UnderMinISRPartitions(minISR func(*Topic) int) []PartitionRef {
	return im.partitionsWhere(func(t *Topic, p *Partition) bool { return len(p.ISR) < minISR(t) })
}

// AliveChanged reports whether the set of alive brokers (registered and
// not fenced) differs between two images: a leader's DeleteRecords may
// then be complete, as it waits only for replicas on alive brokers.
func AliveChanged(old, cur *Image) bool {
	return !slices.EqualFunc(old.LiveBrokers(), cur.LiveBrokers(), func(a, b Broker) bool { return a.ID == b.ID })
}
