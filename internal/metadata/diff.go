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
