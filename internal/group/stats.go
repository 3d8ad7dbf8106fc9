package group

// CommittedOffset is one committed offset of a loaded group, for the
// consumer lag metrics.
type CommittedOffset struct {
	Group     string
	Topic     string
	Partition int32
	Offset    int64
}

// GroupStats is what the metrics read of the coordinator at scrape time:
// the committed offsets and how many groups are in each state.
type GroupStats struct {
	Offsets []CommittedOffset
	// States counts the live groups by state name (a consumer group's
	// own state for KIP-848 groups), as ListGroups names them.
	States map[string]int
}

// Stats reads the loaded groups' committed offsets and states. It takes
// each group's lock in turn, as ListGroups does, so it never sees a
// group half-changed.
func (c *Coordinator) Stats() GroupStats {
	st := GroupStats{States: map[string]int{}}
	for _, g := range c.snapshotGroups() {
		g.mu.Lock()
		if g.state == Dead {
			g.mu.Unlock()
			continue
		}
		name := g.state.String()
		if g.consumer != nil {
			name = g.consumer.state()
		}
		st.States[name]++
		for k, o := range g.offsets {
			st.Offsets = append(st.Offsets, CommittedOffset{Group: g.id, Topic: k.topic, Partition: k.partition, Offset: o.Offset})
		}
		g.mu.Unlock()
	}
	return st
}
