package storage

import (
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"syscall"
	"time"

	"github.com/weir-project/weir/internal/storage/checkpoint"
)

// The flush of rolled segments, outside the log's lock (Kafka's roll
// schedules a "flush-log" task the same way).
//
// A roll seals the old segment and starts the new one under Log.mu, then
// asks for everything below the new base to be made durable: the .log and
// both indexes of every segment from the one holding the recovery point
// up, the producer snapshots written at those rolls, the directory (the
// new segment's entry, the snapshots' renames) and the leader epoch
// checkpoint. A flusher goroutine (one per log at most, and at most
// rollFlushSlots of a Manager's at once) does that without the lock, so
// appends go on meanwhile; the recovery point moves to the flushed base
// afterwards, under the lock, and only if every fsync succeeded and no
// truncation ran in between:
//
//   - Truncation (TruncateTo, TruncateFullyAndStartAt) counts itself in
//     clean.truncations: a flush planned before one never moves the
//     recovery point (the truncation has lowered it as needed); the
//     flusher plans again, below the new active segment only.
//   - Segments that left the log meanwhile (retention, DeleteRecords, a
//     cleaner swap, truncation) may fail their fsync (their files go
//     after file.delete.delay.ms): that is no error, since they are
//     not below the recovery point any more. What replaced them was
//     fsynced before it was swapped in.
//   - Close and Delete stop the flusher and wait for it before they
//     close the files (Manager.Close has flushed every log first).
//   - A failed fsync is a storage error: the pages it could not write
//     may be gone from the page cache and a retried fsync would succeed
//     without them, so the recovery point stays below the segment, the
//     log refuses writes with ErrStorage (as after a torn write) and
//     Close reports it, so the log dir is not marked cleanly shut down
//     and the next start rescans the segment.
//   - An index or checkpoint that cannot be written for lack of room
//     (ENOSPC, EDQUOT) loses nothing: it is in memory. The recovery
//     point stays where it is and the next roll or Flush tries again,
//     so a full disk refuses writes only while it is full (README).
//
// rollFlushSlots bounds the flushes running at once across a Manager's
// logs, as Kafka's background.threads (10) bound its flush-log tasks.
const rollFlushSlots = 10

// rollFlush is one planned flush: everything below target.
type rollFlush struct {
	target      int64
	segs        []*segment // from the one holding the recovery point, all sealed
	snapshots   []string   // producer snapshots written at those rolls
	syncDir     bool       // a roll created entries in the log's directory
	truncations int64      // clean.truncations when planned
}

// scheduleRollFlushLocked asks for everything below base (a roll's new
// segment) to be made durable, and starts the flusher if it is not
// running.
func (l *Log) scheduleRollFlushLocked(base int64) {
	l.flushTarget = base
	l.dirDirty = true
	if l.flushing || l.flushStopped || l.closed {
		return
	}
	l.flushing = true
	l.flushDone.Add(1)
	go l.runRollFlusher()
}

// runRollFlusher flushes until nothing is left below the latest roll's
// base, the log is stopped, or a flush failed.
func (l *Log) runRollFlusher() {
	defer l.flushDone.Done()
	for {
		if l.flushSlots != nil {
			l.flushSlots <- struct{}{}
		}
		l.mu.Lock()
		job := l.planRollFlushLocked()
		if job == nil {
			l.flushing = false
			l.mu.Unlock()
			l.releaseFlushSlot()
			return
		}
		l.mu.Unlock()
		segErrs, err := l.runRollFlush(job)
		l.mu.Lock()
		again := l.finishRollFlushLocked(job, segErrs, err)
		if !again {
			l.flushing = false
		}
		l.mu.Unlock()
		l.releaseFlushSlot()
		if !again {
			return
		}
	}
}

func (l *Log) releaseFlushSlot() {
	if l.flushSlots != nil {
		<-l.flushSlots
	}
}

// planRollFlushLocked returns what is to be flushed, or nil if nothing.
// The target is never above the active segment's base: a truncation may
// have cut back below the base a roll asked for.
func (l *Log) planRollFlushLocked() *rollFlush {
	if l.closed || l.flushStopped || l.syncFailed != nil {
		return nil
	}
	segs := l.segments()
	act := len(segs) - 1
	target := min(l.flushTarget, segs[act].base)
	rp := l.recoveryPoint.Load()
	if target <= rp {
		return nil
	}
	job := &rollFlush{target: target, syncDir: l.dirDirty, truncations: l.clean.truncations.Load()}
	for i := max(floorSegment(segs, rp), 0); i < act && segs[i].base < target; i++ {
		job.segs = append(job.segs, segs[i])
		if next := segs[i+1].base; l.hook != nil && next <= target {
			job.snapshots = append(job.snapshots, filepath.Join(l.dir, segmentName(next, snapshotSuffix)))
		}
	}
	l.dirDirty = false
	return job
}

