package storage

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/weir-project/weir/internal/coalesce"
	"github.com/weir-project/weir/internal/storage/checkpoint"
)

// Files the manager keeps in each log dir (Kafka's names).
const (
	cleanShutdownFile = ".kafka_cleanshutdown"
	recoveryPointFile = "recovery-point-offset-checkpoint"
	logStartFile      = "log-start-offset-checkpoint"
	hwFile            = "replication-offset-checkpoint"
)

// TopicPartition names a partition; its directory is "<topic>-<partition>".
type TopicPartition struct {
	Topic     string
	Partition int32
}

// dirName is the partition directory's name.
func (tp TopicPartition) dirName() string {
	return tp.Topic + "-" + strconv.Itoa(int(tp.Partition))
}

// parseTopicPartition reads "<topic>-<partition>"; deleted ("...-delete")
// and other directories are rejected.
func parseTopicPartition(name string) (TopicPartition, bool) {
	i := strings.LastIndexByte(name, '-')
	if i <= 0 || strings.HasSuffix(name, "-delete") {
		return TopicPartition{}, false
	}
	p, err := strconv.ParseInt(name[i+1:], 10, 32)
	if err != nil || p < 0 || strconv.FormatInt(p, 10) != name[i+1:] {
		return TopicPartition{}, false
	}
	return TopicPartition{Topic: name[:i], Partition: int32(p)}, true
}

// ManagerConfig is the broker-wide storage configuration.
type ManagerConfig struct {
	Dirs                     []string // log.dirs
	Defaults                 Config   // broker defaults for every log
	RetentionCheckIntervalMs int64    // log.retention.check.interval.ms (300000)
	FlushSchedulerIntervalMs int64    // how often FlushIntervalMs is checked (Kafka: log.flush.scheduler.interval.ms)
	CheckpointIntervalMs     int64    // log.flush.offset.checkpoint.interval.ms (60000)
	// HWCheckpointIntervalMs is replica.high.watermark.checkpoint.interval.ms
	// (5000): how often replication-offset-checkpoint is written.
	HWCheckpointIntervalMs int64

	// RecoveryThreadsPerDir is num.recovery.threads.per.data.dir (Kafka's
	// default, 2): how many logs of one log dir are loaded (recovered
	// after a crash) at once at start, and flushed at once at Close. 0 =
	// the default. See OpenManager.
	RecoveryThreadsPerDir int

	// MaxOpenFiles bounds the segment files open at once across every
	// log (weir.log.max.open.files); 0 = DefaultMaxOpenFiles, derived from
	// RLIMIT_NOFILE. See doc.go, Descriptors.
	MaxOpenFiles int

	// Log cleaner (cleaner_manager.go), for logs whose Config.Compact is set.
	DisableCleaner          bool  // log.cleaner.enable=false (the zero value keeps Kafka's default: on)
	CleanerBackoffMs        int64 // log.cleaner.backoff.ms (15000): idle wait between looks
	CleanerDedupeBufferSize int64 // log.cleaner.dedupe.buffer.size (134217728): offset map budget

	// FlushObserver, if set, times every segment fsync of every log.
	FlushObserver FlushObserver
	// BeforeRollFlush, if set, is called (log dir, offset) before each
	// background flush of rolled segments and may block it; an error
	// stands for a failed fsync. For tests only: the broker sets it from
	// WEIR_TEST_ROLL_FLUSH_GATE (cmd/weir).
	BeforeRollFlush func(dir string, target int64) error

	// BootID is this machine boot's id (boot.go); "" reads Linux's
	// boot_id. Tests set another to stand for a reboot.
	BootID string
}

// managedLog is a log and the index of the log dir holding it.
type managedLog struct {
	log *Log
	dir int
}

