package replica

import (
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"time"

	"github.com/weir-project/weir/internal/storage"
	"github.com/weir-project/weir/internal/storage/recordbatch"
)

// ISRChanger proposes ISR changes to the controller (Kafka's
// AlterPartition). AlterISR must not block: the outcome arrives as a
// metadata update (Update with a new partition epoch) or, if the
// controller refuses or cannot be reached, as a call to ISRChangeFailed.
type ISRChanger interface {
	AlterISR(p *Partition, c ISRChange)
	// MayJoinISR reports whether broker id may be added to an ISR: not
	// fenced and not shutting down (KIP-841). The controller refuses such
	// an expansion (INELIGIBLE_REPLICA), and while one is pending the
	// high watermark waits for the broker it adds, which is going away.
	// Called with the partition's lock held: it must not block.
	MayJoinISR(id int32) bool
	// Alive reports whether broker id is registered and not fenced
	// (Kafka's alive broker, shutting down or not): DeleteRecords waits
	// for the log starts of the replicas on such brokers. Called with
	// the partition's lock held: it must not block.
	Alive(id int32) bool
}

// ISRChange is one proposal: the ISR the leader wants, made at the given
// leader and partition epochs (the controller compares and sets on them).
type ISRChange struct {
	TopicPartition storage.TopicPartition
	TopicID        [16]byte
	LeaderEpoch    int32
	PartitionEpoch int32
	ISR            []int32
	// PreviousISR is the size of the ISR the change replaces, so that
	// the broker can tell a shrink from an expansion (ISR metrics).
	PreviousISR int
}

// follower is what the leader knows of one follower replica.
type follower struct {
	id  int32
	leo int64 // -1 until its first fetch in this leader epoch
	// logStart is its log start offset as its last fetch said; -1 until
	// a fetch said it.
	logStart int64
	// lastCaughtUp is the last time the follower's log end reached the
	// leader's (Kafka's lastCaughtUpTimeMs); replica.lag.time.max.ms is
	// measured from it.
	lastCaughtUp time.Time
	// lastFetch and leaderEndAtLastFetch: a fetch at or past the leader's
	// log end as it was at the previous fetch means the follower was
	// caught up at that previous fetch.
	lastFetch            time.Time
	leaderEndAtLastFetch int64
}

func newFollower(id int32, now time.Time) *follower {
	// A fresh allowance, as Kafka gives: a follower is not thrown out of
	// the ISR for the time before this broker led.
	return &follower{id: id, leo: -1, logStart: -1, lastCaughtUp: now, leaderEndAtLastFetch: -1}
}

// Appended is the outcome of a leader append: where the batches went and
// the leader epoch they were written in (what an acks=-1 wait checks).
type Appended struct {
	storage.AppendInfo
	LeaderEpoch int32
}

// AppendAsLeader appends a producer's batches. acks=-1 needs the ISR to
// reach min.insync.replicas before anything is written.
func (p *Partition) AppendAsLeader(records []byte, acks int16) (Appended, error) {
	return p.AppendCheckedAsLeader(records, recordbatch.Checked{}, acks)
}

// AppendCheckedAsLeader is AppendAsLeader for batches validated as they
// arrived (see storage.Log.AppendChecked).
func (p *Partition) AppendCheckedAsLeader(records []byte, checked recordbatch.Checked, acks int16) (Appended, error) {
	p.appendMu.Lock()
	defer p.appendMu.Unlock()
	p.mu.Lock()
	leader, epoch, isr, minISR := p.leader, p.st.LeaderEpoch, len(p.st.ISR), p.st.MinISR
	p.mu.Unlock()
	if !leader {
		return Appended{}, ErrNotLeader
	}
	if acks == -1 && isr < minISR {
		return Appended{}, fmt.Errorf("%w: isr %d below min.insync.replicas %d", ErrNotEnoughReplicas, isr, minISR)
	}
	if info, dup, err := p.checkProducers(records); err != nil || dup {
		return Appended{AppendInfo: info, LeaderEpoch: epoch}, err
	}
	info, err := p.log.AppendChecked(records, checked, epoch)
	if err != nil {
		if errors.Is(err, storage.ErrStorage) {
			p.mu.Lock()
			to := p.handOverLocked()
			handing := p.handingOver
			p.mu.Unlock()
			if to != nil {
				p.logger.Warn("handing the leadership over after a storage error", slog.Any("isr", to), slog.Any("err", err))
			}
			if handing {
				err = fmt.Errorf("%w: %w", ErrHandingOver, err)
			}
		}
		return Appended{AppendInfo: info, LeaderEpoch: epoch}, err
	}
	p.mu.Lock()
	p.notifyLocked(LogEnd)
	p.advanceHWLocked()
	p.mu.Unlock()
	return Appended{AppendInfo: info, LeaderEpoch: epoch}, nil
}

