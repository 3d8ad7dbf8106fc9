package storage

import (
	"errors"
	"fmt"
	"os"
	"sync"
	"sync/atomic"
	"syscall"
)

// The descriptor cache: every segment's .log is opened on first use and
// closed again when the cache needs room, so the files a broker holds open
// do not grow with its partitions and segments (see doc.go, Descriptors).
//
// A segFile is one .log. Its refs counter is its state: -1 while it has no
// descriptor, otherwise the number of users holding it (acquire..release).
// Only a file with no users is ever closed, so a descriptor is never
// closed, nor its number reused for another file, under a reader. The fast
// path (the file is open) is one compare-and-swap: appends and reads of
// recent data never reopen a file. Opening, eviction and closing take the
// cache's mutex; opening and renaming one file also take its own mutex, so
// a file is never opened by a path it has just been renamed from.
//
// Eviction is CLOCK (second chance), an approximation of least recently
// used that needs no list reordering on the fast path: acquire sets a
// reference bit, the hand clears it, and the first file found with the bit
// clear and no users is closed. A file reopened enters with its bit
// clear, so one read once (a consumer catching up through old segments)
// goes before the files used again and again (the active segments being
// appended to); a segment just created enters with it set.

// errSegmentClosed: the segment was retired (its log closed or deleted).
var errSegmentClosed = fmt.Errorf("segment file closed: %w", ErrClosed)

// fileCache bounds the open .log descriptors of every log sharing it.
type fileCache struct {
	capacity int

	mu   sync.Mutex
	ring []*segFile // every file with a descriptor; segFile.slot is its index
	hand int        // CLOCK hand into ring

	openCount atomic.Int64 // len(ring), read without mu by release
	pins      atomic.Int64 // regions pinned by TryPin and not yet released
	opened    atomic.Int64 // descriptors opened, for tests and logs
	evictions atomic.Int64 // descriptors closed to make room
	noReserve atomic.Bool  // the file system cannot reserve space (reserve.go)
}

func newFileCache(capacity int) *fileCache {
	return &fileCache{capacity: max(capacity, 1)}
}

// Open is how many segment files have a descriptor now.
func (c *fileCache) Open() int { return int(c.openCount.Load()) }

// segFile is one segment .log file, opened on demand through its cache.
type segFile struct {
	c    *fileCache
	path atomic.Pointer[string] // current path; renames store under mu

	mu   sync.Mutex              // serialises opening and renaming
	refs atomic.Int64            // -1: no descriptor; n >= 0: open, n users
	f    atomic.Pointer[os.File] // set while refs >= 0
	used atomic.Bool             // CLOCK reference bit
	dead atomic.Bool             // retired: never reopened, closed when idle
	slot int                     // index in c.ring while open; under c.mu
	// reserved is where the space reserved ahead of the appender ends
	// (reserve.go); 0 if none is known. Appender state, under Log.mu.
	reserved int64
}

func newSegFile(c *fileCache, path string) *segFile {
	h := &segFile{c: c, slot: -1}
	h.refs.Store(-1)
	h.path.Store(&path)
	return h
}

// name is the file's current path.
func (h *segFile) name() string { return *h.path.Load() }

// acquire returns the open file, opening it if it has no descriptor, and
// keeps it open until the matching release. Every successful acquire must
// be released exactly once.
func (h *segFile) acquire() (*os.File, error) {
	if f := h.tryAcquire(); f != nil {
		return f, nil
	}
	return h.acquireSlow()
}

// tryAcquire is the fast path: a new user of an open descriptor.
func (h *segFile) tryAcquire() *os.File {
	for {
		n := h.refs.Load()
		if n < 0 {
			return nil
		}
		if h.refs.CompareAndSwap(n, n+1) {
			if !h.used.Load() {
				h.used.Store(true)
			}
			return h.f.Load()
		}
	}
}

func (h *segFile) acquireSlow() (*os.File, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if f := h.tryAcquire(); f != nil {
		return f, nil // opened meanwhile
	}
	if h.dead.Load() {
		return nil, fmt.Errorf("%s: %w", h.name(), errSegmentClosed)
	}
	f, err := h.c.open(h.name())
	if err != nil {
		if h.dead.Load() {
			return nil, fmt.Errorf("%s: %w", h.name(), errSegmentClosed) // removed as it was retired
		}
		return nil, fmt.Errorf("reopen segment: %w: %w", ErrStorage, err)
	}
	h.c.admit(h, f, 1, false)
	return f, nil
}

