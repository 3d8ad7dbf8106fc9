package replica

import (
	"fmt"

	"github.com/weir-project/weir/internal/storage"
)

// The follower side: package replication's fetcher calls these for the
// partitions this broker follows. Each takes the leader epoch the fetcher
// works for and refuses (ErrNotFollower) once the replica has moved on to
// another leader or epoch, so that a fetch answered by a deposed leader
// can never reach the log after the role change.

// checkFollower checks the role for a fetcher at leaderEpoch; callers
// hold appendMu, so the role cannot change before they are done.
func (p *Partition) checkFollower(leaderEpoch int32) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.removed {
		return ErrRemoved
	}
	if p.leader || p.st.LeaderEpoch != leaderEpoch || p.st.LeaderID < 0 {
		return fmt.Errorf("%w: %s-%d is at leader %d epoch %d (leader here: %v), fetcher at epoch %d",
			ErrNotFollower, p.tp.Topic, p.tp.Partition, p.st.LeaderID, p.st.LeaderEpoch, p.leader, leaderEpoch)
	}
	return nil
}

// FollowerState is what a fetcher needs to start: whom to fetch from,
// at which epoch, and this replica's own epoch history end.
type FollowerState struct {
	LeaderID    int32
	LeaderEpoch int32
	LogEnd      int64
	LogStart    int64
	// DurableLogStart is the log start a crash now would leave (below
	// LogStart while a raised one waits for its checkpoint): what the
	// leader is told, so that DeleteRecords counts only durable starts.
	DurableLogStart int64
	// LatestEpoch is the newest epoch in the local leader epoch cache
	// (-1 if none), what the fetcher asks the leader about.
	LatestEpoch int32
	// CannotWrite, if set, is why the log cannot take writes now (a full
	// disk: storage.Log.Writable). The fetcher then asks for no data and
	// tells the leader so (FollowerFetch.CannotWrite): its fetch offset
	// would otherwise say it is caught up whenever the leader has
	// nothing newer, the leader would keep it in (or add it to) the ISR,
	// and its failing appends would hold the high watermark.
	CannotWrite error
}

// FollowerState returns the replica's follower state, or ErrNotFollower.
func (p *Partition) FollowerState() (FollowerState, error) {
	p.appendMu.Lock()
	defer p.appendMu.Unlock()
	p.mu.Lock()
	st, leader, removed := p.st, p.leader, p.removed
	p.mu.Unlock()
	if removed {
		return FollowerState{}, ErrRemoved
	}
	if leader || st.LeaderID < 0 {
		return FollowerState{}, ErrNotFollower
	}
	latest, _, ok := p.log.LeaderEpochs().Latest()
	if !ok {
		latest = -1
	}
	return FollowerState{
		LeaderID:        st.LeaderID,
		LeaderEpoch:     st.LeaderEpoch,
		LogEnd:          p.log.LogEndOffset(),
		LogStart:        p.log.LogStartOffset(),
		DurableLogStart: p.log.DurableLogStartOffset(),
		LatestEpoch:     latest,
		CannotWrite:     p.log.Writable(),
	}, nil
}

// AppendAsFollower appends the leader's batches verbatim (offsets, epochs
// and CRCs as the leader wrote them); the producer state follows from the
// batches, so a new leader deduplicates retries of batches its
// predecessor accepted.
func (p *Partition) AppendAsFollower(leaderEpoch int32, records []byte) (storage.AppendInfo, error) {
	p.appendMu.Lock()
	defer p.appendMu.Unlock()
	if err := p.checkFollower(leaderEpoch); err != nil {
		return storage.AppendInfo{}, err
	}
	info, err := p.log.AppendAsFollower(records)
	if err != nil {
		return info, err
	}
	p.mu.Lock()
	p.notifyLocked(LogEnd)
	p.mu.Unlock()
	return info, nil
}

// TruncateTo removes every record at or after offset: where the epoch
// histories of this replica and the leader diverge (KIP-101/279).
func (p *Partition) TruncateTo(leaderEpoch int32, offset int64) error {
	p.appendMu.Lock()
	defer p.appendMu.Unlock()
	if err := p.checkFollower(leaderEpoch); err != nil {
		return err
	}
	if err := p.log.TruncateTo(offset); err != nil {
		return err
	}
	return p.afterTruncate()
}

// TruncateFullyAndStartAt empties the log and restarts it at offset: the
// leader's log starts past this replica's end (retention or DeleteRecords
// removed what this replica lacks).
func (p *Partition) TruncateFullyAndStartAt(leaderEpoch int32, offset int64) error {
	p.appendMu.Lock()
	defer p.appendMu.Unlock()
	if err := p.checkFollower(leaderEpoch); err != nil {
		return err
	}
	if err := p.log.TruncateFullyAndStartAt(offset); err != nil {
		return err
	}
	return p.afterTruncate()
}

// afterTruncate keeps the high watermark within the log and wakes waiters.
func (p *Partition) afterTruncate() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if leo := p.log.LogEndOffset(); p.hw > leo {
		p.hw = leo
		p.log.SetHighWatermark(leo)
	}
	p.notifyAllLocked()
	return nil
}

// UpdateFollowerHW applies the leader's high watermark from a fetch
// response: a follower's HW is min(leader HW, own log end).
func (p *Partition) UpdateFollowerHW(leaderEpoch int32, leaderHW int64) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.leader || p.st.LeaderEpoch != leaderEpoch {
		return ErrNotFollower
	}
	hw := min(leaderHW, p.log.LogEndOffset())
	if hw != p.hw && hw >= 0 {
		p.setHWLocked(hw)
	}
	return nil
}

// UpdateFollowerLogStart applies the leader's log start offset from a
// fetch response, as Kafka's followers do: records the leader deleted
// (DeleteRecords, retention) go here too, so they cannot come back after
// a failover. Only committed records may go: an offset above this
// replica's high watermark waits for a later fetch.
func (p *Partition) UpdateFollowerLogStart(leaderEpoch int32, leaderLogStart int64) error {
	p.appendMu.Lock()
	defer p.appendMu.Unlock()
	if err := p.checkFollower(leaderEpoch); err != nil {
		return err
	}
	p.mu.Lock()
	hw := p.hw
	p.mu.Unlock()
	start := p.log.LogStartOffset()
	if leaderLogStart > hw || leaderLogStart <= start && p.log.DurableLogStartOffset() >= start {
		return nil // nothing to raise, or to make durable (an earlier checkpoint failed)
	}
	if _, err := p.log.DeleteRecordsBefore(leaderLogStart); err != nil {
		return fmt.Errorf("partition %s-%d: follow leader log start %d: %w", p.tp.Topic, p.tp.Partition, leaderLogStart, err)
	}
	p.mu.Lock()
	p.notifyAllLocked()
	p.mu.Unlock()
	return nil
}