// AckState reports whether an acks=-1 batch ending at lastOffset is
// committed (the high watermark passed it), and the error to answer with
// when it can no longer be: leadership lost, or the ISR fell below
// min.insync.replicas while waiting (NOT_ENOUGH_REPLICAS_AFTER_APPEND).
// Call it after each wake-up of a Waiter watching HighWatermark.
func (p *Partition) AckState(leaderEpoch int32, lastOffset int64) (done bool, err error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	switch {
	case p.removed || !p.leader || p.st.LeaderEpoch != leaderEpoch:
		return true, ErrNotLeader
	case p.hw > lastOffset:
		return true, nil
	case len(p.st.ISR) < p.st.MinISR:
		return true, fmt.Errorf("%w: isr %d below min.insync.replicas %d", ErrNotEnoughAfter, len(p.st.ISR), p.st.MinISR)
	}
	return false, nil
}

// FollowerFetch is a replica fetch as the leader sees it.
type FollowerFetch struct {
	ReplicaID          int32
	CurrentLeaderEpoch int32 // -1: not given
	FetchOffset        int64 // the follower's log end offset
	LogStartOffset     int64 // the follower's log start offset; -1: not given
	MaxBytes           int
	// CannotWrite: the follower's log cannot take writes (it asked for
	// no data: PartitionMaxBytes 0, which a weir follower sends for
	// nothing else). Its fetch says nothing of its progress, and it
	// leaves the ISR at once instead of after replica.lag.time.max.ms.
	CannotWrite bool
}

// ReadForFollower serves a follower: it records the follower's log start
// (for DeleteRecords) and log end offset (its fetch offset), which may
// advance the high watermark and bring the follower back into the ISR,
// then reads from the fetch offset up to the leader's log end. Offsets
// are returned after the update.
func (p *Partition) ReadForFollower(f FollowerFetch) (storage.ReadResult, Offsets, error) {
	p.mu.Lock()
	if err := p.checkLeaderLocked(f.CurrentLeaderEpoch); err != nil {
		p.mu.Unlock()
		return storage.ReadResult{}, Offsets{}, err
	}
	fs := p.followers[f.ReplicaID]
	if fs == nil {
		p.mu.Unlock()
		return storage.ReadResult{}, Offsets{}, fmt.Errorf("%w: broker %d fetching %s-%d (replicas %v)", ErrNotReplica, f.ReplicaID, p.tp.Topic, p.tp.Partition, p.st.Replicas)
	}
	if f.LogStartOffset >= 0 && f.LogStartOffset != fs.logStart {
		fs.logStart = f.LogStartOffset
		p.notifyLocked(LowWatermark)
	}
	leo := p.log.LogEndOffset()
	if f.CannotWrite {
		dropped := p.dropFromISRLocked(fs.id)
		o := p.offsetsLocked()
		p.mu.Unlock()
		if dropped {
			p.logger.Warn("follower cannot write; taking it out of the ISR", slog.Int("follower", int(fs.id)))
		}
		return storage.ReadResult{}, o, nil
	}
	if f.FetchOffset <= leo && f.FetchOffset >= p.log.LogStartOffset() {
		// An offset outside the log is answered OFFSET_OUT_OF_RANGE
		// below and tells nothing about the follower's progress.
		p.recordFetchLocked(fs, f.FetchOffset, leo)
	}
	o := p.offsetsLocked()
	p.mu.Unlock()
	r, err := p.log.Read(f.FetchOffset, f.MaxBytes, -1)
	return r, o, err
}

