package storage

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"time"

	"github.com/weir-project/weir/internal/storage/leaderepoch"
)

// Errors the broker maps to Kafka error codes. Detailed errors wrap these
// (and recordbatch.ErrCorrupt / recordbatch.ErrInvalidRecord).
var (
	ErrOffsetOutOfRange   = errors.New("offset out of range")    // OFFSET_OUT_OF_RANGE
	ErrMessageTooLarge    = errors.New("record batch too large") // MESSAGE_TOO_LARGE
	ErrRecordListTooLarge = errors.New("record list too large")  // RECORD_LIST_TOO_LARGE (produce set > segment size)
	ErrClosed             = errors.New("log closed")
	ErrInvalidTimestamp   = errors.New("invalid timestamp") // INVALID_TIMESTAMP
	ErrStorage            = errors.New("storage error")     // KAFKA_STORAGE_ERROR (I/O failed)
)

// Config is one partition log's settings (topic config over broker defaults).
type Config struct {
	SegmentBytes          int64 // log.segment.bytes / segment.bytes (default 1 GiB)
	SegmentMs             int64 // log.roll.ms / segment.ms (default 7 days)
	SegmentIndexBytes     int   // log.index.size.max.bytes / segment.index.bytes (10 MiB)
	IndexIntervalBytes    int   // log.index.interval.bytes / index.interval.bytes (4096)
	MaxMessageBytes       int   // message.max.bytes / max.message.bytes (1048588)
	RetentionMs           int64 // -1 = unlimited (default 168h)
	RetentionBytes        int64 // -1 = unlimited
	FlushIntervalMessages int64 // flush after this many messages; <=0 or MaxInt64 = never
	FlushIntervalMs       int64 // flush when the oldest unflushed append is this old; <=0 or MaxInt64 = never
	LogAppendTime         bool  // message.timestamp.type=LogAppendTime
	FileDeleteDelayMs     int64 // file.delete.delay.ms (60000): *.deleted files removed after this

	// Compaction (cleaner.go). Compact: cleanup.policy contains "compact".
	Compact                bool
	DeleteRetentionMs      int64   // delete.retention.ms (86400000): tombstones kept this long after cleaning
	MinCompactionLagMs     int64   // min.compaction.lag.ms (0): younger segments are not compacted
	MinCleanableDirtyRatio float64 // min.cleanable.dirty.ratio (0.5)
}

// AppendInfo describes a successful append.
type AppendInfo struct {
	FirstOffset    int64
	LastOffset     int64
	NumRecords     int64
	MaxTimestamp   int64
	LogAppendTime  int64 // -1 unless LogAppendTime is in force
	LogStartOffset int64
}

// ReadResult is whole batches from one segment, as a file region so the
// fetch path can send it without copying. Len may be 0 (nothing to read).
// It holds no descriptor: Bytes and WriteTo take the segment's file from
// the descriptor cache for the time of the copy (read.go), so a result
// needs no release and one never used costs nothing; Pin holds it until
// released, for a region sent later (region.go).
type ReadResult struct {
	Pos int64
	Len int64
	// FirstOffset is the base offset of the first batch returned.
	FirstOffset int64

	file *segFile // nil when Len == 0
}

// ProducerStateHook lets the idempotence layer keep per-producer state in
// step with the log: it sees every appended batch (leader and follower
// path, and replay during recovery), is truncated with the log, and is
// snapshotted at each segment roll and at clean close.
type ProducerStateHook interface {
	// OnBatch is called for every batch appended or replayed, in order.
	OnBatch(b BatchInfo)
	// TruncateTo is called after the log is truncated to offset; the hook
	// reloads from the latest snapshot <= offset (via the log's files) or
	// resets, then the log replays batches from there.
	TruncateTo(offset int64)
	// Snapshot is called at a roll and at clean close; it writes the state
	// as of nextOffset into the file <dir>/<20-digit nextOffset>.snapshot,
	// fsynced if sync. At a roll sync is false: the log's lock is held,
	// and the log fsyncs the file itself, with the rolled segment and
	// outside the lock, before its recovery point passes nextOffset.
	Snapshot(dir string, nextOffset int64, sync bool) error
}

