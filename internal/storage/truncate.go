package storage

import (
	"errors"
	"fmt"
	"time"

	"github.com/weir-project/weir/internal/storage/recordbatch"
)

// TruncateTo removes every record at offset >= offset (replication).
//
// Batches are never split: if offset falls inside a batch, that whole
// batch goes and the log end becomes its base offset (below offset).
// An offset at or past the log end removes no record, but it still drops
// leader epoch entries starting at the log end: a broker that led an epoch
// and was deposed before appending to it holds such an entry, and if it
// stayed, records of an older epoch fetched from the new leader at that
// offset would make Assign drop the older epoch's earlier history too
// (Kafka's UnifiedLog.truncateTo does the same). One at or below the
// first segment's base empties the log and restarts it at offset.
func (l *Log) TruncateTo(offset int64) error {
	lowered, err := l.truncateTo(offset)
	if lowered && l.onStartLowered != nil {
		// Outside the lock: the manager rewrites its checkpoints.
		l.onStartLowered()
	}
	return err
}

// truncateTo is TruncateTo under the writer lock; lowered reports that
// the log start offset went down.
func (l *Log) truncateTo(offset int64) (lowered bool, err error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed {
		return false, ErrClosed
	}
	if end := l.logEnd.Load(); offset >= end {
		if err := l.epochs.TruncateFromEnd(end); err != nil {
			return false, fmt.Errorf("truncate %s to %d: leader epochs: %w", l.dir, offset, err)
		}
		return false, nil
	}
	// Counted once the truncation is complete (deferred calls run last
	// first), even if it failed midway: a cleaning pass planned before
	// must not swap in its copy of what was cut.
	defer l.clean.truncations.Add(1)
	start := l.logStart.Load()
	defer func() { lowered = l.logStart.Load() < start }()
	cfg := l.config()
	segs := l.segments()
	var newEnd int64
	var syncErr error
	if offset <= segs[0].base || offset < l.logStart.Load() {
		if err := l.truncateFullyLocked(offset, cfg); err != nil {
			return false, err
		}
		newEnd = offset
	} else {
		i := floorSegment(segs, offset)
		s := segs[i]
		cut, end, err := s.batchStartAt(offset)
		if err != nil {
			return false, fmt.Errorf("truncate %s to %d: %w", l.dir, offset, err)
		}
		newEnd = end
		if err := s.file.truncate(cut); err != nil {
			return false, fmt.Errorf("truncate %s: %w: %w", l.dir, ErrStorage, err)
		}
		s.size.Store(cut)
		s.offIdx.TruncateTo(newEnd)
		s.timeIdx.TruncateTo(newEnd)
		if err := s.restoreAppendState(); err != nil {
			return false, fmt.Errorf("truncate %s: %w", l.dir, err)
		}
		switch {
		case cut == 0:
			s.firstAppend = time.Time{}
		case s.firstAppend.IsZero():
			s.firstAppend = time.Now() // a sealed segment became active again
		}
		l.setSegments(append([]*segment(nil), segs[:i+1]...))
		l.logEnd.Store(newEnd)
		l.scheduleDeletes(segs[i+1:], cfg)
		if i+1 < len(segs) {
			// Until the renames are durable, a power loss brings the cut
			// segments back at the next start. (The full truncation's
			// new segment gets the same fsync.) The cut stands in memory
			// either way, so its bookkeeping below still runs.
			if err := l.fsyncDir(l.dir); err != nil {
				syncErr = fmt.Errorf("truncate %s to %d: %w: %w", l.dir, offset, ErrStorage, err)
			}
		}
	}
	// A cut inside the batch holding the log start moves the end below
	// the start; keep start <= end as Kafka does.
	if l.logStart.Load() > newEnd {
		l.logStart.Store(newEnd)
	}
	if l.recoveryPoint.Load() > newEnd {
		l.recoveryPoint.Store(newEnd)
	}
	// What is appended from here on was never in an offset map.
	if l.clean.point.Load() > newEnd {
		l.clean.point.Store(newEnd)
	}
	if err := l.epochs.TruncateFromEnd(newEnd); err != nil {
		return false, errors.Join(syncErr, fmt.Errorf("truncate leader epochs of %s to %d: %w", l.dir, newEnd, err))
	}
	return false, errors.Join(syncErr, l.resetHookLocked(newEnd))
}

// TruncateFullyAndStartAt empties the log and restarts it at offset, which
// may lie past the log end (replication: a follower behind the leader's
// log start). The leader epoch history goes with the data.
func (l *Log) TruncateFullyAndStartAt(offset int64) error {
	if offset < 0 {
		return fmt.Errorf("truncate %s fully: negative offset %d", l.dir, offset)
	}
	lowered, err := l.truncateFullyAndStartAt(offset)
	if lowered && l.onStartLowered != nil {
		l.onStartLowered()
	}
	return err
}

