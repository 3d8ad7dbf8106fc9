package group

import (
	"log/slog"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
)

// scheduleExpiry arms the next offset expiry pass.
func (c *Coordinator) scheduleExpiry() {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return
	}
	c.expiry = c.clock.AfterFunc(c.cfg.RetentionCheckInterval, func() {
		c.ExpireOffsets()
		c.scheduleExpiry()
	})
}

// ExpireOffsets removes offsets past offsets.retention.minutes, as Kafka
// 2.1+ does (KIP-211): those of an empty group once it has been empty
// that long; those of a stable consumer group for topics no member
// subscribes to any more; those of a group used only to store offsets by
// their commit time; and any commit that carried its own expire time.
// An empty group left without offsets is deleted. Offsets with a commit
// in flight are left for the next pass, as Kafka leaves them. It returns
// how many offsets it expired (their tombstones appended: a group waits
// for them in the background, and keeps them should the write fail).
func (c *Coordinator) ExpireOffsets() int {
	now := c.clock.Now()
	total := 0
	for _, g := range c.snapshotGroups() {
		g.mu.Lock()
		n := c.expireGroup(g, now)
		total += n
		g.mu.Unlock()
	}
	return total
}

func (c *Coordinator) expireGroup(g *group, now time.Time) int {
	if g.state == Dead || g.barrier != nil {
		return 0
	}
	if g.consumer != nil {
		return c.expireConsumerGroup(g, now)
	}
	retention := c.cfg.OffsetsRetention
	subscribed, known := g.subscribedTopics()
	var recs []Record
	var gone []tp
	for t, o := range g.offsets {
		if g.pendingOffsets[t] > 0 {
			continue // its new commit is about to land
		}
		// A commit's own expire time replaces the retention rule, but only
		// for offsets that may expire at all: never those of a topic an
		// active group consumes (Kafka's removeExpiredOffsets).
		var base time.Time
		switch {
		case g.state == Empty && g.protocolType != "" && !g.stateTime.IsZero():
			base = g.stateTime
		case g.state == Empty:
			base = o.CommitTime
		case g.state == Stable && known && !subscribed[t.topic]:
			base = o.CommitTime
		default:
			continue
		}
		expired := !now.Before(base.Add(retention))
		if !o.ExpireTime.IsZero() {
			expired = !now.Before(o.ExpireTime)
		}
		if expired {
			recs = append(recs, offsetTombstone(g.id, t))
			gone = append(gone, t)
		}
	}
	deleteGroup := g.state == Empty && len(g.members) == 0 && len(gone) == len(g.offsets) && len(g.pending) == 0 &&
		len(g.writes) == 0
	if deleteGroup {
		recs = append(recs, groupTombstone(g.id))
	}
	return c.writeExpiry(g, recs, gone, deleteGroup)
}

// writeExpiry writes the tombstones of an expiry pass for g and, once
// they are committed, forgets the offsets (and the group, if asked).
func (c *Coordinator) writeExpiry(g *group, recs []Record, gone []tp, deleteGroup bool) int {
	if len(recs) == 0 {
		return 0
	}
	kind := plainWrite
	if deleteGroup {
		kind = barrierWrite
	}
	w, err := c.write(g, recs, kind, func(err error) {
		if err != nil {
			c.log.Warn("expire offsets", slog.String("group", g.id), slog.Any("err", err))
			return
		}
		if g.state == Dead {
			return
		}
		for _, t := range gone {
			delete(g.offsets, t)
		}
		if deleteGroup {
			c.shutdownGroup(g, kerr.GroupIDNotFound)
			c.forget(g) // lock order allows c.mu under g.mu, never the reverse
		}
		c.log.Info("expired offsets", slog.String("group", g.id), slog.Int("offsets", len(gone)), slog.Bool("group.deleted", deleteGroup))
	})
	if err != nil {
		c.log.Warn("expire offsets", slog.String("group", g.id), slog.Any("err", err))
		return 0
	}
	c.waitAsync(g, w)
	return len(gone)
}