// adopt gives a just created file's descriptor to the cache, with no
// user. It counts as used: a new segment is written to next.
func (h *segFile) adopt(f *os.File) {
	h.c.opened.Add(1)
	h.c.admit(h, f, 0, true)
}

// release ends a use begun by acquire. The last user of a retired file
// closes it; the last user of any file lets the cache shrink back to its
// capacity if it had to go over it while every file was in use.
func (h *segFile) release() {
	if h.refs.Add(-1) != 0 {
		return
	}
	if h.dead.Load() {
		_ = h.closeIfIdle()
		return
	}
	if h.c.openCount.Load() > int64(h.c.capacity) {
		h.c.shrink()
	}
}

// close retires the file: it is never opened again, and its descriptor is
// closed now, or by its last user's release if it is in use.
func (h *segFile) close() error {
	h.dead.Store(true)
	return h.closeIfIdle()
}

// closeIfIdle closes the descriptor if it has one and no user.
func (h *segFile) closeIfIdle() error {
	c := h.c
	c.mu.Lock()
	var f *os.File
	if h.refs.CompareAndSwap(0, -1) {
		f = c.removeLocked(h)
	}
	c.mu.Unlock()
	if f == nil {
		return nil
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("close %s: %w", h.name(), err)
	}
	return nil
}

// rename moves the file. Its descriptor, if open, stays valid, and a later
// open uses the new path.
func (h *segFile) rename(newPath string) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	if err := os.Rename(h.name(), newPath); err != nil {
		return fmt.Errorf("rename %s: %w", h.name(), err)
	}
	h.path.Store(&newPath)
	return nil
}

// sync fsyncs the file, reopening it if its descriptor was evicted: fsync
// flushes the file's dirty pages whichever descriptor wrote them, and
// Linux reports a writeback error that nobody has seen yet to a
// descriptor opened after it.
func (h *segFile) sync() error {
	f, err := h.acquire()
	if err != nil {
		return err
	}
	defer h.release()
	if err := f.Sync(); err != nil {
		return fsyncError{fmt.Errorf("fsync %s: %w", h.name(), err)}
	}
	return nil
}

// fsyncError is a failed fsync of a .log: a writeback failed, and the
// pages it could not write may be lost whatever the errno (noRoom).
type fsyncError struct{ err error }

func (e fsyncError) Error() string { return e.err.Error() }
func (e fsyncError) Unwrap() error { return e.err }

// truncate cuts the file to size.
func (h *segFile) truncate(size int64) error {
	f, err := h.acquire()
	if err != nil {
		return err
	}
	defer h.release()
	if err := f.Truncate(size); err != nil {
		return fmt.Errorf("truncate %s to %d: %w", h.name(), size, err)
	}
	h.reserved = 0 // a cut frees the blocks past the new end
	return nil
}

// stat describes the file without opening it.
func (h *segFile) stat() (os.FileInfo, error) {
	h.mu.Lock() // not while a rename moves it
	defer h.mu.Unlock()
	return os.Stat(h.name())
}

// open opens a segment file for reading and writing. If the process is
// out of descriptors (sockets may have taken them), idle cached files are
// closed to make room, even below capacity, and the open retried.
func (c *fileCache) open(path string) (*os.File, error) {
	for {
		f, err := os.OpenFile(path, os.O_RDWR, 0)
		if err == nil {
			c.opened.Add(1)
			return f, nil
		}
		if !errors.Is(err, syscall.EMFILE) && !errors.Is(err, syscall.ENFILE) {
			return nil, err
		}
		c.mu.Lock()
		var victim *os.File
		if h := c.victimLocked(); h != nil {
			victim = c.removeLocked(h)
			c.evictions.Add(1)
		}
		c.mu.Unlock()
		if victim == nil {
			return nil, err // every cached file is in use
		}
		_ = victim.Close()
	}
}