// BatchInfo is what the producer-state hook learns of a batch.
type BatchInfo struct {
	FirstOffset   int64
	LastOffset    int64
	ProducerID    int64
	ProducerEpoch int16
	BaseSequence  int32
	LastSequence  int32
	MaxTimestamp  int64
	Transactional bool
	Control       bool
}

// ErrUnexpectedOffset: a follower append does not start at the log end
// offset, or its batches are not contiguous.
var ErrUnexpectedOffset = errors.New("unexpected offset")

// Log is one partition's log: an ordered list of segments. One appender,
// many concurrent readers; readers never hold a lock across disk I/O.
//
// Writers (append, roll, flush, truncate, retention, close) serialise on
// mu. Readers see an immutable, sorted segment slice swapped atomically
// and the atomic offsets; a batch is published (segment size, then log
// end offset) only after its bytes are written.
type Log struct {
	dir    string
	logger *slog.Logger
	cfg    atomic.Pointer[Config]
	files  *fileCache // open .log descriptors, shared by the Manager's logs

	mu     sync.Mutex
	closed bool
	// torn, once set, is why the active segment may hold bytes past its
	// published size (a failed write whose truncation failed too). Writes
	// are refused and Close reports it, so the dir is not marked cleanly
	// shut down and the next start's recovery cuts the tail.
	torn error
	// syncFailed, once set, is why a rolled segment may not be on disk
	// (its background fsync failed): writes are refused, the recovery
	// point stays below it and Close reports it (rollflush.go).
	syncFailed error
	// outOfRoom is the last write's lack of room (ENOSPC, EDQUOT), until
	// a write succeeds or Writable's probe finds room (room.go).
	outOfRoom error
	probedAt  time.Time // the last probe for room (room.go)
	// refusing is set while any of torn, syncFailed and outOfRoom is:
	// Writable's fast path.
	refusing       atomic.Bool
	hook           ProducerStateHook
	unflushedMsgs  int64
	firstUnflushed time.Time // wall clock of the oldest unflushed append

	epochs   *leaderepoch.Cache
	segs     atomic.Pointer[[]*segment] // sorted by base offset; never mutated in place
	logStart atomic.Int64
	// durableStart is the highest log start a crash would keep: from the
	// files (a segment's base) or a checkpoint written after it was
	// raised. A DeleteRecords inside a segment raises logStart first and
	// this once the checkpoint is written (DeleteRecordsBefore).
	durableStart  atomic.Int64
	logEnd        atomic.Int64
	recoveryPoint atomic.Int64
	// highWatermark is the replica's high watermark as the replica layer
	// last set it: the manager writes it to replication-offset-checkpoint
	// and loads it back at start. Storage never interprets it.
	highWatermark atomic.Int64

	delMu   sync.Mutex
	pending map[*segment]*time.Timer // segments renamed *.deleted, awaiting removal

	clean cleanerState // log compaction bookkeeping (cleaner.go)

	// fsyncDir is syncDir; a test replaces it (before the log is shared)
	// to see which renames were made durable.
	fsyncDir func(dir string) error

	// flushObserver, when set (by the Manager, before the log is shared),
	// times each segment fsync of a flush or roll.
	flushObserver FlushObserver
	// recoveredSegments counts the unflushed segments load recovered.
	recoveredSegments int
	// The flush of rolled segments outside mu (rollflush.go); the flags
	// and flushTarget are under mu.
	flushTarget  int64          // the latest roll asked for everything below this to be durable
	dirDirty     bool           // a roll created directory entries not yet fsynced
	flushing     bool           // the flusher goroutine is running
	flushStopped bool           // Close or Delete stopped it: none starts again
	flushDone    sync.WaitGroup // the running flusher
	// flushSlots, when set (by the Manager, before the log is shared),
	// bounds the flushes of its logs running at once.
	flushSlots chan struct{}
	// beforeRollFlush, when set (before the log is shared: tests, the
	// broker's test gate), is called by the flusher before each flush;
	// an error stands for a failed fsync.
	beforeRollFlush func(dir string, target int64) error

	// onStartLowered, when set (by the Manager, before the log is shared),
	// is called after a truncation moved the log start offset down, so the
	// checkpointed log start is rewritten before a crash can apply it.
	onStartLowered func()
	// syncStart, when set (by the Manager, before the log is shared),
	// makes a log start raised inside a segment durable: it writes the
	// log-start checkpoint (see DeleteRecordsBefore).
	syncStart func() error
}

