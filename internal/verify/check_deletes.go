package verify

import "fmt"

// The deleter's checks: once a DeleteRecords completed, no log start
// asked after it, and no final read, is below its offset (resurrected).

// deleteOp notes a completed deletion.
func (c *checker) deleteOp(op *Op) {
	if op.Type != TOK {
		return // info: it may or may not have taken effect
	}
	at := tp{op.Topic, op.Partition}
	c.deleted[at] = max(c.deleted[at], op.Offset)
	c.deletes++
}

// finalRead checks a record of the final read, which begins after every
// deletion completed, against them (once per partition).
func (c *checker) finalRead(op *Op, at tp, r Rec) {
	if r.O >= c.deleted[at] || c.resurrected[at] {
		return
	}
	c.resurrected[at] = true
	c.anomaly(Anomaly{Kind: KResurrected, Topic: op.Topic, Partition: r.P, Offset: r.O, Value: r.V, T: op.T, Proc: op.Proc,
		Detail: fmt.Sprintf("the final read returned offset %d, below %d, where a DeleteRecords had completed", r.O, c.deleted[at])})
}

// logStart checks the log starts a ListOffsets (earliest) answered
// against the deletions completed before it began.
func (c *checker) logStart(op *Op) {
	switch op.Type {
	case TInvoke:
		snap := map[tp]int64{}
		for at, o := range c.deleted {
			if at.topic == op.Topic {
				snap[at] = o
			}
		}
		c.deleting[op.Proc] = snap
	case TOK:
		snap := c.deleting[op.Proc]
		delete(c.deleting, op.Proc)
		for _, p := range sortedKeys(op.Offsets) {
			at := tp{op.Topic, p}
			if o := op.Offsets[p]; o < snap[at] {
				c.anomaly(Anomaly{Kind: KResurrected, Topic: op.Topic, Partition: p, Offset: o, T: op.T, Proc: op.Proc,
					Detail: fmt.Sprintf("log start %d, below %d, where a DeleteRecords had completed before this ListOffsets began", o, snap[at])})
			}
		}
	default:
		delete(c.deleting, op.Proc)
	}
}
