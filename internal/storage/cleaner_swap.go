package storage

// The crash-safe swap of a cleaned segment for the group of segments it
// replaces (Kafka's replaceSegments), and its completion at load.
//
// In swapIn, under the log's writer lock, with the new segment written and
// fsynced as <base>.{log,index,timeindex}.cleaned:
//
//  1. rename the new files *.cleaned -> *.swap (indexes, then the .log);
//     fsync the directory. From here the new segment is committed.
//  2. rename every old segment of the group to *.deleted, indexes before
//     the .log; fsync the directory.
//  3. rename the new files *.swap -> final names (indexes, then the .log);
//     fsync the directory; publish the new segment list. The old segments
//     stay readable until file.delete.delay.ms, so readers holding them
//     finish.
//
// At load (recoverSwaps, before anything else looks at the directory):
//
//   - *.cleaned files are removed: the swap never began, the old segments
//     are whole.
//   - index *.swap files are removed (the indexes are rebuilt from the log).
//   - each <base>.log.swap is read for its last offset; every .log, .index
//     and .timeindex of a segment whose base lies in [base, last offset]
//     (the old group, whichever of its files are left) is removed, and the
//     swap file renamed <base>.log. The cleaner always keeps the group's
//     last batch, so [base, last offset] is exactly the group's range.
//   - *.deleted files are then removed by the ordinary load.
//
// A crash before step 1 leaves the old files; from step 1 on, the new.

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/weir-project/weir/internal/storage/recordbatch"
)

const swapSuffix = ".swap"

// Swap stages, named for crash tests (CleanOptions.stage).
const (
	stagePlanned   = "planned"    // pass planned, no segment read yet (Clean)
	stageCleaned   = "cleaned"    // new segment fsynced as *.cleaned
	stageSwap      = "swap"       // renamed *.swap
	stageOldPartly = "old-partly" // first old segment renamed *.deleted
	stageOld       = "old"        // every old segment renamed *.deleted
	stageDone      = "done"       // new segment under its final name
)

func callStage(stage func(string), name string) {
	if stage != nil {
		stage(name)
	}
}

// swapIn replaces group (still with the sizes it was cleaned at, and no
// truncation since the log's truncation count was truncations) by out.
// committed reports that out's files must not be removed: either it is
// published, or a failure after step 1 left the swap for the next load to
// complete (out is then closed, and the log keeps serving the old
// segments from their open handles).
func (l *Log) swapIn(out *segment, group []*segment, sizes []int64, truncations int64, stage func(string)) (committed bool, err error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed {
		return false, ErrClosed
	}
	if l.clean.truncations.Load() != truncations {
		return false, errCleanAborted // a truncated segment may hold new data at its old size
	}
	segs := l.segments()
	a := slices.Index(segs, group[0])
	if a < 0 || a+len(group) >= len(segs) {
		return false, errCleanAborted // retention, truncation or a roll-back made it active
	}
	for i, s := range group {
		if segs[a+i] != s || s.size.Load() != sizes[i] {
			return false, errCleanAborted
		}
	}
	final := func(suffix string) string { return filepath.Join(l.dir, segmentName(out.base, suffix)) }

	// 1. *.cleaned -> *.swap
	if err := out.offIdx.Rename(final(indexSuffix) + swapSuffix); err != nil {
		return false, fmt.Errorf("swap in cleaned segment %d: %w: %w", out.base, ErrStorage, err)
	}
	if err := out.timeIdx.Rename(final(timeIndexSuffix) + swapSuffix); err != nil {
		return false, fmt.Errorf("swap in cleaned segment %d: %w: %w", out.base, ErrStorage, err)
	}
	if err := renameLog(out, final(logSuffix)+swapSuffix); err != nil {
		return false, fmt.Errorf("swap in cleaned segment %d: %w: %w", out.base, ErrStorage, err)
	}
	if err := syncDir(l.dir); err != nil {
		// The rename may or may not be durable: either way is consistent.
		return false, fmt.Errorf("swap in cleaned segment %d: %w: %w", out.base, ErrStorage, err)
	}
	callStage(stage, stageSwap)

	unfinished := func(err error) (bool, error) {
		out.close()
		l.logger.Error("cleaned segment swap interrupted; the next start completes it", "segment", out.base, "err", err)
		return true, fmt.Errorf("swap in cleaned segment %d: %w: %w", out.base, ErrStorage, err)
	}
	// 2. old segments -> *.deleted, indexes first: an old index must never
	// be left under a final name beside the new .log.
	for i, s := range group {
		if err := retireIndexesFirst(s); err != nil {
			return unfinished(err)
		}
		if i == 0 {
			callStage(stage, stageOldPartly)
		}
	}
	if err := syncDir(l.dir); err != nil {
		return unfinished(err)
	}
	callStage(stage, stageOld)

	// 3. *.swap -> final names, the .log last.
	if err := out.offIdx.Rename(final(indexSuffix)); err != nil {
		return unfinished(err)
	}
	if err := out.timeIdx.Rename(final(timeIndexSuffix)); err != nil {
		return unfinished(err)
	}
	if err := renameLog(out, final(logSuffix)); err != nil {
		return unfinished(err)
	}
	if err := syncDir(l.dir); err != nil {
		l.logger.Warn("fsync dir after swapping in cleaned segment", "segment", out.base, "err", err)
	}
	callStage(stage, stageDone)

	next := make([]*segment, 0, len(segs)-len(group)+1)
	next = append(append(append(next, segs[:a]...), out), segs[a+len(group):]...)
	l.setSegments(next)
	l.scheduleRenamed(group, l.config())
	return true, nil
}