// FlushObserver is told how long each fsync of a segment took, as Kafka
// times LogFlushRateAndTimeMs (the broker's metrics). It may be called
// with the log's lock held, so it must be quick.
type FlushObserver interface {
	LogFlushed(d time.Duration)
}

// leaderEpochFile is the per-partition leader epoch checkpoint.
const leaderEpochFile = "leader-epoch-checkpoint"

// OpenLog opens (creating if needed) the partition directory dir and
// recovers it. recoveryPoint and logStartOffset come from the log dir's
// checkpoints (0 if absent); cleanShutdown says whether the log dir's
// clean-shutdown marker was present. The log gets a descriptor cache of
// its own, of DefaultMaxOpenFiles; a Manager's logs share one.
func OpenLog(dir string, cfg Config, recoveryPoint, logStartOffset int64, cleanShutdown bool, logger *slog.Logger) (*Log, error) {
	return openLogWithFiles(dir, cfg, recoveryPoint, logStartOffset, cleanShutdown, logger, newFileCache(DefaultMaxOpenFiles()))
}

// openLogWithFiles is OpenLog with the descriptor cache to use.
func openLogWithFiles(dir string, cfg Config, recoveryPoint, logStartOffset int64, cleanShutdown bool, logger *slog.Logger, files *fileCache) (*Log, error) {
	if logger == nil {
		logger = slog.Default()
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("create partition dir %s: %w", dir, err)
	}
	cfg = cfg.normalized()
	l := &Log{
		dir:      dir,
		files:    files,
		logger:   logger.With("log", filepath.Base(dir)),
		pending:  make(map[*segment]*time.Timer),
		fsyncDir: syncDir,
	}
	l.cfg.Store(&cfg)
	epochs, err := leaderepoch.Open(filepath.Join(dir, leaderEpochFile))
	if err != nil {
		return nil, fmt.Errorf("open leader epoch cache of %s: %w", dir, err)
	}
	l.epochs = epochs
	if err := l.load(recoveryPoint, logStartOffset, cleanShutdown); err != nil {
		return nil, err
	}
	leo := l.logEnd.Load()
	if err := l.epochs.TruncateFromEnd(leo); err != nil {
		l.closeSegments()
		return nil, fmt.Errorf("truncate leader epochs of %s to %d: %w", dir, leo, err)
	}
	if err := l.epochs.TruncateFromStart(l.logStart.Load()); err != nil {
		l.closeSegments()
		return nil, fmt.Errorf("truncate leader epochs of %s from %d: %w", dir, l.logStart.Load(), err)
	}
	return l, nil
}

// config returns the current settings (lock-free).
func (l *Log) config() Config { return *l.cfg.Load() }

// segments returns the current immutable segment slice.
func (l *Log) segments() []*segment { return *l.segs.Load() }

// setSegments publishes a new segment slice.
func (l *Log) setSegments(s []*segment) { l.segs.Store(&s) }

// active returns the last segment, the one appends go to.
func (l *Log) active() *segment {
	s := l.segments()
	return s[len(s)-1]
}

// floorSegment returns the index of the last segment with base <= offset,
// or -1.
func floorSegment(segs []*segment, offset int64) int {
	lo, hi := 0, len(segs)
	for lo < hi {
		m := int(uint(lo+hi) >> 1)
		if segs[m].base <= offset {
			lo = m + 1
		} else {
			hi = m
		}
	}
	return lo - 1
}

func (l *Log) LogStartOffset() int64 { return l.logStart.Load() }
func (l *Log) LogEndOffset() int64   { return l.logEnd.Load() }
func (l *Log) RecoveryPoint() int64  { return l.recoveryPoint.Load() }

// DurableLogStartOffset is the log start a crash now would leave: below
// LogStartOffset while a raise inside a segment waits for its checkpoint
// (or its write failed). What a follower tells its leader, so that the
// leader's low watermark (DeleteRecords) counts only durable starts.
func (l *Log) DurableLogStartOffset() int64 {
	return min(l.logStart.Load(), l.durableStart.Load())
}

