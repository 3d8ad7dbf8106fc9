package storage

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"

	"github.com/weir-project/weir/internal/storage/index"
	"github.com/weir-project/weir/internal/storage/recordbatch"
)

// cleanedSuffix marks files of a segment being written by the cleaner;
// they mean nothing until renamed *.swap (cleaner_swap.go).
const cleanedSuffix = ".cleaned"

// rewriter carries one cleaning pass's state through its groups.
type rewriter struct {
	l     *Log
	cfg   Config
	m     *offsetMap
	end   int64 // the offset map covers the log below end
	now   int64 // ms, for delete horizons
	lasts batchLasts
	stats *CleanStats
	// horizon is the earliest delete horizon written so far.
	horizon int64
	// truncations is the log's truncation count when the pass was planned.
	truncations int64
}

// cleanGroup rewrites segs[g.from:g.to] into one new segment and swaps it
// in. sizes are the segments' sizes when the pass was planned.
func (w *rewriter) cleanGroup(ctx context.Context, segs []*segment, sizes []int64, g segGroup, stage func(string)) error {
	group, groupSizes := segs[g.from:g.to], sizes[g.from:g.to]
	groupLast := int64(-1)
	for i := g.to - 1; i >= g.from && groupLast < 0; i-- {
		groupLast = w.lasts.ofSegment[i]
	}
	if groupLast < 0 {
		return nil // only empty segments: nothing to clean
	}
	out, err := createCleanedSegment(w.l.dir, group[0].base, w.cfg, w.l.files)
	if err != nil {
		return err
	}
	committed := false
	defer func() {
		if !committed {
			if err := out.closeAndRemove(); err != nil {
				w.l.logger.Warn("removing abandoned cleaned segment", "segment", out.base, "err", err)
			}
		}
	}()
	var total int64
	for _, n := range groupSizes {
		total += n
	}
	// The new file stays open (no eviction) while it is written.
	outFile, err := out.file.acquire()
	if err != nil {
		return err
	}
	defer out.file.release()
	bw := bufio.NewWriterSize(outFile, int(min(total, 1<<20)))
	var pos int64
	horizon := int64(math.MaxInt64)
	var st CleanStats
	for i, s := range group {
		if err := ctx.Err(); err != nil {
			return err
		}
		st.BytesRead += groupSizes[i]
		err := readBatches(s, groupSizes[i], func(b []byte, h recordbatch.Header) error {
			keep := h.BaseOffset == groupLast || (h.ProducerID >= 0 && w.lasts.ofProducer[h.ProducerID] == h.BaseOffset)
			nb, err := w.filter(b, h, keep, &st)
			if err != nil || nb == nil {
				return err
			}
			nh, err := recordbatch.ParseHeader(nb)
			if err != nil {
				return fmt.Errorf("cleaned batch at offset %d: %w", h.BaseOffset, err)
			}
			if _, err := bw.Write(nb); err != nil {
				return fmt.Errorf("write %s: %w", out.logPath(), err)
			}
			out.indexBatch(nh, nh.MaxTimestamp, pos, w.cfg.IndexIntervalBytes)
			pos += int64(len(nb))
			if hz, set := nh.DeleteHorizon(); set && !nh.Control() {
				horizon = min(horizon, hz)
			}
			return nil
		})
		if err != nil {
			return err
		}
	}
	if err := bw.Flush(); err != nil {
		return fmt.Errorf("write %s: %w: %w", out.logPath(), ErrStorage, err)
	}
	out.size.Store(pos)
	out.sealIndexes()
	if err := out.flush(); err != nil {
		return fmt.Errorf("cleaned segment %d: %w: %w", out.base, ErrStorage, err)
	}
	callStage(stage, stageCleaned)
	committed, err = w.l.swapIn(out, group, groupSizes, w.truncations, stage)
	if err != nil {
		return err
	}
	w.horizon = min(w.horizon, horizon)
	st.SegmentsIn, st.SegmentsOut, st.BytesWritten = len(group), 1, pos
	w.stats.add(st)
	return nil
}

// add accumulates a group's figures into the pass's.
func (s *CleanStats) add(g CleanStats) {
	s.SegmentsIn += g.SegmentsIn
	s.SegmentsOut += g.SegmentsOut
	s.BytesRead += g.BytesRead
	s.BytesWritten += g.BytesWritten
	s.RecordsRead += g.RecordsRead
	s.RecordsKept += g.RecordsKept
	s.TombstonesRemoved += g.TombstonesRemoved
}