// Manager owns every partition log in the log dirs (Kafka's LogManager):
// loads them at start with recovery, writes the per-dir checkpoints, runs
// retention, time-based flush and time-based roll, writes the
// clean-shutdown marker on Close.
type Manager struct {
	cfg    ManagerConfig
	logger *slog.Logger

	mu   sync.RWMutex
	logs map[TopicPartition]managedLog
	// opening holds the logs GetOrCreate is creating, outside mu: a
	// second caller for the same partition (or Delete) waits on the
	// channel, while other partitions are created at the same time.
	opening map[TopicPartition]chan struct{}
	perDir  []int // logs (loaded, or being created) in each dir
	closed  bool
	// moving holds the partitions whose log MoveLog is moving: neither
	// loaded nor to be created meanwhile.
	moving map[TopicPartition]bool

	ckMu sync.Mutex // one checkpoint writer at a time
	// startSync writes the checkpoints for logs whose start offset was
	// raised inside a segment (Log.DeleteRecordsBefore), one write for
	// the callers that ask together.
	startSync *coalesce.Runner[struct{}]

	files *fileCache // segment descriptors of every log
	// flushSlots bounds the roll flushes of all logs running at once
	// (rollflush.go).
	flushSlots chan struct{}

	loaded LoadStats // what OpenManager loaded; never changed after

	// syncFS makes a log dir's whole filesystem durable at shutdown
	// (syncfs, shutdownSyncer); nil where the platform has no such call
	// that reports errors, and a test replaces it to inject a failure.
	syncFS func(dir string) error

	cleaner cleanerRunner
}

// OpenManager loads every "<topic>-<partition>" directory in the log dirs.
// A dir without the clean-shutdown marker is recovered from its
// recovery-point checkpoint. Each log opens with Defaults; the broker
// calls SetConfig for topics with overrides. The markers are removed once
// everything is loaded, so a crash from then on is detected.
func OpenManager(cfg ManagerConfig, logger *slog.Logger) (*Manager, error) {
	if len(cfg.Dirs) == 0 {
		return nil, errors.New("open log manager: no log dirs")
	}
	if logger == nil {
		logger = slog.Default()
	}
	limit, limitErr := fileLimit()
	files := cfg.MaxOpenFiles
	if files <= 0 {
		files = DefaultMaxOpenFiles()
	}
	if limitErr == nil && uint64(files) >= limit {
		logger.Warn("weir.log.max.open.files is not below the process's open file limit; the broker may run out of descriptors",
			"max_open_files", files, "rlimit_nofile", limit)
	}
	m := &Manager{cfg: cfg, logger: logger, logs: make(map[TopicPartition]managedLog),
		opening: make(map[TopicPartition]chan struct{}), perDir: make([]int, len(cfg.Dirs)), files: newFileCache(files),
		flushSlots: make(chan struct{}, rollFlushSlots), syncFS: shutdownSyncer()}
	m.startSync = coalesce.NewErr(m.Checkpoint)
	if err := m.loadAll(); err != nil {
		return nil, err
	}
	logger.Info("log manager loaded", "partitions", len(m.logs), "dirs", len(cfg.Dirs),
		"max_open_segment_files", files, "rlimit_nofile", limit)
	return m, nil
}

// readCheckpoint reads an offset checkpoint; an unreadable one is treated
// as empty (recovery then starts from offset 0, which is safe).
func (m *Manager) readCheckpoint(path string) map[checkpoint.TopicPartition]int64 {
	offs, err := checkpoint.ReadOffsets(path)
	if err != nil {
		m.logger.Warn("ignoring unreadable checkpoint", "file", path, "err", err)
		return nil
	}
	return offs
}

// Get returns the log, or nil.
func (m *Manager) Get(tp TopicPartition) *Log {
	m.mu.RLock()
	defer m.mu.RUnlock()
	return m.logs[tp].log
}

