package storage

import (
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/weir-project/weir/internal/storage/index"
	"github.com/weir-project/weir/internal/storage/recordbatch"
)

// File name suffixes of a segment and of files pending removal.
const (
	logSuffix       = ".log"
	indexSuffix     = ".index"
	timeIndexSuffix = ".timeindex"
	snapshotSuffix  = ".snapshot"
	deletedSuffix   = ".deleted"
	tmpSuffix       = ".tmp"
)

// segmentName is the 20-digit zero-padded base offset Kafka names files by.
func segmentName(base int64, suffix string) string {
	return fmt.Sprintf("%020d%s", base, suffix)
}

// parseSegmentName returns the base offset of "<20 digits><suffix>".
func parseSegmentName(name, suffix string) (int64, bool) {
	stem, ok := strings.CutSuffix(name, suffix)
	if !ok || len(stem) != 20 {
		return 0, false
	}
	base, err := strconv.ParseInt(stem, 10, 64)
	if err != nil || base < 0 {
		return 0, false
	}
	return base, true
}

// segment is one .log file with its two sparse indexes. The .log is
// opened on demand through the log's descriptor cache (files.go); the
// indexes live in memory. Both are safe for concurrent readers; fields
// marked "appender" are touched only under Log.mu.
type segment struct {
	base int64
	// file is the .log. Renames (to *.deleted, by the cleaner's swap)
	// happen under Log.mu, but readers and the cleaner name the file in
	// errors without it: its path is safe to read anywhere (logPath).
	file    *segFile
	offIdx  *index.OffsetIndex
	timeIdx *index.TimeIndex

	// size is the published length of the .log: readers never look past it,
	// so a batch becomes visible only once its bytes are fully written.
	size atomic.Int64

	tsMu       sync.Mutex
	maxTs      int64 // largest batch max timestamp in the segment, -1 if none
	offOfMaxTs int64 // last offset of the batch carrying maxTs

	// appender state
	maxTimeEntries  int       // time-index capacity, one entry kept for the roll
	bytesSinceIndex int64     // bytes appended since the last index entry
	firstAppend     time.Time // wall clock of the first append (segment.ms)
}

