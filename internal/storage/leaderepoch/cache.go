// Package leaderepoch keeps a partition's leader epoch history (Kafka's
// LeaderEpochFileCache): for each leader epoch, the first offset written in
// it. Replication uses it to answer OffsetsForLeaderEpoch and to truncate a
// follower to the point where its log and the leader's agree (KIP-101/279).
//
// Assign and the truncations write leader-epoch-checkpoint (with its
// fsync) before they return. Begin changes only memory: the file catches
// up at the next Flush or writing change. The log calls Begin for the
// epochs of the batches it appends and Flush before its recovery point
// passes their offsets (and before a clean shutdown): after a crash,
// everything from the recovery point on is rescanned and the epochs of
// its batches assigned again, so the file need only be current below it
// (storage/doc.go, Leader epochs).
package leaderepoch

import (
	"fmt"
	"math"
	"slices"
	"sort"
	"sync"

	"github.com/weir-project/weir/internal/storage/checkpoint"
)

// Undefined is Kafka's UNDEFINED_EPOCH / UNDEFINED_EPOCH_OFFSET (-1).
const Undefined = -1

// Cache is safe for concurrent use.
type Cache struct {
	// writeMu serialises writes of the file, so that a write never
	// replaces a newer one; it is taken before mu. Flush holds only
	// writeMu while it writes, so readers and Begin go on meanwhile.
	writeMu sync.Mutex
	mu      sync.RWMutex
	path    string
	// entries has strictly increasing epochs and start offsets.
	entries []checkpoint.EpochEntry
	// onDisk is what the file holds (nil: nothing, or no file). Every
	// write is skipped when the file already holds what it would write,
	// so a change undone before it was written (a truncation of an entry
	// Begin kept in memory) costs no write either.
	onDisk []checkpoint.EpochEntry
}

// Open loads path (missing = empty). Entries are replayed through Assign's
// rules, so a hand-edited or non-monotonic file yields a consistent cache.
func Open(path string) (*Cache, error) {
	loaded, err := checkpoint.ReadEpochs(path)
	if err != nil {
		return nil, fmt.Errorf("open leader epoch cache: %w", err)
	}
	c := &Cache{path: path}
	for _, e := range loaded {
		c.assign(e)
	}
	// As loaded: a file that replaying changed is rewritten at the next
	// write (its entries differ from onDisk).
	c.onDisk = loaded
	return c, nil
}

// Assign records that epoch starts at startOffset. As in Kafka, the newest
// assignment wins: it is a no-op when epoch is the latest and startOffset
// not below its start; otherwise every entry with an epoch >= epoch or a
// start offset >= startOffset is dropped and (epoch, startOffset) appended,
// keeping the cache consistent with a log that has just been appended to.
// Negative arguments are an error. Persists on change.
func (c *Cache) Assign(epoch int32, startOffset int64) error {
	if epoch < 0 || startOffset < 0 {
		return fmt.Errorf("leader epoch cache %s: assign epoch %d at offset %d: negative", c.Path(), epoch, startOffset)
	}
	c.writeMu.Lock()
	defer c.writeMu.Unlock()
	c.mu.Lock()
	defer c.mu.Unlock()
	c.assign(checkpoint.EpochEntry{Epoch: epoch, StartOffset: startOffset})
	return c.persist()
}

