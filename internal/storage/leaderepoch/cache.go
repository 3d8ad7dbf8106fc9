// Package leaderepoch keeps a partition's leader epoch history (Kafka's
// LeaderEpochFileCache): for each leader epoch, the first offset written in
// it. Replication uses it to answer OffsetsForLeaderEpoch and to truncate a
// follower to the point where its log and the leader's agree (KIP-101/279).
// It is persisted in leader-epoch-checkpoint on every change.
package leaderepoch

import "github.com/weir-project/weir/internal/storage/checkpoint"

// Cache is safe for concurrent use.
type Cache struct{}

// Open loads path (missing = empty).
func Open(path string) (*Cache, error) { panic("TODO") }

// Assign records that epoch starts at startOffset. Ignored if epoch is not
// newer than the latest (same epoch: no-op) or startOffset is below the
// latest entry's start offset. Persists on change.
func (c *Cache) Assign(epoch int32, startOffset int64) error { panic("TODO") }

// Latest returns the latest epoch and its start offset; ok=false if empty.
func (c *Cache) Latest() (epoch int32, startOffset int64, ok bool) { panic("TODO") }

// EndOffsetFor answers OffsetsForLeaderEpoch for a requested epoch given
// the log end offset: the largest epoch <= requested and the start offset
// of the next epoch after it (or logEndOffset if it is the latest). If the
// requested epoch is older than every entry: (-1, -1). Empty cache: (-1, -1).
func (c *Cache) EndOffsetFor(epoch int32, logEndOffset int64) (foundEpoch int32, endOffset int64) {
	panic("TODO")
}

// TruncateFromEnd removes entries with startOffset >= offset (log truncated to offset).
func (c *Cache) TruncateFromEnd(offset int64) error { panic("TODO") }

// TruncateFromStart handles a new log start offset: entries wholly below it
// are dropped and the earliest kept entry's start offset is raised to it.
func (c *Cache) TruncateFromStart(offset int64) error { panic("TODO") }

// Entries returns a copy of the entries, oldest first.
func (c *Cache) Entries() []checkpoint.EpochEntry { panic("TODO") }

// Rename changes the backing file path (used when a partition dir is
// renamed for deletion). Delete-safety is the caller's business.
func (c *Cache) SetPath(path string) { panic("TODO") }
