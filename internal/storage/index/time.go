package index

import (
	"encoding/binary"
	"fmt"
	"sort"
	"sync"
)

const timeEntrySize = 12

// TimeIndex maps timestamps to offsets. Safe for one writer and concurrent readers.
type TimeIndex struct {
	mu   sync.RWMutex
	base int64
	e    entries
}

// OpenTimeIndex opens or creates the file; maxBytes/12 entries. A file
// whose size is not a multiple of 12, whose timestamps are not strictly
// increasing or whose offsets decrease fails with ErrCorrupt.
func OpenTimeIndex(path string, baseOffset int64, maxBytes int) (*TimeIndex, error) {
	e, err := load(path, timeEntrySize, maxBytes)
	if err != nil {
		return nil, err
	}
	t := &TimeIndex{base: baseOffset, e: e}
	if err := t.check(); err != nil {
		return nil, fmt.Errorf("time index %s: %w", path, err)
	}
	return t, nil
}

// at decodes entry i as (timestamp, relative offset).
func (t *TimeIndex) at(i int) (int64, int32) {
	b := t.e.entry(i)
	return int64(binary.BigEndian.Uint64(b)), int32(binary.BigEndian.Uint32(b[8:]))
}

func (t *TimeIndex) check() error {
	for i := range t.e.len() {
		ts, rel := t.at(i)
		if rel < 0 {
			return fmt.Errorf("%w: entry %d: negative relative offset %d", ErrCorrupt, i, rel)
		}
		if i == 0 {
			continue
		}
		prevTS, prevRel := t.at(i - 1)
		if ts <= prevTS {
			return fmt.Errorf("%w: entry %d: timestamp %d not above %d", ErrCorrupt, i, ts, prevTS)
		}
		if rel < prevRel {
			return fmt.Errorf("%w: entry %d: relative offset %d below %d", ErrCorrupt, i, rel, prevRel)
		}
	}
	return nil
}

// MaybeAppend adds (ts, offset) if ts is greater than the last entry's
// timestamp (and offset not below the last entry's); otherwise does
// nothing. ErrFull when full.
func (t *TimeIndex) MaybeAppend(ts int64, offset int64) error {
	t.mu.Lock()
	defer t.mu.Unlock()
	if n := t.e.len(); n > 0 {
		lastTS, lastRel := t.at(n - 1)
		if ts <= lastTS || offset < t.base+int64(lastRel) {
			return nil
		}
	}
	if t.e.full() {
		return fmt.Errorf("time index %s: %w (%d entries)", t.e.path, ErrFull, t.e.len())
	}
	rel, err := relative(t.base, offset)
	if err != nil {
		return fmt.Errorf("time index %s: append: %w", t.e.path, err)
	}
	t.e.buf = binary.BigEndian.AppendUint64(t.e.buf, uint64(ts))
	t.e.buf = binary.BigEndian.AppendUint32(t.e.buf, uint32(rel))
	return nil
}

// Lookup returns the offset of the greatest entry with timestamp <= ts, or
// baseOffset if there is none. The caller scans the log forward from there
// for the first batch whose max timestamp >= ts.
func (t *TimeIndex) Lookup(ts int64) (offset int64) {
	t.mu.RLock()
	defer t.mu.RUnlock()
	i := sort.Search(t.e.len(), func(i int) bool {
		entryTS, _ := t.at(i)
		return entryTS > ts
	})
	if i == 0 {
		return t.base
	}
	_, rel := t.at(i - 1)
	return t.base + int64(rel)
}

// LastEntry returns the last entry, or (-1, baseOffset) if empty.
func (t *TimeIndex) LastEntry() (ts int64, offset int64) {
	t.mu.RLock()
	defer t.mu.RUnlock()
	n := t.e.len()
	if n == 0 {
		return -1, t.base
	}
	ts, rel := t.at(n - 1)
	return ts, t.base + int64(rel)
}

// TruncateTo drops every entry with offset >= offset.
func (t *TimeIndex) TruncateTo(offset int64) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.e.truncate(sort.Search(t.e.len(), func(i int) bool {
		_, rel := t.at(i)
		return t.base+int64(rel) >= offset
	}))
}

func (t *TimeIndex) Reset() {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.e.truncate(0)
}

func (t *TimeIndex) Len() int {
	t.mu.RLock()
	defer t.mu.RUnlock()
	return t.e.len()
}

func (t *TimeIndex) Full() bool {
	t.mu.RLock()
	defer t.mu.RUnlock()
	return t.e.full()
}

func (t *TimeIndex) Path() string {
	t.mu.RLock()
	defer t.mu.RUnlock()
	return t.e.path
}

// SanityCheck reports ErrCorrupt if the entries are out of order.
func (t *TimeIndex) SanityCheck() error {
	t.mu.RLock()
	defer t.mu.RUnlock()
	if err := t.check(); err != nil {
		return fmt.Errorf("time index %s: %w", t.e.path, err)
	}
	return nil
}

// Flush writes the entries to the file (trimmed to their size) and
// fsyncs it, without holding the index's lock for the fsync.
func (t *TimeIndex) Flush() error {
	return t.e.flush(&t.mu)
}

// Rename moves the file; later flushes use the new path.
func (t *TimeIndex) Rename(newPath string) error {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.e.rename(newPath)
}

// Close writes the entries to the file (no fsync) and releases it.
func (t *TimeIndex) Close() error {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.e.write(false, true)
}