// renameLog renames a segment's .log file (its descriptor, if open, stays
// valid; a reopen uses the new name).
func renameLog(s *segment, path string) error {
	return s.file.rename(path)
}

// retireIndexesFirst renames a segment's files to *.deleted, the .log last.
func retireIndexesFirst(s *segment) error {
	if err := s.timeIdx.Rename(s.timeIdx.Path() + deletedSuffix); err != nil {
		return fmt.Errorf("retire time index of segment %d: %w", s.base, err)
	}
	if err := s.offIdx.Rename(s.offIdx.Path() + deletedSuffix); err != nil {
		return fmt.Errorf("retire offset index of segment %d: %w", s.base, err)
	}
	return renameLog(s, s.logPath()+deletedSuffix)
}

// recoverSwaps finishes or undoes cleaner swaps interrupted by a crash (see
// the top of this file). It runs before the directory is loaded.
func (l *Log) recoverSwaps() error {
	entries, err := os.ReadDir(l.dir)
	if err != nil {
		return fmt.Errorf("list partition dir %s: %w", l.dir, err)
	}
	var swaps []int64
	logs := map[int64]bool{}
	for _, e := range entries {
		name := e.Name()
		if e.IsDir() {
			continue
		}
		switch {
		case strings.HasSuffix(name, cleanedSuffix):
			if err := removeFile(filepath.Join(l.dir, name)); err != nil {
				return err
			}
			l.logger.Info("removed unfinished cleaned segment file", "file", name)
		case strings.HasSuffix(name, swapSuffix):
			if b, ok := parseSegmentName(strings.TrimSuffix(name, swapSuffix), logSuffix); ok {
				swaps = append(swaps, b)
				continue
			}
			if err := removeFile(filepath.Join(l.dir, name)); err != nil {
				return err
			}
		default:
			if b, ok := parseSegmentName(name, logSuffix); ok {
				logs[b] = true
			}
		}
	}
	slices.Sort(swaps)
	for _, base := range swaps {
		swapPath := filepath.Join(l.dir, segmentName(base, logSuffix)+swapSuffix)
		last, err := lastOffsetOf(swapPath, base)
		if err != nil {
			return err
		}
		for b := range logs {
			if b < base || b > last {
				continue
			}
			for _, suf := range []string{logSuffix, indexSuffix, timeIndexSuffix} {
				if err := removeFile(filepath.Join(l.dir, segmentName(b, suf))); err != nil {
					return err
				}
			}
			delete(logs, b)
		}
		for _, suf := range []string{indexSuffix, timeIndexSuffix} {
			if err := removeFile(filepath.Join(l.dir, segmentName(base, suf))); err != nil {
				return err
			}
		}
		if err := os.Rename(swapPath, filepath.Join(l.dir, segmentName(base, logSuffix))); err != nil {
			return fmt.Errorf("complete swap of %s: %w", swapPath, err)
		}
		logs[base] = true
		if err := syncDir(l.dir); err != nil {
			return err
		}
		l.logger.Warn("completed an interrupted cleaner swap", "segment", base, "last_offset", last)
	}
	return nil
}

// lastOffsetOf reads the batch headers of a segment file for the last
// offset it holds (base-1 if it holds none). The file was fsynced before
// it was renamed *.swap, so it is whole; a tail that does not parse only
// shortens the range, and ordinary recovery judges the file afterwards.
func lastOffsetOf(path string, base int64) (int64, error) {
	f, err := os.Open(path)
	if err != nil {
		return 0, fmt.Errorf("open %s: %w", path, err)
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return 0, fmt.Errorf("stat %s: %w", path, err)
	}
	last := base - 1
	err = scanHeaders(f, 0, st.Size(), func(_ int64, h recordbatch.Header) bool {
		last = max(last, h.LastOffset())
		return true
	})
	if err != nil {
		return 0, fmt.Errorf("read %s: %w", path, err)
	}
	return last, nil
}

// removeFile removes path; a missing file is fine.
func removeFile(path string) error {
	if err := os.Remove(path); err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("remove %s: %w", path, err)
	}
	return nil
}
