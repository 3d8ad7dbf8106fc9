package storage

// The manager's checkpoints (recovery points, log start offsets, high
// watermarks) and its clean close, which ends in the clean-shutdown
// marker.

import (
	"errors"
	"fmt"
	"path/filepath"
	"sync"

	"github.com/weir-project/weir/internal/storage/checkpoint"
)

// checkpointAfterTruncation rewrites the checkpoints once a truncation
// has lowered a log's start offset (as Kafka's LogManager does after
// truncateFullyAndStartAt): the checkpointed one may lie past the new log
// end, and a crash would then make recovery discard the whole log.
func (m *Manager) checkpointAfterTruncation() {
	if err := m.Checkpoint(); err != nil {
		m.logger.Error("checkpoint after truncation", "err", err)
	}
}

// Checkpoint writes recovery-point and log-start-offset checkpoints now.
func (m *Manager) Checkpoint() error {
	m.ckMu.Lock()
	defer m.ckMu.Unlock()
	rps := make([]map[checkpoint.TopicPartition]int64, len(m.cfg.Dirs))
	lsos := make([]map[checkpoint.TopicPartition]int64, len(m.cfg.Dirs))
	for i := range m.cfg.Dirs {
		rps[i] = make(map[checkpoint.TopicPartition]int64)
		lsos[i] = make(map[checkpoint.TopicPartition]int64)
	}
	m.mu.RLock()
	for tp, ml := range m.logs {
		key := checkpoint.TopicPartition{Topic: tp.Topic, Partition: tp.Partition}
		rps[ml.dir][key] = ml.log.RecoveryPoint()
		lsos[ml.dir][key] = ml.log.LogStartOffset()
	}
	m.mu.RUnlock()
	errs := []error{m.writeCleanerCheckpointsLocked(), m.writeHighWatermarksLocked()}
	for i, dir := range m.cfg.Dirs {
		if err := checkpoint.WriteOffsets(filepath.Join(dir, recoveryPointFile), rps[i]); err != nil {
			errs = append(errs, fmt.Errorf("write recovery points in %s: %w", dir, err))
		}
		if err := checkpoint.WriteOffsets(filepath.Join(dir, logStartFile), lsos[i]); err != nil {
			errs = append(errs, fmt.Errorf("write log start offsets in %s: %w", dir, err))
		}
	}
	return errors.Join(errs...)
}

// CheckpointHighWatermarks writes replication-offset-checkpoint in every
// log dir: each log's high watermark as the replica layer last set it.
func (m *Manager) CheckpointHighWatermarks() error {
	m.ckMu.Lock()
	defer m.ckMu.Unlock()
	return m.writeHighWatermarksLocked()
}

func (m *Manager) writeHighWatermarksLocked() error {
	hws := make([]map[checkpoint.TopicPartition]int64, len(m.cfg.Dirs))
	for i := range hws {
		hws[i] = make(map[checkpoint.TopicPartition]int64)
	}
	m.mu.RLock()
	for tp, ml := range m.logs {
		hws[ml.dir][checkpoint.TopicPartition{Topic: tp.Topic, Partition: tp.Partition}] = ml.log.HighWatermark()
	}
	m.mu.RUnlock()
	var errs []error
	for i, dir := range m.cfg.Dirs {
		if err := checkpoint.WriteOffsets(filepath.Join(dir, hwFile), hws[i]); err != nil {
			errs = append(errs, fmt.Errorf("write high watermarks in %s: %w", dir, err))
		}
	}
	return errors.Join(errs...)
}

// Close flushes, checkpoints, closes every log and writes the
// clean-shutdown marker in each dir whose logs all closed cleanly.
func (m *Manager) Close() error {
	m.mu.Lock()
	if m.closed {
		m.mu.Unlock()
		return nil
	}
	m.closed = true
	m.mu.Unlock()
	// A cleaning pass reads and swaps segments: let it finish or abandon
	// before the logs close under it.
	m.stopCleaner()
	m.mu.Lock()
	logs := make(map[TopicPartition]managedLog, len(m.logs))
	for tp, ml := range m.logs {
		logs[tp] = ml
	}
	m.mu.Unlock()

	var errs []error
	var errMu sync.Mutex
	failed := make([]bool, len(m.cfg.Dirs))
	fail := func(dir int, err error) {
		errMu.Lock()
		defer errMu.Unlock()
		errs = append(errs, err)
		failed[dir] = true
	}
	if m.syncFS != nil {
		m.closeLogsSyncfs(logs, fail)
	} else {
		m.closeLogsFsync(logs, fail)
	}
	if err := m.Checkpoint(); err != nil {
		errs = append(errs, err)
		for i := range failed { // without checkpoints no dir may claim a clean shutdown
			failed[i] = true
		}
	}
	for i, dir := range m.cfg.Dirs {
		if failed[i] {
			continue
		}
		if err := checkpoint.WriteFileAtomic(filepath.Join(dir, cleanShutdownFile), nil); err != nil {
			errs = append(errs, fmt.Errorf("write clean-shutdown marker in %s: %w", dir, err))
		}
	}
	return errors.Join(errs...)
}

// closeLogsFsync flushes and closes the logs, each fsyncing its own files:
// recoveryThreads at a time per dir, so the filesystem batches them
// instead of one log after another.
func (m *Manager) closeLogsFsync(logs map[TopicPartition]managedLog, fail func(int, error)) {
	m.eachLog(logs, func(tp TopicPartition, ml managedLog) {
		if err := ml.log.Flush(); err != nil && !errors.Is(err, ErrClosed) {
			fail(ml.dir, fmt.Errorf("flush %s: %w", tp.dirName(), err))
			return
		}
		if err := ml.log.Close(); err != nil {
			fail(ml.dir, fmt.Errorf("close %s: %w", tp.dirName(), err))
		}
	})
}

// closeLogsSyncfs closes the logs without an fsync each and then makes
// every dir durable with one syncfs: per-file fsyncs cost four or more
// journal commits per partition (producer snapshot and its directory,
// two indexes, more with unflushed data), which at 10,000 partitions is
// most of a shutdown. Only the logs of a dir whose syncfs succeeded have
// their recovery points moved to their ends (the checkpoint written
// next); the others keep theirs, and their dir gets no clean-shutdown
// marker, so the next start recovers them.
func (m *Manager) closeLogsSyncfs(logs map[TopicPartition]managedLog, fail func(int, error)) {
	var mu sync.Mutex
	closed := make([][]*Log, len(m.cfg.Dirs))
	m.eachLog(logs, func(tp TopicPartition, ml managedLog) {
		if err := ml.log.closeUnsynced(); err != nil {
			fail(ml.dir, fmt.Errorf("close %s: %w", tp.dirName(), err))
			return
		}
		mu.Lock()
		closed[ml.dir] = append(closed[ml.dir], ml.log)
		mu.Unlock()
	})
	for i, dir := range m.cfg.Dirs {
		if err := m.syncFS(dir); err != nil {
			fail(i, fmt.Errorf("close logs in %s: %w: %w", dir, ErrStorage, err))
			continue
		}
		for _, l := range closed[i] {
			l.markDurable()
		}
	}
}
