package storage

// Log compaction, after Kafka's LogCleaner (see doc.go, "Compaction", for
// the summary and the crash-safe swap protocol).
//
// One pass over a log (Clean):
//
//  1. Plan. The cleanable range is the longest run of whole segments from
//     the first one that are not the active segment, end at or below the
//     cleanable limit (SetCleanableLimit: the high watermark; the log end
//     when unset) and, with min.compaction.lag.ms, whose largest timestamp
//     is older than now - lag. The first dirty offset is the cleaner
//     checkpoint (cleaner-offset-checkpoint), clamped to the log start.
//     Segments wholly below it are "clean", the others "dirty"; the dirty
//     ratio is dirty bytes / (clean + dirty bytes).
//  2. Offset map. Batches of the dirty part are read in order and every
//     key's latest offset recorded, whole batches only, until the map's
//     budget (log.cleaner.dedupe.buffer.size) is spent: the map then ends
//     at a batch boundary "end" (else at the end of the cleanable range),
//     which becomes the new checkpoint.
//  3. Rewrite every segment below end, in groups of consecutive segments
//     whose total size fits segment.bytes (Kafka's groupSegmentsBySize),
//     into one new segment per group, batch by batch, keeping each batch's
//     offsets, producer id/epoch/sequence, leader epoch, timestamps and
//     codec. A record goes when the map holds a later offset for its key,
//     when it has no key, or when it is a tombstone whose batch carries a
//     delete horizon (KIP-534) that has passed. Tombstones that stay get a
//     horizon of now + delete.retention.ms the first time they are cleaned.
//     Batches at or above end are copied as they are (the map does not
//     know their successors), and so are control batches.
//  4. Swap each new segment in for its group (cleaner_swap.go).
//
// Simplifications against Kafka, all on the side of keeping data:
//   - Records of transactional batches never enter the offset map, so they
//     never hide older records and their tombstones are never removed (the
//     storage layer does not know which transactions aborted). Control
//     batches are kept as they are.
//   - Batches emptied of records are dropped, except the last batch of
//     each producer id in the rewritten range (kept as an empty batch so
//     the producer's sequence survives, as Kafka does) and the last batch
//     of each group (so a new segment ends at the offset its group ended
//     at, which the swap recovery relies on).
//   - Dirty ratios count whole segments; min.compaction.lag.ms is judged
//     per segment by its largest timestamp, as in Kafka.
//   - The cleaner works one log at a time on one goroutine.

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"sync"
	"sync/atomic"
	"time"

	"github.com/weir-project/weir/internal/storage/recordbatch"
)

// errCleanAborted: the log changed under the cleaner (retention, truncation,
// close); the pass is dropped and its files removed.
var errCleanAborted = errors.New("log changed during cleaning")

// cleanerState is a log's compaction bookkeeping.
type cleanerState struct {
	mu sync.Mutex // one cleaning pass of this log at a time

	// point is the first dirty offset: everything below it has been cleaned
	// with a complete offset map. Persisted in cleaner-offset-checkpoint.
	point atomic.Int64
	// limit, when limitSet, is the first offset the cleaner must not touch
	// (the high watermark: nothing above it is committed yet).
	limit    atomic.Int64
	limitSet atomic.Bool
	// horizon is the earliest delete horizon among cleaned batches that
	// still hold tombstones: 0 unknown (not looked at since open),
	// math.MaxInt64 none.
	horizon atomic.Int64
	// truncations counts truncations, bumped under Log.mu once each is
	// complete. A truncation can rewrite a segment in place (cut, append
	// the same number of bytes, roll) so that neither its identity nor its
	// size tells a swap that the contents it cleaned are gone.
	truncations atomic.Int64
}

// CleanOptions tunes one cleaning pass.
type CleanOptions struct {
	// Now is the clock for delete horizons and min.compaction.lag.ms
	// (time.Now() when zero).
	Now time.Time
	// DedupeBufferBytes bounds the offset map (log.cleaner.dedupe.buffer.size).
	DedupeBufferBytes int64

	// stage, when set (tests only), is called at each step of the swap so
	// a crash test can kill the process there.
	stage func(name string)
}

