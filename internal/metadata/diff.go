package metadata

import (
	"cmp"
	"slices"
)

// TopicDelta lists how topics differ between two images, each list sorted
// by name. A topic deleted and recreated under the same name appears in
// both Removed (old id) and Added (new id). Topics are read-only.
type TopicDelta struct {
	Added   []*Topic
	Removed []*Topic
	Changed []*Topic // same id, new partitions or configs; the new version
}

// Empty reports whether nothing differs.
func (d TopicDelta) Empty() bool {
	return len(d.Added) == 0 && len(d.Removed) == 0 && len(d.Changed) == 0
}

// DiffTopics compares prev with next, e.g. two images a Changes()
// subscriber saw in turn. Because images share unchanged topics, a changed
// topic is simply one whose pointer differs; the cost is one pass over the
// topic maps.
func DiffTopics(prev, next *Image) TopicDelta {
	var d TopicDelta
	for id, nt := range next.topicsByID {
		switch pt := prev.topicsByID[id]; {
		case pt == nil:
			d.Added = append(d.Added, nt)
		case pt != nt:
			d.Changed = append(d.Changed, nt)
		}
	}
	for id, pt := range prev.topicsByID {
		if next.topicsByID[id] == nil {
			d.Removed = append(d.Removed, pt)
		}
	}
	byName := func(a, b *Topic) int { return cmp.Compare(a.Name, b.Name) }
	slices.SortFunc(d.Added, byName)
	slices.SortFunc(d.Removed, byName)
	slices.SortFunc(d.Changed, byName)
	return d
}

// BrokerDelta lists how brokers differ between two images, each list
// sorted by id.
type BrokerDelta struct {
	Added   []Broker
	Removed []Broker
	Changed []BrokerChange // same id, new registration or new state
}

// BrokerChange is one broker in both images, differing.
type BrokerChange struct{ Old, New Broker }

// Restarted reports a new registration (incarnation or epoch changed).
func (c BrokerChange) Restarted() bool {
	return c.Old.Incarnation != c.New.Incarnation || c.Old.Epoch != c.New.Epoch
}

// Fenced reports that the broker went from unfenced to fenced.
func (c BrokerChange) Fenced() bool { return !c.Old.Fenced && c.New.Fenced }

// Unfenced reports that the broker went from fenced to unfenced.
func (c BrokerChange) Unfenced() bool { return c.Old.Fenced && !c.New.Fenced }

// Empty reports whether nothing differs.
func (d BrokerDelta) Empty() bool {
	return len(d.Added) == 0 && len(d.Removed) == 0 && len(d.Changed) == 0
}

// DiffBrokers compares prev with next. Like topics, an unchanged broker
// keeps its pointer from image to image, so a changed one is one whose
// pointer differs and whose value differs.
func DiffBrokers(prev, next *Image) BrokerDelta {
	var d BrokerDelta
	for id, nb := range next.brokers {
		switch pb := prev.brokers[id]; {
		case pb == nil:
			d.Added = append(d.Added, *nb)
		case pb != nb && !sameBroker(pb, nb):
			d.Changed = append(d.Changed, BrokerChange{Old: *pb, New: *nb})
		}
	}
	for id, pb := range prev.brokers {
		if next.brokers[id] == nil {
			d.Removed = append(d.Removed, *pb)
		}
	}
	byID := func(a, b Broker) int { return cmp.Compare(a.ID, b.ID) }
	slices.SortFunc(d.Added, byID)
	slices.SortFunc(d.Removed, byID)
	slices.SortFunc(d.Changed, func(a, b BrokerChange) int { return cmp.Compare(a.New.ID, b.New.ID) })
	return d
}

func sameBroker(a, b *Broker) bool {
	return a.ID == b.ID && a.Host == b.Host && a.Port == b.Port && a.Rack == b.Rack &&
		slices.Equal(a.Endpoints, b.Endpoints) && a.Incarnation == b.Incarnation && a.Epoch == b.Epoch &&
		a.Fenced == b.Fenced && a.InControlledShutdown == b.InControlledShutdown
}

// ChangedPartitions returns the partitions of next (a version of the same
// topic as prev, e.g. from TopicDelta.Changed) that are new or whose state
// changed: every state change bumps the partition epoch, so comparing
// epochs is enough. prev nil means every partition.
func ChangedPartitions(prev, next *Topic) []int32 {
	var out []int32
	for i, np := range next.Partitions {
		if prev == nil || i >= len(prev.Partitions) || !samePartition(prev.Partitions[i], np) {
			out = append(out, np.Partition)
		}
	}
	return out
}
