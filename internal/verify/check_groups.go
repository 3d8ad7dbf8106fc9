package verify

import "fmt"

// The consumer group's checks: commits never go backwards, and a member
// starts a partition it is assigned no lower than the commits completed
// before the assignment.

// assigned notes, for the partitions a member was just assigned, the
// offset its group had committed by then: the member starts from the
// committed offset its coordinator gives it, and a commit completed
// before the assignment began is one the coordinator must know. (In
// either protocol no other member's commit of such a partition
// completes between the two: a classic group refuses commits while it
// rebalances, and a partition is assigned anew only once its last owner
// revoked it, after the commit in its revoke callback.)
func (c *checker) assigned(op *Op) {
	f := c.floors[op.Proc]
	if f == nil {
		f = map[tp]int64{}
		c.floors[op.Proc] = f
	}
	for _, p := range op.Owned {
		at := tp{op.Topic, p}
		delete(f, at)
		if o, ok := c.committed[op.Group][at]; ok && op.Detail == "assigned" {
			f[at] = o
		}
	}
}

// firstRead checks a member's first read of a partition since it was
// assigned it against the group's commits completed before that.
func (c *checker) firstRead(op *Op, at tp, o int64) {
	floor, ok := c.floors[op.Proc][at]
	if !ok {
		return
	}
	delete(c.floors[op.Proc], at)
	if o < floor {
		c.anomaly(Anomaly{Kind: KStaleCommitRead, Topic: at.topic, Partition: at.p, Offset: o, T: op.T, Proc: op.Proc,
			Detail: fmt.Sprintf("%s, assigned the partition, began at offset %d, though a commit of %d had completed before", op.Proc, o, floor)})
	}
}

func (c *checker) commit(op *Op) {
	groupTPs := func() map[tp]int64 {
		g := c.committed[op.Group]
		if g == nil {
			g = map[tp]int64{}
			c.committed[op.Group] = g
		}
		return g
	}
	switch op.Type {
	case TInvoke:
		g := groupTPs()
		snap := map[tp]int64{}
		for p := range op.Offsets {
			if v, ok := g[tp{op.Topic, p}]; ok {
				snap[tp{op.Topic, p}] = v
			}
		}
		c.pending[op.Proc] = snap
	case TOK:
		c.commits++
		g := groupTPs()
		snap := c.pending[op.Proc]
		delete(c.pending, op.Proc)
		for _, p := range sortedKeys(op.Offsets) {
			o := op.Offsets[p]
			at := tp{op.Topic, p}
			if before, ok := snap[at]; ok && o < before {
				c.anomaly(Anomaly{Kind: KCommitBackwards, Topic: op.Topic, Partition: p, Offset: o, T: op.T, Proc: op.Proc,
					Detail: fmt.Sprintf("group %s committed %d after a commit of %d had completed", op.Group, o, before)})
			}
			g[at] = max(g[at], o)
		}
	default:
		delete(c.pending, op.Proc)
	}
}
