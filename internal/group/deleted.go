package group

import (
	"log/slog"
)

// Offsets of deleted topics. Kafka removes every group's committed
// offsets of a deleted topic's partitions (onPartitionsDeleted): a topic
// re-created under the same name is a new topic, with a new id, and a
// group that resumed at the old offsets would skip its first records.
// Here one rule says when an offset is gone (offsetGone): its partition
// no longer exists, or its topic has another id than the one it was
// committed under (records carry the id, records.go). The rule is
// applied
//
//   - when the metadata says topics were deleted (TopicsDeleted, called by
//     the broker on every metadata change that removes topics): each
//     loaded group's gone offsets get tombstones in __consumer_offsets,
//     so that the removal outlives a restart and, replicated, a move of
//     the coordinator;
//   - when a partition of __consumer_offsets is loaded (load.go), since
//     a deletion may have happened while another broker, or none, was
//     the coordinator, and the records it wrote may not have survived;
//   - when a commit completes (offsets.go): one appended before the
//     deletion reached this broker, and still in flight when its group
//     was swept, is removed as it lands;
//   - to what OffsetFetch answers: between the metadata change and the
//     tombstones' commit the old offsets are not served.
//
// An offset without a topic id (written before ids were recorded) is
// taken as the deleted topic's when TopicsDeleted names its topic;
// found at load time under a re-created topic, it cannot be told apart
// and stays.

// livePartition reports whether partition p of topic exists now, with
// the topic's current id (zero if the metadata gives none).
func (c *Coordinator) livePartition(topic string, p int32) (TopicID, bool) {
	if c.cfg.TopicMeta != nil {
		id, n, ok := c.cfg.TopicMeta.TopicByName(topic)
		return id, ok && p >= 0 && p < n
	}
	return TopicID{}, c.cfg.Topics.PartitionExists(topic, p)
}

// offsetGone reports whether offset o of t belongs to a partition that no
// longer exists (see above). deleted names topics just deleted, for
// offsets without a topic id; nil if none.
func (c *Coordinator) offsetGone(t tp, o Offset, deleted map[string]bool) bool {
	id, ok := c.livePartition(t.topic, t.partition)
	switch {
	case !ok:
		return true
	case o.TopicID == TopicID{}:
		return deleted[t.topic]
	default:
		return id != TopicID{} && id != o.TopicID
	}
}

// TopicsDeleted removes from every group this coordinator has loaded the
// committed offsets of partitions that no longer exist, names being the
// topics the metadata just deleted. It appends the tombstones and
// returns; each group forgets the offsets once they are committed (and
// keeps them, unserved, should the write fail: the next load drops
// them). It returns how many offsets it removed.
func (c *Coordinator) TopicsDeleted(names []string) int {
	deleted := make(map[string]bool, len(names))
	for _, n := range names {
		deleted[n] = true
	}
	total := 0
	for _, g := range c.snapshotGroups() {
		total += c.sweepGroup(g, deleted)
	}
	return total
}

// sweepLoaded applies the rule to the groups just loaded from a partition.
func (c *Coordinator) sweepLoaded(groups map[string]*group) {
	for _, g := range groups {
		c.sweepGroup(g, nil)
	}
}

// sweepGroup writes tombstones for g's gone offsets. Like every change of
// the group, it waits while a deletion or a change of protocol of the
// group is in flight.
func (c *Coordinator) sweepGroup(g *group, deleted map[string]bool) int {
	g.mu.Lock()
	for g.barrier != nil && g.state != Dead {
		w := g.barrier
		g.mu.Unlock()
		<-w.done
		g.mu.Lock()
	}
	if g.state == Dead {
		g.mu.Unlock()
		return 0
	}
	var gone []tp
	for t, o := range g.offsets {
		// A partition with a commit in flight is checked when that
		// commit completes.
		if g.pendingOffsets[t] == 0 && c.offsetGone(t, o, deleted) {
			gone = append(gone, t)
		}
	}
	c.dropOffsets(g, gone)
	c.unlockMaybeForget(g)
	return len(gone)
}

// dropOffsets appends tombstones for the offsets gone of g (locked) and,
// once they are committed, forgets them; the wait happens in the
// background.
func (c *Coordinator) dropOffsets(g *group, gone []tp) {
	if len(gone) == 0 {
		return
	}
	recs := make([]Record, len(gone))
	for i, t := range gone {
		recs[i] = offsetTombstone(g.id, t)
	}
	w, err := c.write(g, recs, plainWrite, func(err error) {
		if err != nil {
			c.log.Warn("remove offsets of deleted topics", slog.String("group", g.id), slog.Any("err", err))
			return
		}
		if g.state == Dead {
			return
		}
		for _, t := range gone {
			delete(g.offsets, t)
		}
		c.log.Info("removed offsets of deleted topics", slog.String("group", g.id), slog.Int("offsets", len(gone)))
	})
	if err != nil {
		c.log.Warn("remove offsets of deleted topics", slog.String("group", g.id), slog.Any("err", err))
		return
	}
	c.waitAsync(g, w)
}

// partitionExists is livePartition without the id.
func (c *Coordinator) partitionExists(topic string, p int32) bool {
	_, ok := c.livePartition(topic, p)
	return ok
}
