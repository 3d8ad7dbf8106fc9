package storage

import (
	"errors"
	"os"
	"syscall"
)

// Disk space reserved ahead of the active segment's end (see doc.go,
// Reserved space). A write into blocks the file system allocated
// beforehand costs it no block allocation (on ext4 the delayed-allocation
// bookkeeping per page was a sixth of the broker's system time under a
// produce load), so the appender reserves space in chunks before its
// writes reach it. The file's size is untouched (FALLOC_FL_KEEP_SIZE):
// the .log holds exactly the batches written, for readers, recovery and
// every tool, and the reservation is only blocks past its end.
const (
	// reserveFrom: segments smaller than this reserve nothing, so that a
	// broker with thousands of quiet partitions keeps no spare blocks.
	reserveFrom = 1 << 20
	// reserveChunk is reserved past the end of each write that passes
	// the reservation: at most this much spare space per active segment.
	reserveChunk = 4 << 20
)

// reserveAhead is called by the appender, holding f, before writing up to
// end: it reserves [reserved, end+reserveChunk) when end passes the
// reservation. Failures are ignored: the write then allocates as it would
// have anyway (and reports a full disk itself); a file system without the
// call is not asked again.
func (h *segFile) reserveAhead(f *os.File, pos, end int64) {
	if end < reserveFrom || end <= h.reserved || h.c.noReserve.Load() {
		return
	}
	from := max(h.reserved, pos)
	err := fallocateKeepSize(f, from, end+reserveChunk-from)
	switch {
	case err == nil:
		h.reserved = end + reserveChunk
	case errors.Is(err, errors.ErrUnsupported), errors.Is(err, syscall.EOPNOTSUPP), errors.Is(err, syscall.ENOSYS):
		h.c.noReserve.Store(true)
	}
}

// trimReserved gives back the blocks past size that reserveAhead (or an
// incarnation of this broker before a crash) reserved: a sealed segment
// keeps no spare space. Truncating a file to its own size frees its
// blocks past the end. It is skipped if the file is not size bytes long
// (it would cut something), and for segments too small to have reserved.
func (h *segFile) trimReserved(size int64) error {
	h.reserved = 0
	if size < reserveFrom || h.c.noReserve.Load() {
		return nil
	}
	f, err := h.acquire()
	if err != nil {
		return err
	}
	defer h.release()
	st, err := f.Stat()
	if err != nil || st.Size() != size {
		return nil
	}
	if err := f.Truncate(size); err != nil {
		return err
	}
	return nil
}
