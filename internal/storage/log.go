package storage

import (
	"errors"
	"io"
	"log/slog"
	"os"
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
}

// DefaultConfig returns Kafka's defaults.
func DefaultConfig() Config { panic("TODO") }

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
type ReadResult struct {
	File *os.File // nil when Len == 0
	Pos  int64
	Len  int64
	// FirstOffset is the base offset of the first batch returned.
	FirstOffset int64
}

// Bytes reads the region into memory.
func (r ReadResult) Bytes() ([]byte, error) { panic("TODO") }

// WriteTo copies the region to w (sendfile when w is a *net.TCPConn).
func (r ReadResult) WriteTo(w io.Writer) (int64, error) { panic("TODO") }

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
	// as of nextOffset into the file <dir>/<20-digit nextOffset>.snapshot.
	Snapshot(dir string, nextOffset int64) error
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

// Log is one partition's log: an ordered list of segments. One appender,
// many concurrent readers; readers never hold a lock across disk I/O.
type Log struct{}

// OpenLog opens (creating if needed) the partition directory dir and
// recovers it. recoveryPoint and logStartOffset come from the log dir's
// checkpoints (0 if absent); cleanShutdown says whether the log dir's
// clean-shutdown marker was present.
func OpenLog(dir string, cfg Config, recoveryPoint, logStartOffset int64, cleanShutdown bool, logger *slog.Logger) (*Log, error) {
	panic("TODO")
}

// Append validates every batch in records (one or more, as a producer sent
// them) before writing any, then assigns offsets from the log end, stamps
// leaderEpoch, applies LogAppendTime if configured, and writes them.
func (l *Log) Append(records []byte, leaderEpoch int32) (AppendInfo, error) { panic("TODO") }

// AppendAsFollower appends batches whose offsets the leader already
// assigned; the first must start at the log end offset.
func (l *Log) AppendAsFollower(records []byte) (AppendInfo, error) { panic("TODO") }

// Read returns whole batches starting with the one containing offset, up
// to maxBytes (at least one batch, even if larger), never including a
// batch whose base offset >= maxOffset (the high watermark for consumers;
// pass -1 for the log end). Outside [LogStartOffset, LogEndOffset]:
// ErrOffsetOutOfRange. offset == LogEndOffset: empty result.
func (l *Log) Read(offset int64, maxBytes int, maxOffset int64) (ReadResult, error) { panic("TODO") }

// OffsetForTimestamp returns the first offset whose batch has a timestamp
// >= ts, with that batch's max timestamp; found=false if none.
func (l *Log) OffsetForTimestamp(ts int64) (offset int64, timestamp int64, found bool, err error) {
	panic("TODO")
}

// MaxTimestamp returns the largest timestamp in the log and the offset of
// the record carrying it (ListOffsets -3); (-1, -1) if empty.
func (l *Log) MaxTimestamp() (ts int64, offset int64) { panic("TODO") }

func (l *Log) LogStartOffset() int64 { panic("TODO") }
func (l *Log) LogEndOffset() int64   { panic("TODO") }
func (l *Log) RecoveryPoint() int64  { panic("TODO") }
func (l *Log) Dir() string           { panic("TODO") }
func (l *Log) Size() int64           { panic("TODO") }
func (l *Log) NumSegments() int      { panic("TODO") }

// SetConfig applies changed topic configs (retention, segment size, ...).
func (l *Log) SetConfig(cfg Config) { panic("TODO") }

// Flush fsyncs everything up to the log end and advances the recovery point.
func (l *Log) Flush() error { panic("TODO") }

// TruncateTo removes every record at offset >= offset (replication).
func (l *Log) TruncateTo(offset int64) error { panic("TODO") }

// DeleteRecordsBefore raises the log start offset to offset (DeleteRecords)
// and deletes segments wholly below it. offset > LogEndOffset: ErrOffsetOutOfRange.
func (l *Log) DeleteRecordsBefore(offset int64) (newLogStart int64, err error) { panic("TODO") }

// EnforceRetention deletes old segments by retention.ms and retention.bytes
// (never the active one) and returns how many it deleted.
func (l *Log) EnforceRetention(now time.Time) (int, error) { panic("TODO") }

// MaybeRoll rolls the active segment if segment.ms has passed (called by
// the manager's timer; size and index-full rolls happen in Append).
func (l *Log) MaybeRoll(now time.Time) error { panic("TODO") }

// LeaderEpochs is the partition's leader epoch cache.
func (l *Log) LeaderEpochs() *leaderepoch.Cache { panic("TODO") }

// SetProducerStateHook installs the hook and replays batches from offset
// `from` (the hook's loaded snapshot offset) to the log end into it.
func (l *Log) SetProducerStateHook(h ProducerStateHook, from int64) error { panic("TODO") }

// Close flushes indexes and closes files. Does not fsync the log unless asked by Flush.
func (l *Log) Close() error { panic("TODO") }

// Delete closes the log and removes its directory.
func (l *Log) Delete() error { panic("TODO") }
