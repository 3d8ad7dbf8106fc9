package storage

import (
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/weir-project/weir/internal/storage/recordbatch"
)

// load opens the partition directory and recovers it (see doc.go for the
// algorithm). It sets segments, log start, log end and recovery point.
func (l *Log) load(recoveryPoint, logStart int64, clean bool) error {
	cfg := l.config()
	bases, err := l.cleanDir()
	if err != nil {
		return err
	}
	if len(bases) == 0 {
		seg, err := l.newSegmentLocked(max(logStart, 0), cfg, true)
		if err != nil {
			return err
		}
		l.setSegments([]*segment{seg})
		l.logStart.Store(seg.base)
		l.durableStart.Store(seg.base)
		l.logEnd.Store(seg.base)
		l.recoveryPoint.Store(seg.base)
		return nil
	}

	segs := make([]*segment, 0, len(bases))
	rebuild := make([]bool, 0, len(bases))
	fail := func(err error) error {
		for _, s := range segs {
			s.close()
		}
		return err
	}
	for _, b := range bases {
		seg, rb, err := openSegment(l.dir, b, cfg, l.files)
		if err != nil {
			return fail(err)
		}
		segs = append(segs, seg)
		rebuild = append(rebuild, rb)
	}
	upper := func(i int) int64 {
		if i+1 < len(segs) {
			return segs[i+1].base
		}
		return math.MaxInt64
	}

	// Segments below the one holding the recovery point were fsynced
	// (with their indexes) at their roll: trust them, but rebuild a
	// missing or corrupt index, and never cut anything there.
	recoverFrom := len(segs)
	if !clean {
		recoverFrom = max(floorSegment(segs, recoveryPoint), 0)
	}
	for i := 0; i < recoverFrom; i++ {
		if rebuild[i] {
			if _, err := l.rebuildTrusted(segs[i], upper(i), cfg); err != nil {
				return fail(err)
			}
		}
	}
	var leo int64
	if recoverFrom == len(segs) {
		last := segs[len(segs)-1]
		n, err := l.trustedTail(last, cfg, rebuild[len(segs)-1])
		if err != nil {
			return fail(err)
		}
		leo = n
	} else {
		// Kafka says the same ("Recovering unflushed segment"): it tells an
		// operator why a start after a crash reads data.
		l.logger.Info("recovering unflushed segments", "dir", l.dir, "recovery_point", recoveryPoint,
			"from_segment", segs[recoverFrom].base, "segments", len(segs)-recoverFrom)
		l.recoveredSegments = len(segs) - recoverFrom
		for i := recoverFrom; i < len(segs); i++ {
			// The epochs of recovered batches go into the leader epoch
			// cache too: a crash may come between a follower's append
			// and its write of leader-epoch-checkpoint, and truncation
			// after a failover relies on that history (Kafka's segment
			// recovery does the same).
			res, err := segs[i].scan(upper(i), cfg.IndexIntervalBytes, true, l.assignRecoveredEpoch)
			if err != nil {
				return fail(fmt.Errorf("recover %s: %w", segs[i].logPath(), err))
			}
			leo = res.next
			if res.stop == nil && i+1 < len(segs) && res.next < segs[i+1].base {
				res.stop = lostTail(res.next, segs[i+1].base)
			}
			if res.stop == nil {
				continue
			}
			if err := l.cutSegments(segs, i, res); err != nil {
				return fail(err)
			}
			segs = segs[:i+1]
			break
		}
	}
	now := time.Now()
	act := segs[len(segs)-1]
	if act.size.Load() > 0 {
		act.firstAppend = now
	}

	logStart = max(logStart, segs[0].base)
	if leo < logStart {
		// The checkpointed log start lies beyond what survived: nothing
		// below it may be served, so start afresh there (as Kafka does).
		l.logger.Warn("log end below log start offset; discarding all segments",
			"log_end", leo, "log_start", logStart)
		for _, s := range segs {
			if err := s.closeAndRemove(); err != nil {
				return fail(err)
			}
		}
		segs = nil
		seg, err := l.newSegmentLocked(logStart, cfg, true)
		if err != nil {
			return err
		}
		segs = []*segment{seg}
		leo = logStart
	}
	l.setSegments(segs)
	l.logStart.Store(logStart)
	l.durableStart.Store(logStart)
	l.logEnd.Store(leo)
	if clean {
		l.recoveryPoint.Store(leo)
	} else {
		l.recoveryPoint.Store(min(max(recoveryPoint, segs[0].base), leo))
	}
	return nil
}