// CleanStats describes one cleaning pass.
type CleanStats struct {
	FirstDirty        int64 // cleaner checkpoint before the pass
	End               int64 // cleaner checkpoint after it
	SegmentsIn        int
	SegmentsOut       int
	BytesRead         int64
	BytesWritten      int64
	RecordsRead       int64
	RecordsKept       int64
	TombstonesRemoved int64
	Elapsed           time.Duration
}

// CleanerCheckpoint is the first offset not yet cleaned (cleaned up to).
func (l *Log) CleanerCheckpoint() int64 { return l.clean.point.Load() }

// setCleanerCheckpoint restores the checkpoint read at start.
func (l *Log) setCleanerCheckpoint(off int64) { l.clean.point.Store(max(off, 0)) }

// SetCleanableLimit stops the cleaner at offset: only segments wholly
// below it are compacted. The replica layer passes its high watermark (or
// last stable offset). Without a call, the limit is the log end (the
// active segment is never cleaned either way).
func (l *Log) SetCleanableLimit(offset int64) {
	l.clean.limit.Store(offset)
	l.clean.limitSet.Store(true)
}

// cleanPlan is the cleanable part of the log at one moment.
type cleanPlan struct {
	segs       []*segment // cleanable segments, oldest first
	uppers     []int64    // each one's upper bound (the next segment's base)
	firstDirty int64
	cleanBytes int64
	dirtyBytes int64
}

// ratio is Kafka's dirty ratio of the cleanable range.
func (p cleanPlan) ratio() float64 {
	if p.dirtyBytes == 0 {
		return 0
	}
	return float64(p.dirtyBytes) / float64(p.cleanBytes+p.dirtyBytes)
}

// plan finds the cleanable segments and the first dirty offset (step 1).
func (l *Log) plan(now time.Time, cfg Config) cleanPlan {
	segs := l.segments()
	limit := l.logEnd.Load()
	if l.clean.limitSet.Load() {
		limit = min(limit, l.clean.limit.Load())
	}
	lagCutoff := now.UnixMilli() - cfg.MinCompactionLagMs
	var p cleanPlan
	for k := 0; k < len(segs)-1; k++ { // never the active segment
		upper := segs[k+1].base
		if upper > limit {
			break
		}
		if ts, _ := segs[k].timestamps(); cfg.MinCompactionLagMs > 0 && ts > lagCutoff {
			break
		}
		p.segs = append(p.segs, segs[k])
		p.uppers = append(p.uppers, upper)
	}
	p.firstDirty = max(l.clean.point.Load(), l.logStart.Load())
	if len(p.segs) > 0 {
		p.firstDirty = max(p.firstDirty, p.segs[0].base)
	}
	for i, s := range p.segs {
		if p.uppers[i] <= p.firstDirty {
			p.cleanBytes += s.size.Load()
		} else {
			p.dirtyBytes += s.size.Load()
		}
	}
	return p
}

// DirtyRatio is the share of the cleanable bytes not yet cleaned, the
// figure min.cleanable.dirty.ratio is compared with.
func (l *Log) DirtyRatio(now time.Time) float64 { return l.plan(now, l.config()).ratio() }