func (l *Log) truncateFullyAndStartAt(offset int64) (lowered bool, err error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed {
		return false, ErrClosed
	}
	defer l.clean.truncations.Add(1)
	start := l.logStart.Load()
	if err := l.truncateFullyLocked(offset, l.config()); err != nil {
		return false, err
	}
	var syncErr error
	if err := l.fsyncDir(l.dir); err != nil {
		syncErr = fmt.Errorf("truncate %s fully at %d: %w: %w", l.dir, offset, ErrStorage, err)
	}
	l.recoveryPoint.Store(offset)
	l.clean.point.Store(offset)
	if l.highWatermark.Load() > offset {
		l.highWatermark.Store(offset)
	}
	if err := l.epochs.TruncateFromEnd(0); err != nil {
		return offset < start, errors.Join(syncErr, fmt.Errorf("clear leader epochs of %s: %w", l.dir, err))
	}
	return offset < start, errors.Join(syncErr, l.resetHookLocked(offset))
}

// truncateFullyLocked replaces every segment by an empty one at offset.
func (l *Log) truncateFullyLocked(offset int64, cfg Config) error {
	old := l.segments()
	// The new segment may share the first one's name: retire the old
	// files first.
	for _, s := range old {
		if err := s.renameDeleted(); err != nil {
			return fmt.Errorf("truncate %s fully: %w: %w", l.dir, ErrStorage, err)
		}
	}
	seg, err := l.newSegmentLocked(offset, cfg, true)
	if err != nil {
		return err
	}
	l.logStart.Store(offset)
	l.durableStart.Store(offset) // the new segment's base
	l.setSegments([]*segment{seg})
	l.logEnd.Store(offset)
	l.scheduleRenamed(old, cfg)
	return nil
}

// batchStartAt returns the byte position and base offset of the batch
// containing offset (or of the first batch after it).
func (s *segment) batchStartAt(offset int64) (pos int64, base int64, err error) {
	end := s.size.Load()
	_, p := s.offIdx.Lookup(offset)
	pos, base = end, -1
	serr := s.scanHeaders(p, end, func(at int64, h recordbatch.Header) bool {
		if h.LastOffset() >= offset {
			pos, base = at, h.BaseOffset
			return false
		}
		pos, base = at+h.Size(), h.LastOffset()+1
		return true
	})
	if serr != nil {
		return 0, 0, fmt.Errorf("segment %s: %w", s.logPath(), serr)
	}
	if base < 0 {
		base = s.base
	}
	return pos, min(base, offset), nil
}

// restoreAppendState recomputes the max timestamp and the bytes since the
// last index entry after a truncation, by scanning the batch headers.
func (s *segment) restoreAppendState() error {
	s.resetTimestamps()
	_, ipos := s.offIdx.LastEntry()
	end := s.size.Load()
	err := s.scanHeaders(0, end, func(_ int64, h recordbatch.Header) bool {
		s.noteTimestamp(h.MaxTimestamp, h.LastOffset())
		return true
	})
	if err != nil {
		return fmt.Errorf("rescan %s: %w", s.logPath(), err)
	}
	s.bytesSinceIndex = end - ipos
	return nil
}

// DeleteRecordsBefore raises the log start offset to offset (DeleteRecords)
// and deletes segments wholly below it. offset > LogEndOffset: ErrOffsetOutOfRange.
//
// The new log start is durable when it returns: a start inside a segment
// is known only from the log-start checkpoint, which the manager then
// writes (syncStart) before the call returns. Otherwise a crash brought
// back the deleted records, and a replica that had said its start was
// past them could serve them again once it led.
func (l *Log) DeleteRecordsBefore(offset int64) (newLogStart int64, err error) {
	start, pending, err := l.deleteRecordsBefore(offset)
	if err != nil || !pending {
		return start, err
	}
	if l.syncStart != nil { // else a log of its own: nothing to write
		if err := l.syncStart(); err != nil {
			// ErrStorage: answered KAFKA_STORAGE_ERROR, as Kafka
			// answers a write its log dir failed (a full disk).
			return start, fmt.Errorf("make log start %d of %s durable: %w: %w", start, l.dir, ErrStorage, err)
		}
	}
	l.startDurable(start)
	return start, nil
}

// deleteRecordsBefore raises the log start and returns it; pending
// reports whether it is not yet durable: inside a segment (past the first
// remaining segment's base) and above the durable start. A start raised
// to a segment's base is durable at once.
func (l *Log) deleteRecordsBefore(offset int64) (start int64, pending bool, err error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed {
		return 0, false, ErrClosed
	}
	if offset > l.logEnd.Load() {
		return 0, false, fmt.Errorf("delete records before %d past log end %d: %w", offset, l.logEnd.Load(), ErrOffsetOutOfRange)
	}
	if start := l.logStart.Load(); offset <= start {
		// Raised already, perhaps by a call whose checkpoint failed or
		// is still being written: this one waits for (or retries) it.
		return start, l.DurableLogStartOffset() < start, nil
	}
	l.logStart.Store(offset)
	segs := l.segments()
	n := 0
	for n+1 < len(segs) && segs[n+1].base <= offset {
		n++
	}
	if n > 0 {
		l.setSegments(append([]*segment(nil), segs[n:]...))
		l.scheduleDeletes(segs[:n], l.config())
	}
	if err := l.epochs.TruncateFromStart(offset); err != nil {
		return offset, false, fmt.Errorf("truncate leader epochs of %s from %d: %w: %w", l.dir, offset, ErrStorage, err)
	}
	if segs[n].base == offset {
		l.startDurable(offset)
		return offset, false, nil
	}
	return offset, true, nil
}
