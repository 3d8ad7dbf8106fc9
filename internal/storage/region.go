package storage

import (
	"fmt"
	"io"
	"os"
	"sync/atomic"
)

// Region is a ReadResult pinned for sending: it holds the segment's
// descriptor from Pin until Release, so the bytes stay readable while a
// response carrying them is written, however long the client takes. A
// segment retired meanwhile (retention, DeleteRecords, a topic deleted,
// the log closed) has its file renamed and later unlinked; the descriptor
// still reads the same inode, and is closed by Release, its last user.
// The descriptor cache may go over its capacity while regions pin more
// files than it holds (see fileCache): pinning outranks the bound.
//
// A truncation of the pinned range while it is sent (a follower cutting
// its log) shortens the file: SendTo and ReadAt then fail rather than
// send short, and the caller must drop the connection whose framing
// promised the full length, as Kafka does.
type Region struct {
	h        *segFile
	f        *os.File
	pos, n   int64
	counted  bool // one of the cache's budgeted pins (TryPin)
	released atomic.Bool
}

// Pin takes the result's descriptor until Release. A result used after its
// segment was retired fails with an error wrapping ErrClosed, as Bytes
// does. An empty result gives an empty region holding nothing.
func (r ReadResult) Pin() (*Region, error) {
	if r.Len == 0 {
		return &Region{}, nil
	}
	f, err := r.file.acquire()
	if err != nil {
		return nil, fmt.Errorf("pin %d bytes at %d: %w", r.Len, r.Pos, err)
	}
	return &Region{h: r.file, f: f, pos: r.Pos, n: r.Len}, nil
}

// TryPin is Pin within a budget: the regions pinned through TryPin and
// not yet released stay under half the descriptor cache's capacity, so
// that one fetch of thousands of partitions (or many of them at once)
// cannot hold a descriptor per partition until written and take the
// process past its descriptor limit. ok=false means over budget: the
// caller reads the bytes now instead (Bytes), which holds nothing.
func (r ReadResult) TryPin() (g *Region, ok bool, err error) {
	if r.Len == 0 {
		return &Region{}, true, nil
	}
	c := r.file.c
	if c.pins.Add(1) > int64(max(c.capacity/2, 1)) {
		c.pins.Add(-1)
		return nil, false, nil
	}
	g, err = r.Pin()
	if err != nil {
		c.pins.Add(-1)
		return nil, false, err
	}
	g.counted = true
	return g, true, nil
}

// Size is the region's length in bytes.
func (g *Region) Size() int64 { return g.n }

// ReadAt reads from the region (off is relative to its start), as
// io.ReaderAt; past the region's end it returns io.EOF.
func (g *Region) ReadAt(p []byte, off int64) (int, error) {
	if off < 0 || off >= g.n {
		return 0, io.EOF
	}
	short := false
	if rest := g.n - off; int64(len(p)) > rest {
		p, short = p[:rest], true
	}
	m, err := g.f.ReadAt(p, g.pos+off)
	if err != nil {
		return m, fmt.Errorf("read %d bytes at %d of %s (truncated?): %w: %w", len(p), g.pos+off, g.h.name(), ErrStorage, err)
	}
	if short {
		return m, io.EOF
	}
	return m, nil
}

// SendTo writes n bytes of the region from off to w: sendfile(2) with an
// explicit offset when w is a socket (so readers of one file never share
// a file position), a copy otherwise. Bytes the file no longer has
// (truncated under the send) are an error, never a short success.
func (g *Region) SendTo(w io.Writer, off, n int64) (int64, error) {
	if off < 0 || n < 0 || off+n > g.n {
		return 0, fmt.Errorf("send [%d, %d) of a %d-byte region: out of range", off, off+n, g.n)
	}
	if n == 0 {
		return 0, nil
	}
	written, handled, err := sendfile(w, g.f, g.pos+off, n)
	if !handled {
		written, err = io.Copy(w, io.NewSectionReader(g.f, g.pos+off, n))
		if err == nil && written < n {
			err = io.ErrUnexpectedEOF
		}
	}
	if err != nil {
		return written, fmt.Errorf("send %d bytes at %d of %s: %w", n, g.pos+off, g.h.name(), err)
	}
	return written, nil
}

// Release returns the descriptor to the cache (closing it if its segment
// was retired and this was its last user). Further calls do nothing.
func (g *Region) Release() {
	if g.h == nil || !g.released.CompareAndSwap(false, true) {
		return
	}
	g.h.release()
	if g.counted {
		g.h.c.pins.Add(-1)
	}
}