// GetOrCreate returns the log, creating it with cfg if absent, in the log
// dir holding the fewest partitions. Creations of different partitions
// run at once (the files of a new log cost a few fsyncs, which the
// filesystem journal batches across concurrent callers); a second caller
// for a partition being created waits for the first.
func (m *Manager) GetOrCreate(tp TopicPartition, cfg Config) (*Log, error) {
	if _, ok := parseTopicPartition(tp.dirName()); !ok || strings.ContainsAny(tp.Topic, `/\`) || tp.Topic == "." || tp.Topic == ".." {
		return nil, fmt.Errorf("invalid partition name %q", tp.dirName())
	}
	m.mu.Lock()
	for {
		if m.closed {
			m.mu.Unlock()
			return nil, ErrClosed
		}
		if ml, ok := m.logs[tp]; ok {
			m.mu.Unlock()
			return ml.log, nil
		}
		if m.moving[tp] {
			m.mu.Unlock()
			return nil, fmt.Errorf("open log %s: %w", tp.dirName(), ErrMoving)
		}
		wait, busy := m.opening[tp]
		if !busy {
			break
		}
		m.mu.Unlock()
		<-wait
		m.mu.Lock()
	}
	dir := 0
	for i, c := range m.perDir {
		if c < m.perDir[dir] {
			dir = i
		}
	}
	m.perDir[dir]++
	done := make(chan struct{})
	m.opening[tp] = done
	m.mu.Unlock()

	l, err := openLogWithFiles(filepath.Join(m.cfg.Dirs[dir], tp.dirName()), cfg, 0, 0, false, m.logger, m.files)
	if err == nil {
		m.adopt(l)
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	delete(m.opening, tp)
	close(done)
	switch {
	case err != nil:
		m.perDir[dir]--
		return nil, fmt.Errorf("create log %s: %w", tp.dirName(), err)
	case m.closed:
		// Close has already taken its list of logs: this one is not on it.
		m.perDir[dir]--
		l.Close()
		return nil, ErrClosed
	}
	m.logs[tp] = managedLog{log: l, dir: dir}
	return l, nil
}

// OpenSegmentFiles is how many segment files have a descriptor now (at
// most MaxOpenFiles, unless that many are in use at once).
func (m *Manager) OpenSegmentFiles() int { return m.files.Open() }

// Partitions lists every loaded partition, sorted.
func (m *Manager) Partitions() []TopicPartition {
	m.mu.RLock()
	out := make([]TopicPartition, 0, len(m.logs))
	for tp := range m.logs {
		out = append(out, tp)
	}
	m.mu.RUnlock()
	slices.SortFunc(out, func(a, b TopicPartition) int {
		if c := strings.Compare(a.Topic, b.Topic); c != 0 {
			return c
		}
		return int(a.Partition) - int(b.Partition)
	})
	return out
}

// Delete closes and removes a partition's log (renamed to
// "<topic>-<partition>.<random hex>-delete" first, removed after).
func (m *Manager) Delete(tp TopicPartition) error {
	m.mu.Lock()
	for {
		wait, busy := m.opening[tp]
		if !busy {
			break
		}
		m.mu.Unlock()
		<-wait
		m.mu.Lock()
	}
	ml, ok := m.logs[tp]
	if ok {
		delete(m.logs, tp)
		m.perDir[ml.dir]--
	}
	m.mu.Unlock()
	if !ok {
		return nil
	}
	if err := ml.log.Delete(); err != nil {
		return fmt.Errorf("delete partition %s: %w", tp.dirName(), err)
	}
	// Drop the partition from the checkpoints now (as Kafka does): if it
	// is created again and the broker crashes before the next periodic
	// checkpoint, the old log start offset would otherwise be applied to
	// the new log and, being past its end, discard it.
	if err := m.Checkpoint(); err != nil {
		return fmt.Errorf("checkpoint after deleting partition %s: %w", tp.dirName(), err)
	}
	return nil
}

// adopt ties a log just opened, not yet shared, to the manager: its
// checkpoints after a truncation, the bound on roll flushes running at
// once, and the test hook.
func (m *Manager) adopt(l *Log) {
	l.onStartLowered = m.checkpointAfterTruncation
	l.syncStart = func() error { _, err := m.startSync.Do(context.Background()); return err }
	l.flushObserver = m.cfg.FlushObserver
	l.flushSlots = m.flushSlots
	l.beforeRollFlush = m.cfg.BeforeRollFlush
}

// Run runs background work (retention, flush, roll, checkpoints, and the
// log cleaner unless disabled) until ctx ends.
func (m *Manager) Run(ctx context.Context) {
	m.startCleaner(ctx)
	retention := time.NewTicker(interval(m.cfg.RetentionCheckIntervalMs, 300000))
	defer retention.Stop()
	// Checking more often than the scheduler interval is harmless (each
	// log compares against its own flush.ms and segment.ms), and idle
	// logs still need their time-based roll.
	flush := time.NewTicker(min(interval(m.cfg.FlushSchedulerIntervalMs, 1000), time.Second))
	defer flush.Stop()
	ckpt := time.NewTicker(interval(m.cfg.CheckpointIntervalMs, 60000))
	defer ckpt.Stop()
	hwCkpt := time.NewTicker(interval(m.cfg.HWCheckpointIntervalMs, 5000))
	defer hwCkpt.Stop()
	idle := time.NewTicker(idleFileSweep)
	defer idle.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case now := <-retention.C:
			for _, l := range m.snapshot() {
				if _, err := l.EnforceRetention(now); err != nil && !errors.Is(err, ErrClosed) {
					m.logger.Error("retention", "log", l.Dir(), "err", err)
				}
			}
		case now := <-flush.C:
			for _, l := range m.snapshot() {
				if err := l.flushIfDue(now); err != nil {
					m.logger.Error("scheduled flush", "log", l.Dir(), "err", err)
				}
				if err := l.MaybeRoll(now); err != nil && !errors.Is(err, ErrClosed) {
					m.logger.Error("scheduled roll", "log", l.Dir(), "err", err)
				}
			}
		case <-ckpt.C:
			if err := m.Checkpoint(); err != nil {
				m.logger.Error("checkpoint", "err", err)
			}
		case <-hwCkpt.C:
			if err := m.CheckpointHighWatermarks(); err != nil {
				m.logger.Error("high watermark checkpoint", "err", err)
			}
		case <-idle.C:
			if n := m.files.closeIdle(); n > 0 {
				m.logger.Debug("closed idle segment files", "closed", n, "open", m.files.Open())
			}
		}
	}
}

// idleFileSweep is how often segment files unused since the previous
// sweep are closed: a descriptor idle for one to two minutes goes.
const idleFileSweep = time.Minute

// snapshot returns the current logs (work is done outside the map lock).
func (m *Manager) snapshot() []*Log {
	m.mu.RLock()
	defer m.mu.RUnlock()
	out := make([]*Log, 0, len(m.logs))
	for _, ml := range m.logs {
		out = append(out, ml.log)
	}
	return out
}

// interval converts a millisecond setting to a ticker period, using def
// for unset values and capping "never" values (Kafka uses Long.MaxValue)
// that would overflow a Duration.
func interval(ms, def int64) time.Duration {
	if ms <= 0 {
		ms = def
	}
	ms = min(ms, int64(time.Hour/time.Millisecond))
	return time.Duration(ms) * time.Millisecond
}

// DirOf returns the log dir holding tp's log, and whether it is loaded.
func (m *Manager) DirOf(tp TopicPartition) (string, bool) {
	m.mu.RLock()
	defer m.mu.RUnlock()
	ml, ok := m.logs[tp]
	if !ok {
		return "", false
	}
	return m.cfg.Dirs[ml.dir], true
}

// Dirs returns the log dirs.
func (m *Manager) Dirs() []string { return slices.Clone(m.cfg.Dirs) }
