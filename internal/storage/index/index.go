// Package index implements a segment's two sparse lookup files, in Kafka's
// formats (big-endian, no header, no checksum: they are rebuilt from the
// .log when in doubt):
//
//	.index      8-byte entries: int32 offset relative to the segment base,
//	            int32 byte position in the .log
//	.timeindex  12-byte entries: int64 timestamp (ms), int32 relative offset;
//	            timestamps strictly increasing
//
// Entries live in memory; the file is written on Flush and Close, so an
// index file is only trusted after a clean shutdown or up to the recovery
// point (recovery rebuilds the rest).
package index

import "errors"

// ErrFull: the index has reached its maximum entry count; the segment must roll.
var ErrFull = errors.New("index full")

// ErrCorrupt: an index file's contents are impossible (unsorted, out of
// range, wrong size); callers rebuild it from the log.
var ErrCorrupt = errors.New("corrupt index")

// OffsetIndex maps offsets to .log positions. Safe for one writer and
// concurrent readers.
type OffsetIndex struct{}

// OpenOffsetIndex opens or creates the file. maxBytes bounds its size
// (segment.index.bytes, default 10 MiB); entries = maxBytes/8.
// A file whose size is not a multiple of 8 or whose entries are not
// strictly increasing fails with ErrCorrupt (the file is left as is).
func OpenOffsetIndex(path string, baseOffset int64, maxBytes int) (*OffsetIndex, error) {
	panic("TODO")
}

// Append adds an entry; offset must exceed the last entry's offset and pos
// must not go below the last position (else an error). ErrFull when full.
func (x *OffsetIndex) Append(offset int64, pos int64) error { panic("TODO") }

// Lookup returns the greatest entry with entry offset <= offset, or
// (baseOffset, 0) if there is none.
func (x *OffsetIndex) Lookup(offset int64) (entryOffset int64, pos int64) { panic("TODO") }

// TruncateTo drops every entry with offset >= offset.
func (x *OffsetIndex) TruncateTo(offset int64) { panic("TODO") }

// Reset drops every entry.
func (x *OffsetIndex) Reset() { panic("TODO") }

func (x *OffsetIndex) Len() int          { panic("TODO") }
func (x *OffsetIndex) Full() bool        { panic("TODO") }
func (x *OffsetIndex) BaseOffset() int64 { panic("TODO") }
func (x *OffsetIndex) Path() string      { panic("TODO") }

// LastEntry returns the last entry, or (baseOffset, 0) if empty.
func (x *OffsetIndex) LastEntry() (offset int64, pos int64) { panic("TODO") }

// SanityCheck reports ErrCorrupt if any position is beyond logSize.
func (x *OffsetIndex) SanityCheck(logSize int64) error { panic("TODO") }

// Flush writes the entries to the file (trimmed to their size) and fsyncs.
func (x *OffsetIndex) Flush() error { panic("TODO") }

// Rename moves the file (e.g. to *.deleted); later flushes use the new path.
func (x *OffsetIndex) Rename(newPath string) error { panic("TODO") }

// Close writes the entries to the file (no fsync) and releases it.
func (x *OffsetIndex) Close() error { panic("TODO") }

// TimeIndex maps timestamps to offsets. Safe for one writer and concurrent readers.
type TimeIndex struct{}

// OpenTimeIndex opens or creates the file; maxBytes/12 entries.
func OpenTimeIndex(path string, baseOffset int64, maxBytes int) (*TimeIndex, error) {
	panic("TODO")
}

// MaybeAppend adds (ts, offset) if ts is greater than the last entry's
// timestamp (and offset not below the last entry's); otherwise does
// nothing. ErrFull when full.
func (t *TimeIndex) MaybeAppend(ts int64, offset int64) error { panic("TODO") }

// Lookup returns the offset of the greatest entry with timestamp <= ts, or
// baseOffset if there is none. The caller scans the log forward from there
// for the first batch whose max timestamp >= ts.
func (t *TimeIndex) Lookup(ts int64) (offset int64) { panic("TODO") }

// LastEntry returns the last entry, or (-1, baseOffset) if empty.
func (t *TimeIndex) LastEntry() (ts int64, offset int64) { panic("TODO") }

// TruncateTo drops every entry with offset >= offset.
func (t *TimeIndex) TruncateTo(offset int64) { panic("TODO") }

func (t *TimeIndex) Reset()                      { panic("TODO") }
func (t *TimeIndex) Len() int                    { panic("TODO") }
func (t *TimeIndex) Full() bool                  { panic("TODO") }
func (t *TimeIndex) Path() string                { panic("TODO") }
func (t *TimeIndex) SanityCheck() error          { panic("TODO") }
func (t *TimeIndex) Flush() error                { panic("TODO") }
func (t *TimeIndex) Rename(newPath string) error { panic("TODO") }
func (t *TimeIndex) Close() error                { panic("TODO") }
