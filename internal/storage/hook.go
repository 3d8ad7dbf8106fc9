package storage

import (
	"fmt"
	"os"
	"path/filepath"

	"github.com/weir-project/weir/internal/storage/recordbatch"
)

// SetProducerStateHook installs the hook and replays batches from offset
// `from` (the hook's loaded snapshot offset) to the log end into it.
func (l *Log) SetProducerStateHook(h ProducerStateHook, from int64) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed {
		return ErrClosed
	}
	l.hook = h
	if h == nil {
		return nil
	}
	return l.replayLocked(max(from, l.logStart.Load()))
}

// resetHookLocked tells the hook the log now ends at end, then replays
// from the latest snapshot at or below end, which is where the hook's
// TruncateTo reloads its state from (or from the log start if none).
func (l *Log) resetHookLocked(end int64) error {
	if l.hook == nil {
		return nil
	}
	l.hook.TruncateTo(end)
	from := l.logStart.Load()
	if snap, ok := latestSnapshot(l.dir, end); ok && snap > from {
		from = snap
	}
	return l.replayLocked(from)
}

// latestSnapshot finds the greatest <offset>.snapshot with offset <= end.
func latestSnapshot(dir string, end int64) (int64, bool) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return 0, false
	}
	best, found := int64(-1), false
	for _, e := range entries {
		if off, ok := parseSegmentName(e.Name(), snapshotSuffix); ok && off <= end && off > best {
			best, found = off, true
		}
	}
	return best, found
}

// replayLocked feeds the hook every batch with last offset >= from.
func (l *Log) replayLocked(from int64) error {
	leo := l.logEnd.Load()
	segs := l.segments()
	for i := max(floorSegment(segs, from), 0); i < len(segs); i++ {
		s := segs[i]
		_, pos := s.offIdx.Lookup(from)
		err := s.scanHeaders(pos, s.size.Load(), func(_ int64, h recordbatch.Header) bool {
			if h.BaseOffset >= leo {
				return false
			}
			if h.LastOffset() >= from {
				l.hook.OnBatch(batchInfo(h))
			}
			return true
		})
		if err != nil {
			return fmt.Errorf("replay %s into producer state: %w", filepath.Base(s.logPath()), err)
		}
	}
	return nil
}