// openSegment opens the segment at base, creating an empty .log if there
// is none. The .log is not opened, only looked at: it gets a descriptor
// from files when first read or written (a created one keeps its own).
// Index files that fail to open as corrupt are recreated empty and
// reported by needRebuild so the caller rebuilds them from the .log.
func openSegment(dir string, base int64, cfg Config, files *fileCache) (seg *segment, needRebuild bool, err error) {
	logPath := filepath.Join(dir, segmentName(base, logSuffix))
	var created *os.File
	var size int64
	st, err := os.Stat(logPath)
	switch {
	case errors.Is(err, os.ErrNotExist):
		if created, err = os.OpenFile(logPath, os.O_RDWR|os.O_CREATE, 0o644); err != nil {
			return nil, false, fmt.Errorf("create segment %s: %w", logPath, err)
		}
	case err != nil:
		return nil, false, fmt.Errorf("stat segment %s: %w", logPath, err)
	default:
		size = st.Size()
	}
	seg = &segment{
		base:           base,
		file:           newSegFile(files, logPath),
		maxTs:          -1,
		offOfMaxTs:     base,
		maxTimeEntries: cfg.SegmentIndexBytes / 12,
	}
	seg.size.Store(size)
	fail := func(err error) (*segment, bool, error) {
		if created != nil {
			created.Close()
		}
		return nil, false, err
	}

	idxPath := filepath.Join(dir, segmentName(base, indexSuffix))
	tidxPath := filepath.Join(dir, segmentName(base, timeIndexSuffix))
	// A missing index beside a non-empty log must be rebuilt: an empty
	// fresh index would silently make every lookup scan from position 0,
	// and a missing time index would lose the segment's max timestamp.
	for _, p := range []string{idxPath, tidxPath} {
		if _, serr := os.Stat(p); errors.Is(serr, os.ErrNotExist) && size > 0 {
			needRebuild = true
		}
	}
	seg.offIdx, err = index.OpenOffsetIndex(idxPath, base, cfg.SegmentIndexBytes)
	if errors.Is(err, index.ErrCorrupt) {
		needRebuild = true
		if err = os.Remove(idxPath); err == nil {
			seg.offIdx, err = index.OpenOffsetIndex(idxPath, base, cfg.SegmentIndexBytes)
		}
	}
	if err != nil {
		return fail(fmt.Errorf("open offset index of segment %d: %w", base, err))
	}
	seg.timeIdx, err = index.OpenTimeIndex(tidxPath, base, cfg.SegmentIndexBytes)
	if errors.Is(err, index.ErrCorrupt) {
		needRebuild = true
		if err = os.Remove(tidxPath); err == nil {
			seg.timeIdx, err = index.OpenTimeIndex(tidxPath, base, cfg.SegmentIndexBytes)
		}
	}
	if err != nil {
		seg.offIdx.Close()
		return fail(fmt.Errorf("open time index of segment %d: %w", base, err))
	}
	if !needRebuild && (seg.offIdx.SanityCheck(size) != nil || seg.timeIdx.SanityCheck() != nil) {
		needRebuild = true
	}
	if !needRebuild {
		// Time-index entries must name offsets inside this segment.
		if _, off := seg.timeIdx.LastEntry(); off < base || off-base > math.MaxInt32 {
			needRebuild = true
		}
	}
	if needRebuild {
		seg.offIdx.Reset()
		seg.timeIdx.Reset()
	} else {
		ts, off := seg.timeIdx.LastEntry()
		seg.maxTs, seg.offOfMaxTs = ts, off
	}
	if created != nil {
		seg.file.adopt(created)
	}
	return seg, needRebuild, nil
}

// logPath is the .log's current path.
func (s *segment) logPath() string { return s.file.name() }

// timestamps returns the segment's largest timestamp and its offset.
func (s *segment) timestamps() (int64, int64) {
	s.tsMu.Lock()
	defer s.tsMu.Unlock()
	return s.maxTs, s.offOfMaxTs
}

// noteTimestamp records a batch's max timestamp (appender only).
func (s *segment) noteTimestamp(ts, lastOffset int64) {
	s.tsMu.Lock()
	if ts > s.maxTs {
		s.maxTs, s.offOfMaxTs = ts, lastOffset
	}
	s.tsMu.Unlock()
}

// resetTimestamps forgets the timestamps (before a rescan).
func (s *segment) resetTimestamps() {
	s.tsMu.Lock()
	s.maxTs, s.offOfMaxTs = -1, s.base
	s.tsMu.Unlock()
}

// indexBatch maintains the sparse indexes for a batch at pos, exactly as
// Append does, so that recovery rebuilds the same entries. ErrFull is
// ignored: the indexes are sparse, a missing entry only lengthens scans,
// and Append rolls before an index fills.
func (s *segment) indexBatch(h recordbatch.Header, maxTs int64, pos int64, interval int) {
	if s.bytesSinceIndex > int64(interval) {
		_ = s.offIdx.Append(h.BaseOffset, pos)
		ts, off := s.timestamps()
		if ts < maxTs {
			ts, off = maxTs, h.LastOffset()
		}
		_ = s.timeIdx.MaybeAppend(ts, off)
		s.bytesSinceIndex = 0
	}
	s.noteTimestamp(maxTs, h.LastOffset())
	s.bytesSinceIndex += h.Size()
}

// indexFull reports whether the next append must go to a new segment.
func (s *segment) indexFull() bool {
	return s.offIdx.Full() || s.timeIdx.Full() || s.timeIdx.Len() >= s.maxTimeEntries-1
}

// sealIndexes writes the final time-index entry (the segment's max
// timestamp, which must survive a restart for retention and time lookups).
func (s *segment) sealIndexes() {
	ts, off := s.timestamps()
	if ts >= 0 {
		_ = s.timeIdx.MaybeAppend(ts, off)
	}
}

