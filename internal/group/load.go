package group

import (
	"context"
	"errors"
	"log/slog"
	"time"
)

// loadRetry is the pause before replaying a partition again after a
// failed attempt (its log not open yet, a read error).
const loadRetry = 500 * time.Millisecond

// load replays partition p into groups and installs them, retrying until
// it succeeds or the partition is resigned.
func (c *Coordinator) load(ctx context.Context, p int32, op *ownedPartition) {
	for {
		start := time.Now()
		groups, records, err := c.replay(ctx, p)
		if err == nil {
			if !c.install(p, op, groups) {
				return
			}
			c.log.Info("loaded consumer offsets partition", slog.Int("partition", int(p)),
				slog.Int("groups", len(groups)), slog.Int("records", records), slog.Duration("took", time.Since(start)))
			// Topics may have been deleted while another broker, or none,
			// coordinated these groups (deleted.go).
			c.sweepLoaded(groups)
			return
		}
		if ctx.Err() != nil {
			return
		}
		c.log.Warn("load consumer offsets partition", slog.Int("partition", int(p)), slog.Any("err", err))
		select {
		case <-ctx.Done():
			return
		case <-time.After(loadRetry):
		}
	}
}

// replay rebuilds the groups of partition p from its records: the last
// record per key wins and tombstones delete, as compaction would leave it.
func (c *Coordinator) replay(ctx context.Context, p int32) (map[string]*group, int, error) {
	now := c.clock.Now()
	groups := map[string]*group{}
	hasMeta := map[string]bool{}
	n := 0
	err := c.cfg.Log.Replay(ctx, p, func(r Record) error {
		n++
		if len(r.Key) >= 2 && isConsumerGroupKey(int16(r.Key[0])<<8|int16(r.Key[1])) {
			c.replayConsumer(p, groups, r, now)
			return nil
		}
		d, err := decodeRecord(r.Key, r.Value)
		if errors.Is(err, errNotGroupRecord) {
			return nil
		}
		if err != nil {
			// One bad record must not make every group of the partition
			// unavailable; it is reported and skipped.
			c.log.Warn("skip undecodable consumer offsets record", slog.Int("partition", int(p)), slog.Any("err", err))
			return nil
		}
		g := groups[d.group]
		if g == nil {
			g = newGroup(d.group, p, now)
			groups[d.group] = g
		}
		switch {
		case d.isOffset && d.offset == nil:
			delete(g.offsets, d.tp)
		case d.isOffset:
			g.offsets[d.tp] = *d.offset
		case d.meta == nil:
			g.clearMetadata(now)
			hasMeta[d.group] = false
		default:
			g.restore(d.meta)
			g.consumer = nil // a consumer group converted back to classic
			hasMeta[d.group] = true
		}
		return nil
	})
	if err != nil {
		return nil, n, err
	}
	for id, g := range groups {
		if !hasMeta[id] && len(g.offsets) == 0 && g.consumer == nil {
			delete(groups, id)
		}
		g.syncConsumerState(now)
	}
	return groups, n, nil
}

// install publishes replayed groups (unless p was resigned meanwhile:
// false) and starts the session timers of their members: a member that
// does not heartbeat to the new coordinator in time is removed as usual.
func (c *Coordinator) install(p int32, op *ownedPartition, groups map[string]*group) bool {
	c.mu.Lock()
	if c.parts[p] != op {
		c.mu.Unlock()
		return false
	}
	for id, g := range groups {
		g.ctx = op.ctx
		c.groups[id] = g
	}
	op.loaded = true
	c.mu.Unlock()
	for _, g := range groups {
		g.mu.Lock()
		for _, m := range g.members {
			c.scheduleHeartbeat(g, m)
		}
		if g.consumer != nil {
			for _, m := range g.consumer.members {
				c.scheduleConsumerSession(g, m)
				if m.state == memberUnrevoked {
					c.scheduleRevocation(g, m)
				}
			}
		}
		g.mu.Unlock()
	}
	return true
}

// replayConsumer applies one consumer group record (key versions 3 to 8)
// to the groups being rebuilt.
func (c *Coordinator) replayConsumer(p int32, groups map[string]*group, r Record, now time.Time) {
	cr, err := decodeConsumerRecord(r.Key, r.Value)
	if err != nil {
		c.log.Warn("skip undecodable consumer group record", slog.Int("partition", int(p)), slog.Any("err", err))
		return
	}
	g := groups[cr.group]
	if g == nil {
		g = newGroup(cr.group, p, now)
		groups[cr.group] = g
	}
	if g.consumer == nil {
		if cr.tombstone {
			return // the group is gone already
		}
		g.clearMetadata(now)
		g.consumer = newConsumerGroup()
	}
	g.consumer.apply(cr)
	if cr.kind == keyConsumerGroupMetadata && cr.tombstone {
		g.consumer = nil // the group was deleted (or became classic)
	}
}
