package storage

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"math"
	"path/filepath"
	"sync"
	"time"

	"github.com/weir-project/weir/internal/storage/checkpoint"
	"github.com/weir-project/weir/internal/storage/recordbatch"
)

// cleanerCheckpointFile holds, per log dir, each compacted partition's
// first dirty offset (Kafka's name and format).
const cleanerCheckpointFile = "cleaner-offset-checkpoint"

// Cleaner defaults (Kafka's), and the least dedupe buffer the manager
// uses, as Kafka insists on (a tiny map would make passes crawl).
const (
	defaultCleanerBackoffMs  = 15000
	defaultDedupeBufferBytes = 128 << 20
	minDedupeBytes           = 1 << 20
)

// cleanerRunner is the manager's background cleaner: one goroutine,
// started by Run, stopped (and waited for) by Close.
type cleanerRunner struct {
	mu     sync.Mutex
	cancel context.CancelFunc
	closed bool
	wg     sync.WaitGroup
	// failedUntil benches a log whose cleaning failed, so one bad log does
	// not take every turn (Kafka marks such logs uncleanable).
	failedUntil map[*Log]time.Time
	// written is each dir's cleaner checkpoint as last written (Manager.ckMu).
	written []map[checkpoint.TopicPartition]int64
}

// startCleaner runs the cleaner until ctx ends or the manager closes.
func (m *Manager) startCleaner(ctx context.Context) {
	c := &m.cleaner
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed || c.cancel != nil || m.cfg.DisableCleaner {
		return
	}
	ctx, c.cancel = context.WithCancel(ctx)
	c.wg.Add(1)
	go func() {
		defer c.wg.Done()
		m.cleanerLoop(ctx)
	}()
}

// stopCleaner stops the cleaner and waits until its pass (if any) ends;
// an interrupted pass leaves only *.cleaned files, removed at next load
// or by the next pass.
func (m *Manager) stopCleaner() {
	c := &m.cleaner
	c.mu.Lock()
	c.closed = true
	if c.cancel != nil {
		c.cancel()
	}
	c.mu.Unlock()
	c.wg.Wait()
}

// cleanerLoop cleans the dirtiest log, again at once while there is work,
// else after log.cleaner.backoff.ms.
func (m *Manager) cleanerLoop(ctx context.Context) {
	backoff := interval(m.cfg.CleanerBackoffMs, defaultCleanerBackoffMs)
	timer := time.NewTimer(0)
	defer timer.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-timer.C:
		}
		_, _, cleaned, err := m.CleanOnce(ctx, time.Now())
		if err != nil && !errors.Is(err, ErrClosed) && ctx.Err() == nil {
			m.logger.Error("log cleaner", "err", err)
		}
		next := backoff
		if cleaned && err == nil {
			next = 0
		}
		timer.Reset(next)
	}
}

// CleanOnce cleans the compacted log most in need, if any is: the one with
// the highest dirty ratio at or above its min.cleanable.dirty.ratio, or
// else one holding tombstones whose delete horizon has passed. cleaned
// reports whether a pass ran.
func (m *Manager) CleanOnce(ctx context.Context, now time.Time) (tp TopicPartition, stats CleanStats, cleaned bool, err error) {
	m.mu.RLock()
	type cand struct {
		tp  TopicPartition
		ml  managedLog
		cfg Config
	}
	var cands []cand
	for tp, ml := range m.logs {
		if cfg := ml.log.config(); cfg.Compact {
			cands = append(cands, cand{tp, ml, cfg})
		}
	}
	m.mu.RUnlock()

	var best *cand
	bestRatio := -1.0
	for i := range cands {
		c := &cands[i]
		if m.benched(c.ml.log, now) {
			continue
		}
		p := c.ml.log.plan(now, c.cfg)
		r := p.ratio()
		due := p.dirtyBytes > 0 && r >= c.cfg.MinCleanableDirtyRatio
		if !due && len(p.segs) > 0 {
			due = c.ml.log.deleteHorizon(p) <= now.UnixMilli()
		}
		if due && r > bestRatio {
			best, bestRatio = c, r
		}
	}
	if best == nil {
		return tp, stats, false, nil
	}
	budget := m.cfg.CleanerDedupeBufferSize
	if budget <= 0 {
		budget = defaultDedupeBufferBytes
	}
	budget = max(budget, minDedupeBytes)
	stats, err = best.ml.log.Clean(ctx, CleanOptions{Now: now, DedupeBufferBytes: budget})
	if err != nil {
		if !errors.Is(err, ErrClosed) && ctx.Err() == nil && !errors.Is(err, errCleanAborted) {
			m.bench(best.ml.log, now)
		}
		return best.tp, stats, true, err
	}
	if err := m.writeCleanerCheckpoints(); err != nil {
		return best.tp, stats, true, err
	}
	return best.tp, stats, true, nil
}