// cleanDir finishes or undoes interrupted cleaner swaps, removes leftovers
// of interrupted work (*.deleted, *.tmp, indexes without a .log) and
// returns the segment base offsets, sorted.
func (l *Log) cleanDir() ([]int64, error) {
	if err := l.recoverSwaps(); err != nil {
		return nil, fmt.Errorf("recover cleaner swaps in %s: %w", l.dir, err)
	}
	entries, err := os.ReadDir(l.dir)
	if err != nil {
		return nil, fmt.Errorf("list partition dir %s: %w", l.dir, err)
	}
	names := make(map[string]bool, len(entries))
	var bases []int64
	for _, e := range entries {
		name := e.Name()
		if e.IsDir() {
			continue
		}
		if strings.HasSuffix(name, deletedSuffix) || strings.HasSuffix(name, tmpSuffix) {
			if err := os.Remove(filepath.Join(l.dir, name)); err != nil && !errors.Is(err, os.ErrNotExist) {
				return nil, fmt.Errorf("remove leftover %s: %w", name, err)
			}
			l.logger.Info("removed leftover file", "file", name)
			continue
		}
		names[name] = true
		if b, ok := parseSegmentName(name, logSuffix); ok {
			bases = append(bases, b)
		}
	}
	for name := range names {
		for _, suf := range []string{indexSuffix, timeIndexSuffix} {
			if b, ok := parseSegmentName(name, suf); ok && !names[segmentName(b, logSuffix)] {
				if err := os.Remove(filepath.Join(l.dir, name)); err != nil && !errors.Is(err, os.ErrNotExist) {
					return nil, fmt.Errorf("remove orphan index %s: %w", name, err)
				}
			}
		}
	}
	slices.Sort(bases)
	return bases, nil
}

// rebuildTrusted rebuilds the indexes of a segment below the recovery
// point. Invalid bytes there are not cut: they are reported.
func (l *Log) rebuildTrusted(s *segment, upper int64, cfg Config) (scanResult, error) {
	res, err := s.scan(upper, cfg.IndexIntervalBytes, true, nil)
	if err != nil {
		return res, fmt.Errorf("rebuild indexes of %s: %w", s.logPath(), err)
	}
	if res.stop != nil {
		return res, fmt.Errorf("segment %s below the recovery point is corrupt at byte %d (offset %d): %w: %w",
			s.logPath(), res.validEnd, res.next, res.stop, ErrStorage)
	}
	l.logger.Info("rebuilt indexes", "file", s.logPath(), "batches", res.batches)
	return res, nil
}

// trustedTail finds the log end of a trusted last segment by scanning the
// batch headers after its last index entry; it also restores the append
// state (max timestamp, bytes since the last index entry). If the indexes
// need a rebuild, or the tail does not parse, the whole segment is
// rescanned, strictly.
func (l *Log) trustedTail(s *segment, cfg Config, rebuild bool) (int64, error) {
	if !rebuild {
		_, pos := s.offIdx.LastEntry()
		next := s.base
		size := s.size.Load()
		err := s.scanHeaders(pos, size, func(at int64, h recordbatch.Header) bool {
			s.noteTimestamp(h.MaxTimestamp, h.LastOffset())
			next = h.LastOffset() + 1
			pos = at + h.Size()
			return true
		})
		if errors.Is(err, ErrStorage) {
			return 0, fmt.Errorf("read %s: %w", s.logPath(), err) // could not open it
		}
		if pos == size {
			_, ipos := s.offIdx.LastEntry()
			s.bytesSinceIndex = size - ipos
			return next, nil
		}
		l.logger.Warn("tail of trusted segment does not parse from its index; rebuilding", "file", s.logPath(), "at", pos)
	}
	res, err := l.rebuildTrusted(s, math.MaxInt64, cfg)
	if err != nil {
		return 0, err
	}
	return res.next, nil
}