// admit records h's new descriptor f with refs users and the given
// reference bit, then evicts idle files while the cache is over capacity.
func (c *fileCache) admit(h *segFile, f *os.File, refs int64, used bool) {
	c.mu.Lock()
	h.f.Store(f)
	h.used.Store(used)
	h.slot = len(c.ring)
	c.ring = append(c.ring, h)
	c.openCount.Store(int64(len(c.ring)))
	h.refs.Store(refs) // published last: from here tryAcquire may use f
	victims := c.evictLocked()
	c.mu.Unlock()
	closeFiles(victims)
}

// shrink evicts idle files while the cache is over capacity.
func (c *fileCache) shrink() {
	c.mu.Lock()
	victims := c.evictLocked()
	c.mu.Unlock()
	closeFiles(victims)
}

// evictLocked takes the descriptors of idle files until the cache is
// within capacity, or every open file is in use (it then stays over
// capacity until users release them). The caller closes them.
func (c *fileCache) evictLocked() []*os.File {
	var out []*os.File
	for len(c.ring) > c.capacity {
		h := c.victimLocked()
		if h == nil {
			break
		}
		out = append(out, c.removeLocked(h))
		c.evictions.Add(1)
	}
	return out
}

// victimLocked moves the CLOCK hand at most twice round the ring: a file
// used since the hand last passed gets a second chance; the first one
// without that bit and without users is claimed (refs -1) and returned.
func (c *fileCache) victimLocked() *segFile {
	for range 2 * len(c.ring) {
		if c.hand >= len(c.ring) {
			c.hand = 0
		}
		h := c.ring[c.hand]
		c.hand++
		if h.used.Swap(false) {
			continue
		}
		if h.refs.CompareAndSwap(0, -1) {
			return h
		}
	}
	return nil
}

// removeLocked drops h (already claimed: refs -1) from the ring and
// returns its descriptor.
func (c *fileCache) removeLocked(h *segFile) *os.File {
	last := len(c.ring) - 1
	moved := c.ring[last]
	c.ring[h.slot] = moved
	moved.slot = h.slot
	c.ring[last] = nil
	c.ring = c.ring[:last]
	h.slot = -1
	c.openCount.Store(int64(len(c.ring)))
	return h.f.Swap(nil)
}

// closeIdle closes every descriptor not used since the previous call (or
// since it was reopened) and not in use now, and returns how many. Run
// periodically, it leaves idle partitions and sealed segments without
// descriptors, so the cache holds what is in use rather than its
// capacity, and sockets keep the room. It clears the reference bits the
// eviction reads, which only makes the next evictions pick among files
// used since.
func (c *fileCache) closeIdle() int {
	c.mu.Lock()
	var out []*os.File
	for i := 0; i < len(c.ring); {
		h := c.ring[i]
		if h.used.Swap(false) || !h.refs.CompareAndSwap(0, -1) {
			i++
			continue
		}
		out = append(out, c.removeLocked(h)) // the last file moves to i
	}
	c.mu.Unlock()
	closeFiles(out)
	return len(out)
}

// closeFiles closes evicted descriptors. Their files are not retired, so
// an error here loses nothing a later fsync would not report.
func closeFiles(fs []*os.File) {
	for _, f := range fs {
		_ = f.Close()
	}
}

// Segment-file budget derived from RLIMIT_NOFILE (see doc.go).
const (
	minReservedFiles = 256     // descriptors always left for everything but segments
	minSegmentFiles  = 16      // the cache never gets fewer, whatever the limit
	maxDerivedFiles  = 1 << 20 // an unlimited RLIMIT_NOFILE counts as this
)

// segmentFileBudget is the cache capacity for a process allowed nofile
// descriptors: half of them, and at most nofile-256, so sockets, Raft's
// bolt db and snapshots, listeners, checkpoint and index writes and the
// Go runtime keep at least half; never below 16.
func segmentFileBudget(nofile uint64) int {
	n := int(min(nofile, 2*maxDerivedFiles))
	return max(n-max(n/2, minReservedFiles), minSegmentFiles)
}

// DefaultMaxOpenFiles is the segment-file budget for this process's
// current RLIMIT_NOFILE (the cache size when weir.log.max.open.files is 0).
func DefaultMaxOpenFiles() int {
	nofile, err := fileLimit()
	if err != nil {
		return segmentFileBudget(1024)
	}
	return segmentFileBudget(nofile)
}