// startDurable notes that the log start v is on disk.
func (l *Log) startDurable(v int64) {
	for {
		cur := l.durableStart.Load()
		if v <= cur || l.durableStart.CompareAndSwap(cur, v) {
			return
		}
	}
}

// HighWatermark is the high watermark last set (or loaded from the
// replication-offset-checkpoint at start; 0 if none).
func (l *Log) HighWatermark() int64 { return l.highWatermark.Load() }

// SetHighWatermark records the replica's high watermark for the next
// replication-offset-checkpoint.
func (l *Log) SetHighWatermark(hw int64) { l.highWatermark.Store(hw) }
func (l *Log) Dir() string               { return l.dir }
func (l *Log) NumSegments() int          { return len(l.segments()) }

// Size is the total bytes of the log's segments.
func (l *Log) Size() int64 {
	var n int64
	for _, s := range l.segments() {
		n += s.size.Load()
	}
	return n
}

// SetConfig applies changed topic configs (retention, segment size, ...).
// Index capacity changes apply to segments created afterwards.
func (l *Log) SetConfig(cfg Config) {
	cfg = cfg.normalized()
	l.cfg.Store(&cfg)
}

// LeaderEpochs is the partition's leader epoch cache.
func (l *Log) LeaderEpochs() *leaderepoch.Cache { return l.epochs }

// Flush fsyncs everything up to the log end and advances the recovery point.
func (l *Log) Flush() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed {
		return ErrClosed
	}
	return l.flushLocked()
}

// flushLocked fsyncs every segment holding offsets in [recovery point,
// log end), the directory if a roll has created files in it since it was
// last fsynced, and the leader epoch cache, and moves the recovery point
// to the log end. It does at once, under the lock, whatever a pending
// roll flush has not done yet (that flush then finds nothing left). After
// a failed background fsync it refuses: a second fsync may succeed
// without the lost pages.
func (l *Log) flushLocked() error {
	if l.syncFailed != nil {
		return fmt.Errorf("flush: %w", l.syncFailed)
	}
	leo := l.logEnd.Load()
	if leo > l.recoveryPoint.Load() {
		if err := l.syncFromRecoveryPointLocked(); err != nil {
			return err
		}
		if l.dirDirty {
			if err := l.fsyncDir(l.dir); err != nil {
				return fmt.Errorf("flush %s: %w: %w", l.dir, ErrStorage, err)
			}
			l.dirDirty = false
		}
		if err := l.epochs.FlushBelow(leo); err != nil {
			return fmt.Errorf("flush %s: %w: %w", l.dir, ErrStorage, err)
		}
		l.recoveryPoint.Store(leo)
	}
	l.unflushedMsgs, l.firstUnflushed = 0, time.Time{}
	return nil
}

// syncFromRecoveryPointLocked fsyncs the segments from the one holding
// the recovery point to the active one. Inactive ones get their indexes
// written and fsynced too, because once the recovery point passes them
// recovery trusts their indexes; the active segment's are not needed:
// after a crash it is rescanned.
func (l *Log) syncFromRecoveryPointLocked() error {
	segs := l.segments()
	last := len(segs) - 1
	for i := max(floorSegment(segs, l.recoveryPoint.Load()), 0); i <= last; i++ {
		start := time.Now()
		var err error
		if i < last {
			err = segs[i].flush()
		} else {
			err = segs[i].file.sync()
		}
		if err != nil {
			return fmt.Errorf("flush %s: %w: %w", l.dir, ErrStorage, err)
		}
		if l.flushObserver != nil {
			l.flushObserver.LogFlushed(time.Since(start))
		}
	}
	return nil
}

// Close flushes indexes and closes files. Does not fsync the log unless
// asked by Flush; a roll flush in progress is finished first, and none is
// started again. The leader epoch cache is written if it lags: a clean
// shutdown's segments are all trusted at the next start, none rescanned.
func (l *Log) Close() error { return l.close(true) }

