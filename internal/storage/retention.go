package storage

import (
	"errors"
	"fmt"
	"time"
)

// EnforceRetention deletes old segments by retention.ms and retention.bytes
// (never the active one) and returns how many it deleted. Segments go
// oldest first and only while the rule holds, so the log stays contiguous;
// the log start offset moves to the first remaining segment's base.
func (l *Log) EnforceRetention(now time.Time) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed {
		return 0, ErrClosed
	}
	cfg := l.config()
	segs := l.segments()
	n := 0
	if cfg.RetentionMs >= 0 {
		cutoff := now.UnixMilli() - cfg.RetentionMs
		for n < len(segs)-1 {
			ts, err := segs[n].retentionTimestamp()
			if err != nil {
				return 0, err
			}
			if ts >= cutoff {
				break
			}
			n++
		}
	}
	if cfg.RetentionBytes >= 0 {
		var total int64
		for _, s := range segs {
			total += s.size.Load()
		}
		excess := total - cfg.RetentionBytes
		for _, s := range segs[:n] {
			excess -= s.size.Load()
		}
		for n < len(segs)-1 && excess-segs[n].size.Load() >= 0 {
			excess -= segs[n].size.Load()
			n++
		}
	}
	if n == 0 {
		return 0, nil
	}
	newStart := segs[n].base
	if newStart > l.logStart.Load() {
		l.logStart.Store(newStart)
		l.startDurable(newStart) // a segment's base: the files say it
	}
	l.setSegments(append([]*segment(nil), segs[n:]...))
	l.scheduleDeletes(segs[:n], cfg)
	l.logger.Info("retention deleted segments", "count", n, "log_start", l.logStart.Load())
	if err := l.epochs.TruncateFromStart(l.logStart.Load()); err != nil {
		return n, fmt.Errorf("truncate leader epochs of %s: %w", l.dir, err)
	}
	return n, nil
}

// retentionTimestamp is the segment's largest timestamp, or its file's
// modification time when no batch carries a timestamp (Kafka's rule).
func (s *segment) retentionTimestamp() (int64, error) {
	if ts, _ := s.timestamps(); ts >= 0 {
		return ts, nil
	}
	st, err := s.file.stat()
	if err != nil {
		return 0, fmt.Errorf("retention time of segment %d: %w", s.base, err)
	}
	return st.ModTime().UnixMilli(), nil
}

// MaybeRoll rolls the active segment if segment.ms has passed (called by
// the manager's timer; size and index-full rolls happen in Append).
func (l *Log) MaybeRoll(now time.Time) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed {
		return ErrClosed
	}
	if l.writeRefusedLocked() != nil {
		// Sealing would put a torn tail below the recovery point, or
		// start a segment no write may reach. No error: the timer asks
		// every second, and the failure was logged.
		return nil
	}
	cfg := l.config()
	act := l.active()
	if act.size.Load() == 0 || act.firstAppend.IsZero() ||
		now.Sub(act.firstAppend) < time.Duration(cfg.SegmentMs)*time.Millisecond {
		return nil
	}
	_, err := l.rollLocked(cfg)
	return err
}

// scheduleDeletes renames segments (already unlinked from the segment
// list) to *.deleted and removes them after file.delete.delay.ms, so a
// reader holding one from an older list snapshot keeps working.
func (l *Log) scheduleDeletes(segs []*segment, cfg Config) {
	for _, s := range segs {
		if err := s.renameDeleted(); err != nil {
			l.logger.Warn("renaming deleted segment", "segment", s.base, "err", err)
		}
	}
	l.scheduleRenamed(segs, cfg)
}

// scheduleRenamed arms removal timers for segments already renamed.
func (l *Log) scheduleRenamed(segs []*segment, cfg Config) {
	delay := time.Duration(cfg.FileDeleteDelayMs) * time.Millisecond
	l.delMu.Lock()
	defer l.delMu.Unlock()
	for _, s := range segs {
		l.pending[s] = time.AfterFunc(delay, func() {
			l.delMu.Lock()
			_, mine := l.pending[s]
			delete(l.pending, s)
			l.delMu.Unlock()
			if !mine {
				return // finishPendingDeletes got there first
			}
			if err := s.closeAndRemove(); err != nil {
				l.logger.Warn("removing deleted segment", "segment", s.base, "err", err)
			}
		})
	}
}

// finishPendingDeletes removes every segment still waiting for its timer.
func (l *Log) finishPendingDeletes() error {
	l.delMu.Lock()
	pend := l.pending
	l.pending = make(map[*segment]*time.Timer)
	l.delMu.Unlock()
	var errs []error
	for s, t := range pend {
		t.Stop()
		errs = append(errs, s.closeAndRemove())
	}
	return errors.Join(errs...)
}