// runRollFlush does a planned flush, without the log's lock. segErrs
// holds the segments whose flush failed; err anything else that failed.
func (l *Log) runRollFlush(job *rollFlush) (segErrs map[*segment]error, err error) {
	if l.beforeRollFlush != nil {
		if err := l.beforeRollFlush(l.dir, job.target); err != nil {
			return nil, err
		}
	}
	for _, s := range job.segs {
		start := time.Now()
		if err := s.flush(); err != nil {
			if segErrs == nil {
				segErrs = map[*segment]error{}
			}
			segErrs[s] = err
			continue
		}
		if l.flushObserver != nil {
			l.flushObserver.LogFlushed(time.Since(start))
		}
	}
	// Epochs that start below the target must be in the file before the
	// recovery point passes them: below it, recovery reads no batch.
	epochErr := l.epochs.Flush()
	var errs []error
	for _, p := range job.snapshots {
		if err := checkpoint.SyncFile(p); err != nil {
			errs = append(errs, fmt.Errorf("producer snapshot: %w", err))
		}
	}
	// One fsync of the directory for the new segments' entries and the
	// snapshots' renames.
	if job.syncDir || len(job.snapshots) > 0 {
		if err := l.fsyncDir(l.dir); err != nil {
			errs = append(errs, err)
		}
	}
	return segErrs, errors.Join(append(errs, epochErr)...)
}

// finishRollFlushLocked moves the recovery point after a flush, or
// records why not. It reports whether the flusher should plan again.
func (l *Log) finishRollFlushLocked(job *rollFlush, segErrs map[*segment]error, err error) bool {
	if l.closed {
		return false
	}
	segs := l.segments()
	for s, serr := range segErrs {
		if slices.Contains(segs, s) {
			err = errors.Join(err, serr)
		}
	}
	if err != nil && noRoom(err) {
		l.dirDirty = l.dirDirty || job.syncDir
		l.logger.Warn("flushing rolled segments: no room; the recovery point stays until the next flush", "below_offset", job.target, "err", err)
		return false
	}
	if err != nil {
		l.syncFailed = fmt.Errorf("flush of %s below offset %d: %w: %w", l.dir, job.target, ErrStorage, err)
		l.refusing.Store(true)
		l.logger.Error("flushing rolled segments failed; log refuses writes until restarted", "below_offset", job.target, "err", err)
		return false
	}
	if l.clean.truncations.Load() != job.truncations {
		// What was flushed may have been cut: plan again from the
		// lowered recovery point.
		l.dirDirty = l.dirDirty || job.syncDir
		return true
	}
	if l.recoveryPoint.Load() < job.target {
		l.recoveryPoint.Store(job.target)
	}
	return true // another roll may have come meanwhile
}

// noRoom reports whether every error in err is a lack of space or quota
// (one of them failing otherwise is a storage error). The fsync of a
// .log is never taken for one: fsync reports a failed writeback, whose
// pages may be lost, whatever its errno.
func noRoom(err error) bool {
	if err == nil {
		return false
	}
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		for _, e := range j.Unwrap() {
			if e != nil && !noRoom(e) {
				return false
			}
		}
		return true
	}
	var f fsyncError
	if errors.As(err, &f) {
		return false
	}
	return errors.Is(err, syscall.ENOSPC) || errors.Is(err, syscall.EDQUOT)
}

// stopRollFlusher makes the flusher stop after the flush it is doing
// and waits for it; none starts again. Called without the lock.
func (l *Log) stopRollFlusher() {
	l.mu.Lock()
	l.flushStopped = true
	l.mu.Unlock()
	l.flushDone.Wait()
}

// writeRefusedLocked is why the log refuses writes, or nil.
func (l *Log) writeRefusedLocked() error {
	switch {
	case l.torn != nil:
		return fmt.Errorf("append to %s: %w: %w", l.dir, ErrStorage, l.torn)
	case l.syncFailed != nil:
		return fmt.Errorf("append to %s: %w", l.dir, l.syncFailed)
	}
	return nil
}