// cutSegments truncates segs[i] at the end of its valid prefix and
// removes every later segment, logging what is lost.
func (l *Log) cutSegments(segs []*segment, i int, res scanResult) error {
	s := segs[i]
	size := s.size.Load()
	l.logger.Warn("recovery truncated segment",
		"file", s.logPath(), "at_byte", res.validEnd, "bytes_cut", size-res.validEnd,
		"next_offset", res.next, "reason", res.stop)
	if err := s.file.truncate(res.validEnd); err != nil {
		return err
	}
	s.size.Store(res.validEnd)
	for _, later := range segs[i+1:] {
		l.logger.Warn("recovery deleted segment after corruption",
			"file", later.logPath(), "bytes", later.size.Load(), "base_offset", later.base)
		if err := later.closeAndRemove(); err != nil {
			return err
		}
	}
	return nil
}

// checkOffsets checks a stored batch's offsets against its neighbours.
func checkOffsets(h recordbatch.Header, next, base, upper int64) error {
	switch {
	case h.LastOffsetDelta < 0:
		return fmt.Errorf("negative last offset delta %d: %w", h.LastOffsetDelta, recordbatch.ErrCorrupt)
	case h.BaseOffset < next:
		return fmt.Errorf("base offset %d below expected %d: %w", h.BaseOffset, next, recordbatch.ErrCorrupt)
	case h.LastOffset() >= upper || h.LastOffset() < h.BaseOffset:
		return fmt.Errorf("last offset %d reaches the next segment %d: %w", h.LastOffset(), upper, recordbatch.ErrCorrupt)
	case h.LastOffset()-base > math.MaxInt32:
		return fmt.Errorf("offset %d too far from segment base %d: %w", h.LastOffset(), base, recordbatch.ErrCorrupt)
	}
	return nil
}

// assignRecoveredEpoch records the leader epoch of a recovered batch when
// it is newer than every epoch the cache holds. Older or equal epochs are
// already in the cache, which was written in offset order up to at least
// the recovery point; re-assigning one from a batch in the middle of its
// epoch would move the epoch's start. In memory, as appends do: the file
// follows before the recovery point passes the batch, and until then
// the next recovery finds it again.
func (l *Log) assignRecoveredEpoch(h recordbatch.Header) error {
	if h.PartitionLeaderEpoch < 0 {
		return nil
	}
	if latest, _, ok := l.epochs.Latest(); ok && h.PartitionLeaderEpoch <= latest {
		return nil
	}
	if err := l.epochs.Begin(h.PartitionLeaderEpoch, h.BaseOffset); err != nil {
		return fmt.Errorf("record leader epoch %d at %d: %w", h.PartitionLeaderEpoch, h.BaseOffset, err)
	}
	return nil
}

// lostTail is why recovery cuts a log whose unflushed segment ends, at a
// whole batch, below the next segment's base. A roll starts the next
// segment at the log end, so a hole there means writes were lost: after
// a power loss the kernel may have written the new segment back but not
// the old one's tail. Kept, the hole would survive follower truncation
// (which compares leader epochs, not offsets inside one) and a consumer
// would skip it unawares; cut, the replica fetches the lost records
// again. Compacted logs are no exception: the cleaner keeps the last batch
// of every group it rewrites (empty if need be), so a cleaned segment
// ends where its group did (TestCleanedSegmentsSurviveRecovery); and a
// follower rolls at its own log end too, whatever gaps the leader's
// batches carry inside.
func lostTail(end, nextBase int64) error {
	return fmt.Errorf("segment ends at offset %d, below the next segment's base %d: its tail was lost: %w",
		end, nextBase, recordbatch.ErrCorrupt)
}
