// Package storage is the partition log: Kafka's on-disk layout, append,
// read, roll, flush, crash recovery, truncation, retention and compaction,
// plus the Manager that owns every log in the log dirs.
//
// # Files
//
//	<log.dir>/.kafka_cleanshutdown             present only after a clean Close
//	<log.dir>/recovery-point-offset-checkpoint  "topic partition offset" lines
//	<log.dir>/log-start-offset-checkpoint
//	<log.dir>/cleaner-offset-checkpoint          first dirty offset of compacted logs
//	<log.dir>/.weir_boot                         kernel boot id the dir was opened in (boot.go)
//	<log.dir>/.weir_broker_epoch                 broker epoch of the incarnation serving it
//	<log.dir>/<topic>-<partition>/
//	    00000000000000000000.log        record batches (magic v2), back to back
//	    00000000000000000000.index      sparse offset index
//	    00000000000000000000.timeindex  sparse time index
//	    00000000000000000000.snapshot   producer state (written by the hook)
//	    leader-epoch-checkpoint
//	<log.dir>/<topic>-<partition>.<hex>-delete/   a deleted partition, being removed
//
// A segment's files are named by its base offset, 20 digits. While the
// cleaner swaps a segment in, its new files are named "*.cleaned", then
// "*.swap" (see Compaction). Retired
// segments are renamed "*.deleted" and removed file.delete.delay.ms later;
// a reader in flight keeps its descriptor, or reopens the file under its
// new name, so it is not disturbed.
//
// # Byte layouts (big-endian)
//
//	.log       | baseOffset int64 | batchLength int32 | leaderEpoch int32 | magic=2 |
//	           | crc uint32 (CRC-32C of the rest) | attributes ... records |   x N
//	.index     | relOffset int32 | position int32 |       one per >4096 bytes
//	           relOffset = batch base offset - segment base; position = byte
//	           where that batch starts in the .log
//	.timeindex | timestamp int64 | relOffset int32 |       same cadence
//	           the segment's max timestamp so far and the last offset of the
//	           batch carrying it; a final entry is added at roll and close
//	           so the segment's max timestamp survives a restart
//
// # Concurrency
//
// Writers (Append, roll, Flush, TruncateTo, DeleteRecordsBefore,
// EnforceRetention, Close) serialise on one mutex. The fsyncs that follow
// a roll run outside it, in the log's roll flusher (rollflush.go), which
// takes the mutex only to plan and to move the recovery point. Lock
// order: Log.mu, then a segment's file and index locks, then the leader
// epoch cache's (its writeMu before its mu); the roll flusher holds no
// Log.mu while it fsyncs. Readers take no lock:
// they load the log end offset, then an immutable segment slice (swapped
// whole by writers), then each segment's published size, and use pread.
// Append writes the bytes, adds index entries, publishes the segment
// size, then the log end, so a reader never sees a partial batch.
//
// # Descriptors (files.go)
//
// The number of open files does not depend on the number of partitions
// or segments. Index files live in memory and are opened only to be
// written (Flush, Close); leader-epoch-checkpoint, producer snapshots,
// partition.metadata and the log dir checkpoints are written through a
// temp file and read whole, each open for a moment. Only segment .log
// files are read and written in place, and those are opened on demand
// through one descriptor cache shared by a Manager's logs:
//
//   - Capacity: weir.log.max.open.files, else half of RLIMIT_NOFILE, at
//     most RLIMIT_NOFILE - 256 and at least 16 (1024 -> 512, 20000 ->
//     10000). The other half is for client and replica sockets,
//     listeners, Raft (bolt db, snapshots, peers), the files opened for a
//     moment above (a few per goroutine at most) and the Go runtime.
//   - A segment's descriptor is opened on first use: a read, an append,
//     a scan at load or recovery, an fsync, a truncation. A created
//     segment keeps the descriptor it was created with. Loading a log
//     only stats its .log files, so a restart with any number of
//     partitions and segments holds no descriptor per partition.
//   - Idle files go: every minute the Manager closes the descriptors not
//     used since the previous minute (closeIdle), so idle partitions and
//     sealed segments hold none and the cache holds about what is in
//     use, not its capacity.
//   - Every use is acquire ... release. A descriptor is closed only with
//     no user (CLOCK eviction, second chance, when the cache is over
//     capacity; or when its segment is retired, by the last user), so no
//     read or write ever sees it closed or its number reused. When more
//     files than the capacity are in use at once the cache goes over
//     capacity and shrinks back as users release. An open that fails
//     with EMFILE/ENFILE closes idle cached files and retries.
//   - The fast path (descriptor open) is a compare-and-swap on the
//     file's reference count: appending to an active segment and reading
//     recent data never reopen a file while the segments in use fit the
//     capacity. A reopened file enters the CLOCK with its reference bit
//     clear, so segments read once go before active ones.
//   - ReadResult holds the segment, not a descriptor: Bytes and WriteTo
//     acquire it for the copy (sendfile included) and release it, so a
//     result needs no release. Used after its segment was retired (log
//     closed or deleted, or removed past file.delete.delay.ms), they fail
//     with ErrClosed unless another user still holds the descriptor.
//     Pin (region.go) takes the descriptor until Release instead: the
//     fetch path pins what it answers so that retention or a deleted
//     topic cannot pull the file from under a response being written.
//   - Renames (*.deleted, the cleaner's *.cleaned -> *.swap -> final)
//     take the file's own lock, as opens do, so a reopen always uses the
//     current name while an open descriptor simply follows the rename.
//   - Durability does not need a descriptor kept: fsync writes back the
//     file's dirty pages whichever descriptor wrote them, so a roll or
//     Flush reopens an evicted segment to fsync it before the recovery
//     point passes it, and Linux (4.16 on) reports a writeback error that
//     no descriptor has seen to one opened after it. Closing an evicted
//     descriptor loses nothing: the page cache holds the data either way.
//
// # Reserved space (reserve.go)
//
// Once the active segment passes 1 MiB, each append that passes the space
// reserved so far first reserves the next 4 MiB past its end with
// fallocate(FALLOC_FL_KEEP_SIZE): blocks are allocated, the file's size
// is not changed, so the .log still ends at its last whole batch for
// readers, recovery and tools. Writes into reserved blocks cost the file
// system no allocation at write time. The spare blocks (at most 4 MiB per
// active segment; none for small ones) are given back when the segment is
// sealed (roll) and at Close by truncating the file to its own size; a
// truncation frees them as well. After a crash the active segment may
// keep its spare blocks until its roll; they hold no data and are never
// read. File systems without the call reserve nothing.
//
// # Recovery (OpenLog)
//
//  1. Finish interrupted cleaner swaps (see Compaction), then remove
//     *.deleted, *.tmp and index files without a .log.
//  2. No segment at all: create one at the log start offset.
//  3. Open every segment. An index that is missing (beside a non-empty
//     .log), fails to open (index.ErrCorrupt) or fails its sanity check is
//     marked for rebuild.
//  4. Clean shutdown: every segment is trusted. Otherwise segments wholly
//     below the one holding the recovery point are trusted (they were
//     fsynced with their indexes at roll) and the rest are recovered.
//  5. Trusted segments marked for rebuild are rescanned; invalid bytes
//     there are an error naming the file and byte position, never cut.
//     The log end of a trusted last segment comes from scanning the batch
//     headers after its last offset-index entry.
//  6. Recovered segments are read batch by batch: framing (length fits
//     the file), CRC-32C, offsets (>= segment base, increasing, below the
//     next segment, relative offset fits int32). Indexes and max timestamp
//     are rebuilt on the way. At the first invalid byte the .log is
//     truncated and every later segment deleted; both are logged (file,
//     byte position, bytes cut, next offset, reason). A segment that
//     ends, at a whole batch, below the next segment's base lost its tail
//     (a power loss: the kernel wrote the newer file back first); every
//     later segment is deleted as well, so the log never keeps a hole
//     (lostTail says why; the cleaner never leaves one, see Compaction).
//  7. Log start = max(checkpoint, first base). If the log end fell below
//     it, the segments are dropped and the log restarts empty there.
//     Recovery point = log end after a clean shutdown, else
//     min(checkpoint, log end). The leader epoch cache is truncated to
//     [log start, log end).
//
// # Recovery point
//
// Everything below the recovery point is on disk with valid indexes,
// which is what step 4 relies on. A roll seals the old segment (final
// time-index entry, producer snapshot written but not fsynced) and starts
// the new one under the writer lock; then its flusher, outside the lock,
// fsyncs every segment from the one holding the recovery point up to the
// new one (.log and both indexes), the producer snapshots of those rolls,
// the directory and the leader epoch cache, and only then moves the
// recovery point to the new base, under the lock, unless a truncation ran
// meanwhile (the truncation lowered it as needed, and the flusher plans
// again below the new active segment). Until then a crash recovers the
// rolled segment like the active one. Flush does all of that at once,
// under the lock, up to the log end. A failed fsync keeps the recovery
// point where it is for good: the log refuses writes with ErrStorage
// until restarted, and Close reports it, so the dir is not marked
// cleanly shut down (rollflush.go says why, and what else may happen
// meanwhile: deleted or compacted segments, Close, Delete).
//
// # Clean shutdown (Manager.Close, syncfs_linux.go)
//
// The clean-shutdown marker claims every file of its dir durable, and the
// recovery points written with it claim every log whole. Manager.Close
// first closes each log without an fsync of its own (closeUnsynced: the
// producer snapshot, indexes and leader-epoch-checkpoint are written, and
// only when they differ from what the files hold, so an idle partition
// writes nothing), then calls syncfs(2) once per dir, which writes back
// and waits for every dirty page and inode of the filesystem (the data
// appended since the last flush included) and, since Linux 5.8, returns
// the writeback errors it met. Only the logs of a dir whose syncfs
// succeeded get their recovery points moved to their ends; then the
// checkpoints are written (with fsync) and the marker last. A dir whose
// syncfs failed keeps its old recovery points and gets no marker, so the
// next start recovers it like after a crash. Older kernels (syncfs
// returns 0 whatever was lost) and other platforms take the file-by-file
// path: Flush and Close of each log, each fsyncing what it wrote.
//
// # Leader epochs
//
// Appends record a batch's leader epoch in the cache in memory only
// (leaderepoch.Cache.Begin); leader-epoch-checkpoint is written (with
// its fsync) before the recovery point passes the epoch's start (roll
// flush, Flush) and at Close, and at once by truncations. This is
// weaker than Kafka, whose assign writes the file before the record, and
// as safe: after a crash, recovery rescans every batch from the segment
// holding the recovery point on and assigns the epochs it finds there
// that are newer than the file's (step 6), so the cache rebuilt holds
// every epoch of every batch that survived; an epoch none of whose
// batches survived was lost with them, and a follower truncates as if it
// had never been written. A clean shutdown rescans nothing, which is why
// Close writes the file first (and reports a failure, so the dir is not
// marked clean). The first Produce to many partitions after an election
// then writes no file per partition.
//
// # Compaction (cleaner*.go, offsetmap.go)
//
// Logs with Config.Compact are compacted by the manager's cleaner, one log
// at a time: the one with the highest dirty ratio (bytes not yet cleaned /
// cleanable bytes) at or above min.cleanable.dirty.ratio, or else one
// whose cleaned tombstones have passed their delete horizon. Cleanable
// means: whole segments, never the active one, below SetCleanableLimit
// (the high watermark) and older than min.compaction.lag.ms.
//
// A pass builds a map key -> latest offset over the dirty part (from the
// cleaner checkpoint on), whole batches, within log.cleaner.dedupe.buffer.size;
// then rewrites every segment below the map's end, consecutive segments
// grouped up to segment.bytes, batch by batch with offsets, producer
// fields, timestamps and codec kept: a record goes if a later one has its
// key or it has no key; a tombstone stays delete.retention.ms after the
// pass that first kept it (the delete horizon is stamped in the batch,
// attribute bit 6, as in KIP-534). A batch left without records is
// dropped unless it is its producer's last or its group's last (then an
// empty batch keeps its offsets and sequence). Transactional records hide
// nothing (their fate is unknown here) and control batches are copied.
// cleaner.go states the rules and the simplifications against Kafka.
//
// Swap, under the writer lock, with the new segment fsynced as
// <base>.{log,index,timeindex}.cleaned:
//
//  1. *.cleaned -> *.swap, fsync dir     (from here the new data wins)
//  2. old segments -> *.deleted (indexes first), fsync dir
//  3. *.swap -> final names (.log last), fsync dir, publish; old
//     segments stay readable until file.delete.delay.ms.
//
// At load: *.cleaned are removed (old files intact); each <base>.log.swap
// replaces every segment with a base in [base, its last offset] and is
// renamed <base>.log, its indexes rebuilt. The cleaner keeps each group's
// last batch, so that range is exactly the group's. A crash at any point
// leaves the old segments or the new one, never a mix.
//
// # Truncation
//
// TruncateTo never splits a batch: an offset inside a batch removes the
// whole batch and the log end becomes its base offset, which may be below
// the requested offset.
package storage