// Clean runs one compaction pass now, whatever the dirty ratio (the
// manager's background cleaner decides when a pass is worth it). It
// returns ErrClosed if the log closes meanwhile.
func (l *Log) Clean(ctx context.Context, opts CleanOptions) (CleanStats, error) {
	l.clean.mu.Lock()
	defer l.clean.mu.Unlock()
	start := time.Now()
	if opts.Now.IsZero() {
		opts.Now = start
	}
	cfg := l.config()
	// Read before the plan snapshots the segments: a truncation that ends
	// after this read changes the count, and swapIn then aborts.
	truncations := l.clean.truncations.Load()
	p := l.plan(opts.Now, cfg)
	stats := CleanStats{FirstDirty: p.firstDirty, End: p.firstDirty}
	if len(p.segs) == 0 {
		return stats, nil
	}
	callStage(opts.stage, stagePlanned)
	m := newOffsetMap(opts.DedupeBufferBytes)
	end, err := l.buildOffsetMap(ctx, p, m)
	if err != nil {
		return stats, l.cleanErr(err, truncations)
	}
	stats.End = end
	var rewrite []*segment
	var sizes []int64
	for _, s := range p.segs {
		if s.base >= end {
			break
		}
		rewrite = append(rewrite, s)
		sizes = append(sizes, s.size.Load())
	}
	lasts, err := lastBatches(rewrite, sizes)
	if err != nil {
		return stats, l.cleanErr(err, truncations)
	}
	w := rewriter{l: l, cfg: cfg, m: m, end: end, now: opts.Now.UnixMilli(), lasts: lasts, stats: &stats, horizon: math.MaxInt64, truncations: truncations}
	for _, g := range groupSegments(rewrite, sizes, p.uppers, cfg) {
		if err := ctx.Err(); err != nil {
			return stats, err
		}
		if err := w.cleanGroup(ctx, rewrite, sizes, g, opts.stage); err != nil {
			return stats, l.cleanErr(err, truncations)
		}
	}
	l.clean.point.Store(max(end, l.clean.point.Load()))
	l.clean.horizon.Store(w.horizon)
	stats.Elapsed = time.Since(start)
	l.logger.Info("cleaned log", "first_dirty", stats.FirstDirty, "end", stats.End,
		"segments_in", stats.SegmentsIn, "segments_out", stats.SegmentsOut,
		"bytes_in", stats.BytesRead, "bytes_out", stats.BytesWritten,
		"records_in", stats.RecordsRead, "records_kept", stats.RecordsKept,
		"tombstones_removed", stats.TombstonesRemoved, "elapsed", stats.Elapsed)
	return stats, nil
}

// cleanErr reports a failure of a log that closed meanwhile as ErrClosed:
// its files were closed under the cleaner's reads. A failure caused by
// the log changing under the pass is errCleanAborted, which does not
// bench the log: with file.delete.delay.ms=0, retention and DeleteRecords
// retire the segments they remove at once (errSegmentClosed), and a
// truncation can shorten a segment below its planned size.
func (l *Log) cleanErr(err error, truncations int64) error {
	l.mu.Lock()
	closed := l.closed
	l.mu.Unlock()
	if closed {
		return fmt.Errorf("clean %s: %w", l.dir, ErrClosed)
	}
	if errors.Is(err, errSegmentClosed) || l.clean.truncations.Load() != truncations {
		return fmt.Errorf("clean %s: %w: %w", l.dir, errCleanAborted, err)
	}
	return fmt.Errorf("clean %s: %w", l.dir, err)
}

// buildOffsetMap records the latest offset of every key from the first
// dirty offset to the end of the cleanable range, or until the budget is
// spent; it returns where the map ends (step 2).
func (l *Log) buildOffsetMap(ctx context.Context, p cleanPlan, m *offsetMap) (int64, error) {
	end := p.uppers[len(p.uppers)-1]
	if p.firstDirty >= end {
		return p.firstDirty, nil // nothing dirty: a pass only for expired tombstones
	}
	seen := make(map[string]struct{})
	var keys [][]byte
	for i, s := range p.segs {
		if p.uppers[i] <= p.firstDirty {
			continue
		}
		if err := ctx.Err(); err != nil {
			return 0, err
		}
		full := false
		err := readBatches(s, s.size.Load(), func(b []byte, h recordbatch.Header) error {
			if h.LastOffset() < p.firstDirty || h.Control() || h.Transactional() {
				return nil
			}
			recs, err := recordbatch.Records(b)
			if err != nil {
				return fmt.Errorf("batch at offset %d of %s: %w", h.BaseOffset, s.logPath(), err)
			}
			keys = keys[:0]
			for _, r := range recs {
				if r.Key != nil {
					keys = append(keys, r.Key)
				}
			}
			if !m.fits(m.cost(keys, seen)) {
				if h.BaseOffset <= p.firstDirty {
					return fmt.Errorf("log.cleaner.dedupe.buffer.size %d cannot hold the keys of one batch (offset %d)", m.budget, h.BaseOffset)
				}
				end, full = h.BaseOffset, true
				return errStopScan
			}
			for _, r := range recs {
				if r.Key != nil {
					m.put(r.Key, h.BaseOffset+int64(r.OffsetDelta))
				}
			}
			return nil
		})
		if err != nil {
			return 0, err
		}
		if full {
			break
		}
	}
	return end, nil
}

// errStopScan ends readBatches early without an error.
var errStopScan = errors.New("stop scan")

