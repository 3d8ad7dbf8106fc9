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
