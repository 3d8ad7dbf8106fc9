package index

import (
	"encoding/binary"
	"fmt"
	"sort"
	"sync"
)

const offsetEntrySize = 8

// OffsetIndex maps offsets to .log positions. Safe for one writer and
// concurrent readers.
type OffsetIndex struct {
	mu   sync.RWMutex
	base int64
	e    entries
}

// OpenOffsetIndex opens or creates the file. maxBytes bounds its size
// (segment.index.bytes, default 10 MiB); entries = maxBytes/8.
// A file whose size is not a multiple of 8 or whose entries are not
// strictly increasing fails with ErrCorrupt (the file is left as is).
func OpenOffsetIndex(path string, baseOffset int64, maxBytes int) (*OffsetIndex, error) {
	e, err := load(path, offsetEntrySize, maxBytes)
	if err != nil {
		return nil, err
	}
	x := &OffsetIndex{base: baseOffset, e: e}
	if err := x.check(-1); err != nil {
		return nil, fmt.Errorf("index %s: %w", path, err)
	}
	return x, nil
}

// at decodes entry i as (relative offset, position).
func (x *OffsetIndex) at(i int) (int32, int32) {
	b := x.e.entry(i)
	return int32(binary.BigEndian.Uint32(b)), int32(binary.BigEndian.Uint32(b[4:]))
}

// check verifies that relative offsets are non-negative and strictly
// increasing and positions non-negative and non-decreasing; with
// logSize >= 0, also that every position lies inside the log.
func (x *OffsetIndex) check(logSize int64) error {
	prevRel, prevPos := int32(-1), int32(0)
	for i := range x.e.len() {
		rel, pos := x.at(i)
		switch {
		case rel <= prevRel:
			return fmt.Errorf("%w: entry %d: relative offset %d not above %d", ErrCorrupt, i, rel, prevRel)
		case pos < prevPos:
			return fmt.Errorf("%w: entry %d: position %d below %d", ErrCorrupt, i, pos, prevPos)
		case logSize >= 0 && int64(pos) >= logSize:
			return fmt.Errorf("%w: entry %d: position %d beyond log size %d", ErrCorrupt, i, pos, logSize)
		}
		prevRel, prevPos = rel, pos
	}
	return nil
}

// Append adds an entry; offset must exceed the last entry's offset and pos
// must not go below the last position (else an error). ErrFull when full.
func (x *OffsetIndex) Append(offset int64, pos int64) error {
	x.mu.Lock()
	defer x.mu.Unlock()
	if x.e.full() {
		return fmt.Errorf("index %s: %w (%d entries)", x.e.path, ErrFull, x.e.len())
	}
	rel, err := relative(x.base, offset)
	if err != nil {
		return fmt.Errorf("index %s: append: %w", x.e.path, err)
	}
	if pos < 0 || pos > 1<<31-1 {
		return fmt.Errorf("index %s: append: position %d out of range", x.e.path, pos)
	}
	if n := x.e.len(); n > 0 {
		lastRel, lastPos := x.at(n - 1)
		if rel <= lastRel {
			return fmt.Errorf("index %s: append offset %d not above last %d", x.e.path, offset, x.base+int64(lastRel))
		}
		if int32(pos) < lastPos {
			return fmt.Errorf("index %s: append position %d below last %d", x.e.path, pos, lastPos)
		}
	}
	x.e.buf = binary.BigEndian.AppendUint32(x.e.buf, uint32(rel))
	x.e.buf = binary.BigEndian.AppendUint32(x.e.buf, uint32(pos))
	return nil
}

// Lookup returns the greatest entry with entry offset <= offset, or
// (baseOffset, 0) if there is none.
func (x *OffsetIndex) Lookup(offset int64) (entryOffset int64, pos int64) {
	x.mu.RLock()
	defer x.mu.RUnlock()
	// i is the first entry above offset; the answer is the one before it.
	i := sort.Search(x.e.len(), func(i int) bool {
		rel, _ := x.at(i)
		return x.base+int64(rel) > offset
	})
	if i == 0 {
		return x.base, 0
	}
	rel, p := x.at(i - 1)
	return x.base + int64(rel), int64(p)
}

// TruncateTo drops every entry with offset >= offset.
func (x *OffsetIndex) TruncateTo(offset int64) {
	x.mu.Lock()
	defer x.mu.Unlock()
	x.e.truncate(sort.Search(x.e.len(), func(i int) bool {
		rel, _ := x.at(i)
		return x.base+int64(rel) >= offset
	}))
}

// Reset drops every entry.
func (x *OffsetIndex) Reset() {
	x.mu.Lock()
	defer x.mu.Unlock()
	x.e.truncate(0)
}

func (x *OffsetIndex) Len() int {
	x.mu.RLock()
	defer x.mu.RUnlock()
	return x.e.len()
}

func (x *OffsetIndex) Full() bool {
	x.mu.RLock()
	defer x.mu.RUnlock()
	return x.e.full()
}

func (x *OffsetIndex) BaseOffset() int64 { return x.base }

func (x *OffsetIndex) Path() string {
	x.mu.RLock()
	defer x.mu.RUnlock()
	return x.e.path
}

// LastEntry returns the last entry, or (baseOffset, 0) if empty.
func (x *OffsetIndex) LastEntry() (offset int64, pos int64) {
	x.mu.RLock()
	defer x.mu.RUnlock()
	n := x.e.len()
	if n == 0 {
		return x.base, 0
	}
	rel, p := x.at(n - 1)
	return x.base + int64(rel), int64(p)
}

// SanityCheck reports ErrCorrupt if any position is at or beyond logSize
// (an entry there would point at no batch) or the entries are out of order.
func (x *OffsetIndex) SanityCheck(logSize int64) error {
	x.mu.RLock()
	defer x.mu.RUnlock()
	if err := x.check(max(logSize, 0)); err != nil {
		return fmt.Errorf("index %s: %w", x.e.path, err)
	}
	return nil
}

// Flush writes the entries to the file (trimmed to their size) and
// fsyncs it, without holding the index's lock for the fsync.
func (x *OffsetIndex) Flush() error {
	return x.e.flush(&x.mu)
}

// Rename moves the file (e.g. to *.deleted); later flushes use the new path.
func (x *OffsetIndex) Rename(newPath string) error {
	x.mu.Lock()
	defer x.mu.Unlock()
	return x.e.rename(newPath)
}

// Close writes the entries to the file (no fsync) and releases it.
func (x *OffsetIndex) Close() error {
	x.mu.Lock()
	defer x.mu.Unlock()
	return x.e.write(false, true)
}