// flush fsyncs the .log and writes and fsyncs both indexes.
func (s *segment) flush() error {
	if err := s.file.sync(); err != nil {
		return err
	}
	if err := s.offIdx.Flush(); err != nil {
		return fmt.Errorf("flush offset index of segment %d: %w", s.base, err)
	}
	if err := s.timeIdx.Flush(); err != nil {
		return fmt.Errorf("flush time index of segment %d: %w", s.base, err)
	}
	return nil
}

// close writes the indexes (no fsync) and retires the .log: its
// descriptor is closed now, or by the last reader still holding it.
func (s *segment) close() error {
	err := errors.Join(s.offIdx.Close(), s.timeIdx.Close(), s.file.close())
	if err != nil {
		return fmt.Errorf("close segment %d: %w", s.base, err)
	}
	return nil
}

// renameDeleted moves the segment's files to *.deleted. An open
// descriptor stays valid and a reopen finds the new name, so readers in
// flight finish undisturbed.
func (s *segment) renameDeleted() error {
	if err := s.file.rename(s.logPath() + deletedSuffix); err != nil {
		return fmt.Errorf("rename segment %d for deletion: %w", s.base, err)
	}
	if err := s.offIdx.Rename(s.offIdx.Path() + deletedSuffix); err != nil {
		return fmt.Errorf("rename offset index %d for deletion: %w", s.base, err)
	}
	if err := s.timeIdx.Rename(s.timeIdx.Path() + deletedSuffix); err != nil {
		return fmt.Errorf("rename time index %d for deletion: %w", s.base, err)
	}
	return nil
}

// closeAndRemove closes the segment and removes its files.
func (s *segment) closeAndRemove() error {
	cerr := s.close()
	var rerr error
	for _, p := range []string{s.logPath(), s.offIdx.Path(), s.timeIdx.Path()} {
		if err := os.Remove(p); err != nil && !errors.Is(err, os.ErrNotExist) {
			rerr = errors.Join(rerr, fmt.Errorf("remove %s: %w", p, err))
		}
	}
	return errors.Join(cerr, rerr)
}

// readHeader reads the batch header at pos, given the segment size end.
// ok=false (no error) means no whole header fits before end.
func readHeader(f *os.File, pos, end int64, buf []byte) (h recordbatch.Header, ok bool, err error) {
	if pos+recordbatch.HeaderSize > end {
		return h, false, nil
	}
	if _, err := f.ReadAt(buf[:recordbatch.HeaderSize], pos); err != nil {
		if errors.Is(err, io.EOF) {
			return h, false, nil
		}
		return h, false, fmt.Errorf("read batch header at %d: %w", pos, err)
	}
	h, err = recordbatch.ParseHeader(buf[:recordbatch.HeaderSize])
	if err != nil {
		return h, false, fmt.Errorf("batch header at %d: %w", pos, err)
	}
	return h, true, nil
}

// scanHeaders calls fn for each batch header in [pos, end) of the
// segment, reading only headers (pread) under one use of its descriptor.
// fn returns false to stop.
func (s *segment) scanHeaders(pos, end int64, fn func(pos int64, h recordbatch.Header) bool) error {
	f, err := s.file.acquire()
	if err != nil {
		return err
	}
	defer s.file.release()
	return scanHeaders(f, pos, end, fn)
}

// scanHeaders calls fn for each batch header in [pos, end) of f, reading
// only headers (pread). fn returns false to stop.
func scanHeaders(f *os.File, pos, end int64, fn func(pos int64, h recordbatch.Header) bool) error {
	var buf [recordbatch.HeaderSize]byte
	for {
		h, ok, err := readHeader(f, pos, end, buf[:])
		if err != nil || !ok {
			return err
		}
		if pos+h.Size() > end {
			return nil
		}
		if !fn(pos, h) {
			return nil
		}
		pos += h.Size()
	}
}