// recordFetchLocked applies Kafka's caught-up rule and what follows from
// the new follower log end: HW advance, ISR expansion.
func (p *Partition) recordFetchLocked(fs *follower, offset, leo int64) {
	now := p.now()
	switch {
	case offset >= leo:
		fs.lastCaughtUp = now
	case fs.leaderEndAtLastFetch >= 0 && offset >= fs.leaderEndAtLastFetch && fs.lastFetch.After(fs.lastCaughtUp):
		fs.lastCaughtUp = fs.lastFetch
	}
	fs.leo, fs.lastFetch, fs.leaderEndAtLastFetch = offset, now, leo
	p.maybeExpandISRLocked(fs)
	p.advanceHWLocked()
}

// maybeExpandISRLocked proposes adding a follower that has caught up: its
// log end has reached the high watermark and the start of this leader's
// epoch (so it holds every record of earlier epochs the leader has), and
// its durable log start has reached the leader's (so records deleted by
// DeleteRecords stay deleted if it is elected: a follower back from a
// fence was not waited for, and takes the leader's start only from the
// answer to the fetch that may have caught it up).
func (p *Partition) maybeExpandISRLocked(fs *follower) {
	if p.isr == nil || p.pendingISR != nil || slices.Contains(p.st.ISR, fs.id) {
		return
	}
	if fs.leo < p.hw || fs.leo < p.epochStart || fs.logStart < p.log.LogStartOffset() {
		return
	}
	if !p.isr.MayJoinISR(fs.id) {
		// A broker in controlled shutdown keeps fetching until it
		// exits: proposing it after every fetch would hold the high
		// watermark (and acks=all) until each refusal came back.
		return
	}
	next := append(slices.Clone(p.st.ISR), fs.id)
	slices.Sort(next)
	p.proposeLocked(next, next)
}

// MaybeShrinkISR proposes removing followers that have not been caught up
// for replica.lag.time.max.ms. The broker calls it periodically for the
// partitions it leads.
func (p *Partition) MaybeShrinkISR() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if !p.leader || p.isr == nil || p.pendingISR != nil {
		return
	}
	now := p.now()
	var keep []int32
	for _, id := range p.st.ISR {
		fs := p.followers[id]
		if id == p.localID || fs == nil || now.Sub(fs.lastCaughtUp) <= p.lagMax {
			keep = append(keep, id)
		}
	}
	if len(keep) == len(p.st.ISR) {
		return
	}
	// Until the controller commits the shrink, the removed followers
	// still count for the high watermark.
	p.proposeLocked(keep, slices.Clone(p.st.ISR))
}

// handOverLocked gives up the leadership after a storage error (a full
// or failing disk): it proposes the ISR without this broker, and the
// controller elects the first remaining member (metadata's alterOne).
// Kafka takes the whole log dir offline instead, and stops a broker whose
// every dir failed; weir keeps the dir serving reads and taking writes
// again once it can, and moves only what it cannot write. Every ISR
// member holds everything below the high watermark, so the new leader has
// every acknowledged record; this broker, a follower now, truncates to
// the new leader's log and fetches, and rejoins the ISR once its appends
// succeed again. Nothing is proposed when no other ISR member may lead or
// a change is already in flight (the next failed append tries again).
// It returns the ISR proposed, nil if none.
func (p *Partition) handOverLocked() []int32 {
	if !p.leader || p.isr == nil || p.pendingISR != nil {
		return nil
	}
	others := p.isrWithoutLocked(p.localID)
	if !slices.ContainsFunc(others, p.isr.MayJoinISR) {
		return nil
	}
	p.proposeLocked(others, slices.Clone(p.st.ISR))
	p.handingOver = true
	return others
}

// dropFromISRLocked proposes the ISR without follower id now, if it is in
// it and no change is in flight (the next fetch tries again); it reports
// whether it did.
func (p *Partition) dropFromISRLocked(id int32) bool {
	if !p.leader || p.isr == nil || p.pendingISR != nil || !slices.Contains(p.st.ISR, id) {
		return false
	}
	p.proposeLocked(p.isrWithoutLocked(id), slices.Clone(p.st.ISR))
	return true
}

// isrWithoutLocked is the committed ISR minus broker id (a new slice).
func (p *Partition) isrWithoutLocked(id int32) []int32 {
	return slices.DeleteFunc(slices.Clone(p.st.ISR), func(m int32) bool { return m == id })
}