// closeUnsynced closes like Close but fsyncs nothing: every file it
// writes is only in the page cache until the caller syncs the filesystem
// (Manager.Close's syncfs) and then calls markDurable.
func (l *Log) closeUnsynced() error { return l.close(false) }

// markDurable moves a closed log's recovery point to its end, once the
// caller has made all of it durable (syncfs of its filesystem succeeded).
func (l *Log) markDurable() {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed && l.syncFailed == nil && l.torn == nil {
		l.recoveryPoint.Store(l.logEnd.Load())
	}
}

func (l *Log) close(sync bool) error {
	l.stopRollFlusher()
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed {
		return nil
	}
	var errs []error
	// Entries at the log end (a leader's epoch without a record yet) are
	// not written: after a restart the leader begins its epoch again.
	writeEpochs := l.epochs.FlushBelow
	if !sync {
		writeEpochs = l.epochs.ReplaceBelow
	}
	if err := writeEpochs(l.logEnd.Load()); err != nil {
		errs = append(errs, fmt.Errorf("close %s: %w: %w", l.dir, ErrStorage, err))
	}
	if l.hook != nil {
		if err := l.hook.Snapshot(l.dir, l.logEnd.Load(), sync); err != nil {
			errs = append(errs, fmt.Errorf("producer state snapshot of %s: %w", l.dir, err))
		}
	}
	act := l.active()
	act.sealIndexes()
	if err := act.file.trimReserved(act.size.Load()); err != nil {
		errs = append(errs, fmt.Errorf("give back the space reserved past %s: %w", act.logPath(), err))
	}
	if sync {
		if err := act.offIdx.Flush(); err != nil {
			errs = append(errs, fmt.Errorf("flush offset index of %s: %w", act.logPath(), err))
		}
		if err := act.timeIdx.Flush(); err != nil {
			errs = append(errs, fmt.Errorf("flush time index of %s: %w", act.logPath(), err))
		}
	}
	errs = append(errs, l.closeSegments())
	if l.torn != nil {
		errs = append(errs, fmt.Errorf("close %s: %w: %w", l.dir, ErrStorage, l.torn))
	}
	if l.syncFailed != nil {
		errs = append(errs, fmt.Errorf("close: %w", l.syncFailed))
	}
	l.closed = true
	return errors.Join(errs...)
}

// closeSegments closes every segment and finishes pending deletions now.
func (l *Log) closeSegments() error {
	var errs []error
	if p := l.segs.Load(); p != nil {
		for _, s := range *p {
			errs = append(errs, s.close())
		}
	}
	errs = append(errs, l.finishPendingDeletes())
	return errors.Join(errs...)
}

// Delete closes the log and removes its directory. The directory is first
// renamed "<name>.<random hex>-delete" so a crash midway leaves no
// half-deleted partition that would be loaded again.
func (l *Log) Delete() error {
	l.stopRollFlusher()
	l.mu.Lock()
	defer l.mu.Unlock()
	if !l.closed {
		if err := l.closeSegments(); err != nil {
			l.logger.Warn("closing log before delete", "err", err)
		}
		l.closed = true
	}
	var rnd [8]byte
	if _, err := rand.Read(rnd[:]); err != nil {
		return fmt.Errorf("random name for deleting %s: %w", l.dir, err)
	}
	tomb := fmt.Sprintf("%s.%s-delete", l.dir, hex.EncodeToString(rnd[:]))
	if err := os.Rename(l.dir, tomb); err != nil {
		return fmt.Errorf("rename %s for deletion: %w", l.dir, err)
	}
	l.epochs.SetPath(filepath.Join(tomb, leaderEpochFile))
	if err := syncDir(filepath.Dir(l.dir)); err != nil {
		l.logger.Warn("fsync parent after renaming deleted log", "err", err)
	}
	if err := os.RemoveAll(tomb); err != nil {
		return fmt.Errorf("remove deleted log %s: %w", tomb, err)
	}
	return nil
}

// syncDir fsyncs a directory so renames and creations in it are durable.
func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return fmt.Errorf("open dir %s: %w", dir, err)
	}
	defer d.Close()
	if err := d.Sync(); err != nil {
		return fmt.Errorf("fsync dir %s: %w", dir, err)
	}
	return nil
}
