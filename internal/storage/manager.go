package storage

import (
	"context"
	"log/slog"
)

// TopicPartition names a partition; its directory is "<topic>-<partition>".
type TopicPartition struct {
	Topic     string
	Partition int32
}

// ManagerConfig is the broker-wide storage configuration.
type ManagerConfig struct {
	Dirs                     []string // log.dirs
	Defaults                 Config   // broker defaults for every log
	RetentionCheckIntervalMs int64    // log.retention.check.interval.ms (300000)
	FlushSchedulerIntervalMs int64    // how often FlushIntervalMs is checked (Kafka: log.flush.scheduler.interval.ms)
	CheckpointIntervalMs     int64    // log.flush.offset.checkpoint.interval.ms (60000)
}

// Manager owns every partition log in the log dirs (Kafka's LogManager):
// loads them at start with recovery, writes the per-dir checkpoints, runs
// retention, time-based flush and time-based roll, writes the
// clean-shutdown marker on Close.
type Manager struct{}

// OpenManager loads every "<topic>-<partition>" directory in the log dirs.
// A dir without the clean-shutdown marker is recovered from its
// recovery-point checkpoint. Each log opens with Defaults; the broker
// calls SetConfig for topics with overrides.
func OpenManager(cfg ManagerConfig, logger *slog.Logger) (*Manager, error) { panic("TODO") }

// Run runs background work (retention, flush, roll, checkpoints) until ctx ends.
func (m *Manager) Run(ctx context.Context) { panic("TODO") }

// Get returns the log, or nil.
func (m *Manager) Get(tp TopicPartition) *Log { panic("TODO") }

// GetOrCreate returns the log, creating it with cfg if absent.
func (m *Manager) GetOrCreate(tp TopicPartition, cfg Config) (*Log, error) { panic("TODO") }

// Partitions lists every loaded partition.
func (m *Manager) Partitions() []TopicPartition { panic("TODO") }

// Delete closes and removes a partition's log (renamed to
// "<topic>-<partition>.<uuid>-delete" first, removed after).
func (m *Manager) Delete(tp TopicPartition) error { panic("TODO") }

// Checkpoint writes recovery-point and log-start-offset checkpoints now.
func (m *Manager) Checkpoint() error { panic("TODO") }

// Close flushes, checkpoints, closes every log and writes the
// clean-shutdown marker in each dir.
func (m *Manager) Close() error { panic("TODO") }