// readBatches reads the segment's batches in [0, size) in order, checking
// each CRC, and hands each (valid until fn returns) to fn. An fn error
// stops the walk; errStopScan stops it quietly.
func readBatches(s *segment, size int64, fn func(b []byte, h recordbatch.Header) error) error {
	f, err := s.file.acquire()
	if err != nil {
		return err
	}
	defer s.file.release()
	// Buffers sized to the segment: small segments are common in tests and
	// for freshly rolled compacted topics.
	br := bufio.NewReaderSize(io.NewSectionReader(f, 0, size), int(min(size, 1<<20)))
	buf := make([]byte, min(size, 64<<10))
	for pos := int64(0); pos < size; {
		if size-pos < recordbatch.HeaderSize {
			return fmt.Errorf("%s: torn batch at byte %d: %w", s.logPath(), pos, recordbatch.ErrCorrupt)
		}
		if _, err := io.ReadFull(br, buf[:recordbatch.HeaderSize]); err != nil {
			return fmt.Errorf("read %s at %d: %w", s.logPath(), pos, err)
		}
		h, err := recordbatch.ParseHeader(buf[:recordbatch.HeaderSize])
		if err != nil {
			return fmt.Errorf("%s at byte %d: %w", s.logPath(), pos, err)
		}
		n := h.Size()
		if pos+n > size {
			return fmt.Errorf("%s: batch at byte %d runs past %d: %w", s.logPath(), pos, size, recordbatch.ErrCorrupt)
		}
		if int64(len(buf)) < n {
			buf = append(buf[:recordbatch.HeaderSize], make([]byte, n-recordbatch.HeaderSize)...)
		}
		if _, err := io.ReadFull(br, buf[recordbatch.HeaderSize:n]); err != nil {
			return fmt.Errorf("read %s at %d: %w", s.logPath(), pos, err)
		}
		b := buf[:n:n]
		if err := recordbatch.CheckCRC(b); err != nil {
			return fmt.Errorf("%s at byte %d: %w", s.logPath(), pos, err)
		}
		if err := fn(b, h); err != nil {
			if errors.Is(err, errStopScan) {
				return nil
			}
			return err
		}
		pos += n
	}
	return nil
}

// batchLasts names the batches a rewrite must keep even when emptied.
type batchLasts struct {
	ofProducer map[int64]int64 // producer id -> base offset of its last batch
	ofSegment  []int64         // per segment: base offset of its last batch, -1 if none
}

// lastBatches scans the batch headers of the segments to rewrite.
func lastBatches(segs []*segment, sizes []int64) (batchLasts, error) {
	lasts := batchLasts{ofProducer: make(map[int64]int64), ofSegment: make([]int64, len(segs))}
	for i, s := range segs {
		lasts.ofSegment[i] = -1
		err := s.scanHeaders(0, sizes[i], func(_ int64, h recordbatch.Header) bool {
			lasts.ofSegment[i] = h.BaseOffset
			if h.ProducerID >= 0 {
				lasts.ofProducer[h.ProducerID] = h.BaseOffset
			}
			return true
		})
		if err != nil {
			return lasts, fmt.Errorf("scan %s: %w", s.logPath(), err)
		}
	}
	return lasts, nil
}

// segGroup is a run [from, to) of segments cleaned into one.
type segGroup struct{ from, to int }

// groupSegments groups consecutive segments whose sizes add up to at most
// segment.bytes, whose index entries fit one index, and whose offsets fit
// the int32 relative offsets of one segment (Kafka's groupSegmentsBySize).
// Sizes before cleaning bound the sizes after, so every group fits.
// uppers[i] is the base of the segment after segs[i].
func groupSegments(segs []*segment, sizes, uppers []int64, cfg Config) []segGroup {
	maxEntries := cfg.SegmentIndexBytes/12 - 2
	var groups []segGroup
	for i := 0; i < len(segs); {
		j := i + 1
		size, entries := sizes[i], segs[i].offIdx.Len()+segs[i].timeIdx.Len()
		for ; j < len(segs); j++ {
			e := segs[j].offIdx.Len() + segs[j].timeIdx.Len()
			if size+sizes[j] > cfg.SegmentBytes || entries+e > maxEntries || uppers[j]-1-segs[i].base > math.MaxInt32 {
				break
			}
			size += sizes[j]
			entries += e
		}
		groups = append(groups, segGroup{from: i, to: j})
		i = j
	}
	return groups
}