// Begin records that epoch starts at startOffset in memory only: the
// file is written by the next Flush, Assign or truncation. A leader calls
// it when it takes over (the epoch starts at the log end, with no record
// yet), and the log for the epoch of each batch it appends, so that
// taking the lead of thousands of partitions, or the first Produce to
// each of them after that, writes no file: the log flushes the cache
// before its recovery point passes the epoch's start (doc above). The
// entry serves OffsetsForLeaderEpoch at once, from memory.
func (c *Cache) Begin(epoch int32, startOffset int64) error {
	if epoch < 0 || startOffset < 0 {
		return fmt.Errorf("leader epoch cache %s: begin epoch %d at offset %d: negative", c.Path(), epoch, startOffset)
	}
	e := checkpoint.EpochEntry{Epoch: epoch, StartOffset: startOffset}
	c.mu.RLock()
	same := !c.changes(e)
	c.mu.RUnlock()
	if same { // the common case: a batch of the current epoch
		return nil
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.assign(e)
	return nil
}

// Flush writes the file if it lags the entries.
func (c *Cache) Flush() error { return c.FlushBelow(math.MaxInt64) }

// FlushBelow writes the entries that start below end (a log's end: an
// epoch with no record yet needs no durable entry; if the log gets one,
// the next flush writes it) if the file does not hold exactly those. The
// entries are copied under the lock and written outside it (under
// writeMu only), so Begin and readers do not wait for the fsync.
func (c *Cache) FlushBelow(end int64) error { return c.writeBelow(end, checkpoint.WriteEpochs) }

// ReplaceBelow writes like FlushBelow without the fsyncs, for a log
// closing at shutdown: the caller makes the whole filesystem durable
// afterwards (syncfs) before anything relies on the file.
func (c *Cache) ReplaceBelow(end int64) error {
	return c.writeBelow(end, checkpoint.ReplaceEpochs)
}

func (c *Cache) writeBelow(end int64, write func(string, []checkpoint.EpochEntry) error) error {
	c.writeMu.Lock()
	defer c.writeMu.Unlock()
	c.mu.RLock()
	n := sort.Search(len(c.entries), func(i int) bool { return c.entries[i].StartOffset >= end })
	if slices.Equal(c.entries[:n], c.onDisk) {
		c.mu.RUnlock()
		return nil
	}
	entries := append([]checkpoint.EpochEntry(nil), c.entries[:n]...)
	path := c.path
	c.mu.RUnlock()
	if err := write(path, entries); err != nil {
		return fmt.Errorf("persist leader epoch cache: %w", err)
	}
	c.mu.Lock()
	c.onDisk = entries
	c.mu.Unlock()
	return nil
}

// Dirty reports whether the file lags the entries.
func (c *Cache) Dirty() bool {
	c.mu.RLock()
	defer c.mu.RUnlock()
	return !slices.Equal(c.entries, c.onDisk)
}

// changes reports whether assign(e) would change the entries: not when e
// is the latest epoch at or after its start.
func (c *Cache) changes(e checkpoint.EpochEntry) bool {
	n := len(c.entries)
	return n == 0 || e.Epoch != c.entries[n-1].Epoch || e.StartOffset < c.entries[n-1].StartOffset
}

// assign applies Assign's rules and reports whether anything changed.
func (c *Cache) assign(e checkpoint.EpochEntry) bool {
	if !c.changes(e) {
		return false
	}
	keep := len(c.entries)
	for keep > 0 && (c.entries[keep-1].Epoch >= e.Epoch || c.entries[keep-1].StartOffset >= e.StartOffset) {
		keep--
	}
	c.entries = append(c.entries[:keep:keep], e) // never into onDisk's array
	return true
}

// Latest returns the latest epoch and its start offset; ok=false if empty.
func (c *Cache) Latest() (epoch int32, startOffset int64, ok bool) {
	c.mu.RLock()
	defer c.mu.RUnlock()
	if len(c.entries) == 0 {
		return Undefined, Undefined, false
	}
	last := c.entries[len(c.entries)-1]
	return last.Epoch, last.StartOffset, true
}

// EndOffsetFor answers OffsetsForLeaderEpoch for a requested epoch given
// the log end offset, with Kafka's rules (LeaderEpochFileCache.endOffsetFor):
//
//   - requested == latest epoch: (latest, logEndOffset);
//   - otherwise the largest epoch <= requested and the start offset of the
//     first epoch after requested;
//   - requested older than every entry: (requested, start offset of the
//     first entry), since that history is gone and the follower must
//     replicate from the leader's start;
//   - requested newer than every entry, requested == -1, or an empty
//     cache: (-1, -1).
func (c *Cache) EndOffsetFor(epoch int32, logEndOffset int64) (foundEpoch int32, endOffset int64) {
	c.mu.RLock()
	defer c.mu.RUnlock()
	n := len(c.entries)
	if epoch == Undefined || n == 0 {
		return Undefined, Undefined
	}
	if c.entries[n-1].Epoch == epoch {
		return epoch, logEndOffset
	}
	// higher is the first entry with an epoch above the requested one.
	higher := sort.Search(n, func(i int) bool { return c.entries[i].Epoch > epoch })
	switch higher {
	case n:
		return Undefined, Undefined
	case 0:
		return epoch, c.entries[0].StartOffset
	default:
		return c.entries[higher-1].Epoch, c.entries[higher].StartOffset
	}
}

// TruncateFromEnd removes entries with startOffset >= offset (log truncated
// to offset). A negative offset is ignored, as in Kafka.
func (c *Cache) TruncateFromEnd(offset int64) error {
	if offset < 0 {
		return nil
	}
	c.writeMu.Lock()
	defer c.writeMu.Unlock()
	c.mu.Lock()
	defer c.mu.Unlock()
	keep := sort.Search(len(c.entries), func(i int) bool { return c.entries[i].StartOffset >= offset })
	if keep == len(c.entries) {
		return nil
	}
	c.entries = c.entries[:keep]
	return c.persist()
}

// TruncateFromStart handles a new log start offset: entries wholly below it
// are dropped and the earliest kept entry's start offset is raised to it.
// As in Kafka, the entry whose epoch covers offset is the one kept: the
// last entry starting at or before offset.
func (c *Cache) TruncateFromStart(offset int64) error {
	c.writeMu.Lock()
	defer c.writeMu.Unlock()
	c.mu.Lock()
	defer c.mu.Unlock()
	// covering+1 entries start at or before offset; the last of them is kept.
	covering := sort.Search(len(c.entries), func(i int) bool { return c.entries[i].StartOffset > offset }) - 1
	if covering < 0 || (covering == 0 && c.entries[0].StartOffset == offset) {
		return nil
	}
	kept := append([]checkpoint.EpochEntry(nil), c.entries[covering:]...)
	kept[0].StartOffset = offset
	c.entries = kept
	return c.persist()
}

// Entries returns a copy of the entries, oldest first.
func (c *Cache) Entries() []checkpoint.EpochEntry {
	c.mu.RLock()
	defer c.mu.RUnlock()
	return append([]checkpoint.EpochEntry(nil), c.entries...)
}

// SetPath changes the backing file path (used when a partition dir is
// renamed for deletion). Delete-safety is the caller's business.
func (c *Cache) SetPath(path string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.path = path
}

// Path returns the backing file path.
func (c *Cache) Path() string {
	c.mu.RLock()
	defer c.mu.RUnlock()
	return c.path
}

// persist writes the entries unless the file holds them already; the
// caller holds writeMu and mu.
func (c *Cache) persist() error {
	if slices.Equal(c.entries, c.onDisk) {
		return nil
	}
	entries := append([]checkpoint.EpochEntry(nil), c.entries...)
	if err := checkpoint.WriteEpochs(c.path, entries); err != nil {
		return fmt.Errorf("persist leader epoch cache: %w", err)
	}
	c.onDisk = entries
	return nil
}
