// Package checkpoint reads and writes Kafka's small text checkpoint files:
//
//	recovery-point-offset-checkpoint, log-start-offset-checkpoint,
//	replication-offset-checkpoint (one per log dir):
//	    0                 version
//	    2                 entry count
//	    orders 0 1500     topic partition offset
//	    orders 1 220
//
//	leader-epoch-checkpoint (one per partition):
//	    0                 version
//	    2                 entry count
//	    0 0               epoch startOffset
//	    3 1470
//
// Every write goes to <name>.tmp, is fsynced, renamed over the old file, and
// the directory is fsynced, so a crash leaves the old or the new file whole.
package checkpoint

import "errors"

// ErrMalformed wraps every parse failure; the message names the line.
var ErrMalformed = errors.New("malformed checkpoint file")

// TopicPartition names a partition.
type TopicPartition struct {
	Topic     string
	Partition int32
}

// WriteOffsets atomically writes an offset checkpoint file.
func WriteOffsets(path string, offsets map[TopicPartition]int64) error { panic("TODO") }

// ReadOffsets reads an offset checkpoint file; a missing file is an empty map.
func ReadOffsets(path string) (map[TopicPartition]int64, error) { panic("TODO") }

// ParseOffsets parses the contents of an offset checkpoint file.
func ParseOffsets(data []byte) (map[TopicPartition]int64, error) { panic("TODO") }

// EpochEntry is one line of leader-epoch-checkpoint.
type EpochEntry struct {
	Epoch       int32
	StartOffset int64
}

// WriteEpochs atomically writes a leader-epoch-checkpoint file.
func WriteEpochs(path string, entries []EpochEntry) error { panic("TODO") }

// ReadEpochs reads a leader-epoch-checkpoint; a missing file is no entries.
func ReadEpochs(path string) ([]EpochEntry, error) { panic("TODO") }

// ParseEpochs parses the contents of a leader-epoch-checkpoint file.
func ParseEpochs(data []byte) ([]EpochEntry, error) { panic("TODO") }

// WriteFileAtomic writes data to path via path.tmp, fsync, rename, dir fsync.
func WriteFileAtomic(path string, data []byte) error { panic("TODO") }