// benched reports whether the log's cleaning failed recently.
func (m *Manager) benched(l *Log, now time.Time) bool {
	c := &m.cleaner
	c.mu.Lock()
	defer c.mu.Unlock()
	until, ok := c.failedUntil[l]
	if ok && !now.Before(until) {
		delete(c.failedUntil, l)
		return false
	}
	return ok
}

// bench keeps a failing log out of the cleaner's choice for a while.
func (m *Manager) bench(l *Log, now time.Time) {
	c := &m.cleaner
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.failedUntil == nil {
		c.failedUntil = make(map[*Log]time.Time)
	}
	c.failedUntil[l] = now.Add(10 * interval(m.cfg.CleanerBackoffMs, defaultCleanerBackoffMs))
}

// deleteHorizon is the earliest delete horizon of the log's cleaned
// tombstones (math.MaxInt64 if none), found by reading batch headers the
// first time it is asked after the log opened.
func (l *Log) deleteHorizon(p cleanPlan) int64 {
	if h := l.clean.horizon.Load(); h != 0 {
		return h
	}
	h := int64(math.MaxInt64)
	for i, s := range p.segs {
		if p.uppers[i] > p.firstDirty {
			break // never cleaned: no horizon yet
		}
		err := s.scanHeaders(0, s.size.Load(), func(_ int64, bh recordbatch.Header) bool {
			if hz, set := bh.DeleteHorizon(); set && !bh.Control() {
				h = min(h, hz)
			}
			return true
		})
		if err != nil {
			l.logger.Warn("reading delete horizons", "segment", s.logPath(), "err", err)
			return math.MaxInt64 // ask again next time
		}
	}
	l.clean.horizon.CompareAndSwap(0, h)
	return h
}

// readCleanerCheckpoints reads each dir's cleaner-offset-checkpoint and
// remembers it as written.
func (m *Manager) readCleanerCheckpoints() []map[checkpoint.TopicPartition]int64 {
	out := make([]map[checkpoint.TopicPartition]int64, len(m.cfg.Dirs))
	for i, dir := range m.cfg.Dirs {
		out[i] = m.readCheckpoint(filepath.Join(dir, cleanerCheckpointFile))
	}
	m.cleaner.written = out
	return out
}

// writeCleanerCheckpoints brings each dir's cleaner-offset-checkpoint up
// to date (cleanings, truncations, deletions), writing only files whose
// content changed.
func (m *Manager) writeCleanerCheckpoints() error {
	m.ckMu.Lock()
	defer m.ckMu.Unlock()
	return m.writeCleanerCheckpointsLocked()
}

func (m *Manager) writeCleanerCheckpointsLocked() error {
	offs := make([]map[checkpoint.TopicPartition]int64, len(m.cfg.Dirs))
	for i := range offs {
		offs[i] = make(map[checkpoint.TopicPartition]int64)
	}
	m.mu.RLock()
	for tp, ml := range m.logs {
		if p := ml.log.CleanerCheckpoint(); p > 0 {
			offs[ml.dir][checkpoint.TopicPartition{Topic: tp.Topic, Partition: tp.Partition}] = p
		}
	}
	m.mu.RUnlock()
	if m.cleaner.written == nil {
		m.cleaner.written = make([]map[checkpoint.TopicPartition]int64, len(m.cfg.Dirs))
	}
	var errs []error
	for i, dir := range m.cfg.Dirs {
		if maps.Equal(offs[i], m.cleaner.written[i]) {
			continue
		}
		if err := checkpoint.WriteOffsets(filepath.Join(dir, cleanerCheckpointFile), offs[i]); err != nil {
			errs = append(errs, fmt.Errorf("write cleaner checkpoint in %s: %w", dir, err))
			continue
		}
		m.cleaner.written[i] = offs[i]
	}
	return errors.Join(errs...)
}
