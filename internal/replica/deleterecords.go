package replica

import (
	"fmt"
	"slices"

	"github.com/weir-project/weir/internal/storage"
)

// DeleteRecords in two steps, as Kafka does it (KIP-107): the leader
// raises its own log start at once (DeleteRecordsBefore), and the request
// is answered once the low watermark, the least log start of the leader
// and of the followers on live brokers, has reached the offset
// (DeleteState, after each LowWatermark wake-up). Followers raise theirs
// from the leader's log start in fetch answers and report it in their
// next fetch. Answered at the leader's step alone, a deletion could be
// undone by a failover to a follower that had not fetched since: the
// records would be readable again from the new leader.

// DeleteRecordsBefore raises the leader's log start offset to offset (-1:
// the high watermark; nothing past it may be deleted). It returns the
// offset the deletion is complete at and the leader epoch it was made in,
// for DeleteState.
func (p *Partition) DeleteRecordsBefore(offset int64) (target int64, leaderEpoch int32, err error) {
	p.appendMu.Lock()
	defer p.appendMu.Unlock()
	p.mu.Lock()
	leader, hw, epoch := p.leader, p.hw, p.st.LeaderEpoch
	p.mu.Unlock()
	if !leader {
		return 0, 0, ErrNotLeader
	}
	if offset == -1 {
		offset = hw
	}
	if offset < 0 || offset > hw {
		return 0, 0, fmt.Errorf("%w: %d beyond high watermark %d", storage.ErrOffsetOutOfRange, offset, hw)
	}
	if _, err := p.log.DeleteRecordsBefore(offset); err != nil {
		return 0, 0, err
	}
	p.mu.Lock()
	// Fetches waiting here answer now: consumers see the new log start,
	// followers take it up and report theirs.
	p.notifyAllLocked()
	p.mu.Unlock()
	return offset, epoch, nil
}

// DeleteState reports whether a deletion up to offset made at
// leaderEpoch is complete (the low watermark reached it), the low
// watermark, and ErrNotLeader once this replica no longer leads in that
// epoch. Call it after each wake-up of a Waiter watching LowWatermark.
func (p *Partition) DeleteState(leaderEpoch int32, offset int64) (low int64, done bool, err error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.removed || !p.leader || p.st.LeaderEpoch != leaderEpoch {
		return -1, true, ErrNotLeader
	}
	low = p.lowWatermarkLocked()
	return low, low >= offset, nil
}

// BrokersChanged wakes the DeleteRecords waits of a leader whose view of
// the alive brokers changed: a follower fenced outside the ISR and the
// ELR is no longer waited for, though nothing of the partition changed.
func (p *Partition) BrokersChanged() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.notifyLocked(LowWatermark)
}

// lowWatermarkLocked is the least log start offset of the leader and of
// the followers that could serve reads without fetching from it first
// (-1 for one that has not said yet): those on live brokers, as in Kafka,
// and, live or not, the members of the ISR and of the ELR, which may be
// elected as they are. A replica outside both on a fenced broker joins
// the ISR only once it reports this leader's log start
// (maybeExpandISRLocked).
func (p *Partition) lowWatermarkLocked() int64 {
	low := p.log.LogStartOffset()
	for id, fs := range p.followers {
		if p.isr == nil || p.isr.Alive(id) || slices.Contains(p.st.ISR, id) || slices.Contains(p.st.ELR, id) {
			low = min(low, fs.logStart)
		}
	}
	return low
}