// proposeLocked sends an ISR change; maximal is the ISR the high
// watermark is computed over until the change is decided.
func (p *Partition) proposeLocked(isr, maximal []int32) {
	p.pendingISR = maximal
	p.isr.AlterISR(p, ISRChange{
		TopicPartition: p.tp,
		TopicID:        p.st.TopicID,
		LeaderEpoch:    p.st.LeaderEpoch,
		PartitionEpoch: p.st.PartitionEpoch,
		ISR:            isr,
		PreviousISR:    len(p.st.ISR),
	})
}

// ISRChangeFailed clears a pending proposal made at partitionEpoch that
// the controller refused or never answered; the next fetch or shrink
// check proposes again from the current state.
func (p *Partition) ISRChangeFailed(partitionEpoch int32) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.st.PartitionEpoch == partitionEpoch {
		p.clearPendingLocked()
	}
}

// clearPendingLocked forgets the proposal in flight.
func (p *Partition) clearPendingLocked() {
	p.pendingISR, p.handingOver = nil, false
}

// Leads reports whether this replica still leads at leaderEpoch.
func (p *Partition) Leads(leaderEpoch int32) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return !p.removed && p.leader && p.st.LeaderEpoch == leaderEpoch
}

// WritesRefused reports whether this partition's log refuses writes now
// (its last write failed: a full disk, a failed fsync). An append here,
// at any acks, fails and then waits for the leadership to be handed
// over. One atomic load; advice like AcksAllMayWait.
func (p *Partition) WritesRefused() bool { return p.log.Refusing() }

// AcksAllMayWait reports whether an acks=-1 append here may have to wait
// for other brokers: this broker leads and the ISR the high watermark is
// computed over (the maximal one while a change is pending) holds
// another. A leader alone in it commits at the append (or refuses it
// below min.insync.replicas), and a follower refuses it: neither waits.
// The answer may be stale by the time of the append; it is advice for
// where to handle the request, never for what to answer.
func (p *Partition) AcksAllMayWait() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if !p.leader {
		return false
	}
	isr := p.st.ISR
	if p.pendingISR != nil {
		isr = p.pendingISR
	}
	for _, id := range isr {
		if id != p.localID {
			return true
		}
	}
	return false
}

// advanceHWLocked moves the high watermark to the smallest log end offset
// over the (maximal) ISR. It never moves backwards, and never while the
// committed ISR is below min.insync.replicas (KIP-966): a record counted
// as committed must be on min.insync.replicas brokers. Callers hold p.mu.
func (p *Partition) advanceHWLocked() {
	if !p.leader {
		return
	}
	if len(p.st.ISR) < p.st.MinISR {
		return
	}
	hw := p.log.LogEndOffset()
	isr := p.st.ISR
	if p.pendingISR != nil {
		isr = p.pendingISR
	}
	for _, id := range isr {
		if id == p.localID {
			continue
		}
		fs := p.followers[id]
		if fs == nil || fs.leo < 0 {
			return // a member's progress is unknown: hold
		}
		hw = min(hw, fs.leo)
	}
	if hw > p.hw {
		p.setHWLocked(hw)
	}
}

// setHWLocked publishes a new high watermark.
func (p *Partition) setHWLocked(hw int64) {
	p.hw = hw
	p.log.SetHighWatermark(hw)
	p.log.SetCleanableLimit(hw) // the cleaner compacts only committed records
	p.notifyLocked(HighWatermark)
}

// ReplicaStatus is the leader's view of one replica, for DescribeLogDirs,
// metrics and tests.
type ReplicaStatus struct {
	ID           int32
	LogEnd       int64 // -1: unknown
	LastCaughtUp time.Time
}

// Followers returns the leader's view of its followers (empty when not
// leading).
func (p *Partition) Followers() []ReplicaStatus {
	p.mu.Lock()
	defer p.mu.Unlock()
	if !p.leader {
		return nil
	}
	out := make([]ReplicaStatus, 0, len(p.followers))
	for _, fs := range p.followers {
		out = append(out, ReplicaStatus{ID: fs.id, LogEnd: fs.leo, LastCaughtUp: fs.lastCaughtUp})
	}
	slices.SortFunc(out, func(a, b ReplicaStatus) int { return int(a.ID - b.ID) })
	return out
}