// filter returns the batch to write in place of b: b itself when nothing
// changes, a re-encoded batch, an empty batch when keep demands one, or
// nil to drop it. See cleaner.go for the rules.
func (w *rewriter) filter(b []byte, h recordbatch.Header, keep bool, st *CleanStats) ([]byte, error) {
	if h.BaseOffset >= w.end || h.Control() {
		st.RecordsRead += int64(h.RecordCount)
		st.RecordsKept += int64(h.RecordCount)
		return b, nil
	}
	recs, err := recordbatch.Records(b)
	if err != nil {
		return nil, fmt.Errorf("batch at offset %d: %w", h.BaseOffset, err)
	}
	st.RecordsRead += int64(len(recs))
	oldHz, oldSet := h.DeleteHorizon()
	txn := h.Transactional()
	kept := recs[:0:0]
	tombstones := false
	for _, r := range recs {
		off := h.BaseOffset + int64(r.OffsetDelta)
		if r.Key == nil {
			continue // keyless records have no place in a compacted log
		}
		if latest, ok := w.m.get(r.Key); ok && latest > off {
			continue
		}
		if r.Value == nil {
			if !txn && oldSet && oldHz <= w.now {
				st.TombstonesRemoved++
				continue
			}
			tombstones = true
		}
		kept = append(kept, r)
	}
	st.RecordsKept += int64(len(kept))
	newSet := tombstones && !txn
	if len(kept) == len(recs) && newSet == oldSet {
		return b, nil
	}
	opts := recordbatch.BuildOptions{
		BaseOffset:       h.BaseOffset,
		Compression:      h.Compression(),
		ProducerID:       h.ProducerID,
		ProducerEpoch:    h.ProducerEpoch,
		BaseSequence:     h.BaseSequence,
		LeaderEpoch:      h.PartitionLeaderEpoch,
		Transactional:    txn,
		LogAppendTime:    h.LogAppendTime(),
		KeepOffsetDeltas: true,
		LastOffsetDelta:  h.LastOffsetDelta,
		MaxTimestamp:     h.MaxTimestamp,
	}
	if len(kept) == 0 {
		if !keep {
			return nil, nil
		}
		// Only the header's offsets and producer fields are wanted.
		opts.BaseTimestamp = h.BaseTimestamp
		if oldSet {
			opts.BaseTimestamp = h.MaxTimestamp
		}
		return recordbatch.Build(opts, nil)
	}
	// Record timestamps are deltas from the base timestamp, which becomes
	// the delete horizon when one is set: re-base them.
	abs := func(r recordbatch.Record) int64 { return h.BaseTimestamp + r.TimestampDelta }
	switch {
	case newSet && oldSet:
		opts.BaseTimestamp = oldHz
	case newSet:
		opts.BaseTimestamp = w.now + w.cfg.DeleteRetentionMs
	default:
		opts.BaseTimestamp = abs(kept[0])
	}
	opts.DeleteHorizon = newSet
	if !h.LogAppendTime() {
		opts.MaxTimestamp = math.MinInt64
		for _, r := range kept {
			opts.MaxTimestamp = max(opts.MaxTimestamp, abs(r))
		}
	}
	for i := range kept {
		kept[i].TimestampDelta = abs(kept[i]) - opts.BaseTimestamp
	}
	nb, err := recordbatch.Build(opts, kept)
	if err != nil {
		return nil, fmt.Errorf("re-encode batch at offset %d: %w", h.BaseOffset, err)
	}
	return nb, nil
}

// createCleanedSegment creates the empty "<base>.log.cleaned" and its
// index files, replacing leftovers of an abandoned pass. Its descriptor
// goes to files like any segment's.
func createCleanedSegment(dir string, base int64, cfg Config, files *fileCache) (*segment, error) {
	paths := [3]string{}
	for i, suf := range []string{logSuffix, indexSuffix, timeIndexSuffix} {
		paths[i] = filepath.Join(dir, segmentName(base, suf)+cleanedSuffix)
		if err := os.Remove(paths[i]); err != nil && !errors.Is(err, os.ErrNotExist) {
			return nil, fmt.Errorf("remove stale %s: %w", paths[i], err)
		}
	}
	f, err := os.OpenFile(paths[0], os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o644)
	if err != nil {
		return nil, fmt.Errorf("create cleaned segment: %w: %w", ErrStorage, err)
	}
	s := &segment{base: base, file: newSegFile(files, paths[0]), maxTs: -1, offOfMaxTs: base, maxTimeEntries: cfg.SegmentIndexBytes / 12}
	if s.offIdx, err = index.OpenOffsetIndex(paths[1], base, cfg.SegmentIndexBytes); err != nil {
		f.Close()
		os.Remove(paths[0])
		return nil, fmt.Errorf("create cleaned offset index: %w", err)
	}
	if s.timeIdx, err = index.OpenTimeIndex(paths[2], base, cfg.SegmentIndexBytes); err != nil {
		s.offIdx.Close()
		f.Close()
		os.Remove(paths[0])
		os.Remove(paths[1])
		return nil, fmt.Errorf("create cleaned time index: %w", err)
	}
	s.file.adopt(f)
	return s, nil
}
