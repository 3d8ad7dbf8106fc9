package storage

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"
	"sync"

	"github.com/weir-project/weir/internal/storage/recordbatch"
)

// scanResult is the outcome of reading a segment batch by batch.
type scanResult struct {
	validEnd int64 // bytes of whole valid batches from the start
	next     int64 // offset after the last valid batch (base if none)
	batches  int
	stop     error // why the scan stopped before the end; nil if it reached it
}

// scanChunk is how much of a segment one read brings in: large sequential
// preads, each batch checked in place (no copy), so a scan costs a
// syscall per MiB and the CRC, and nothing per batch but its header.
const scanChunk = 1 << 20

// scanBufs holds scanChunk buffers between scans: loading thousands of
// logs at start must not allocate (and zero) a MiB for each.
var scanBufs = sync.Pool{New: func() any { b := make([]byte, scanChunk); return &b }}

// scan reads the segment batch by batch from the start, checking framing,
// CRC and offsets (at least the segment base, increasing, below upper,
// relative offset fits an int32). With reindex it rebuilds both indexes
// and the timestamps. The returned error is an I/O failure only;
// invalid data ends the scan with res.stop set.
func (s *segment) scan(upper int64, interval int, reindex bool, onBatch func(recordbatch.Header) error) (scanResult, error) {
	size := s.size.Load()
	if reindex {
		s.offIdx.Reset()
		s.timeIdx.Reset()
		s.resetTimestamps()
		s.bytesSinceIndex = 0
	}
	res := scanResult{next: s.base}
	if size == 0 {
		return res, nil
	}
	f, err := s.file.acquire()
	if err != nil {
		return res, err
	}
	defer s.file.release()
	r := newChunkReader(f, size)
	defer r.free()
	for res.validEnd < size {
		pos := res.validEnd
		if size-pos < recordbatch.HeaderSize {
			res.stop = fmt.Errorf("torn batch header: %d bytes at end", size-pos)
			break
		}
		head, err := r.at(pos, 12)
		if err != nil {
			return res, err
		}
		length := int64(int32(binary.BigEndian.Uint32(head[8:12])))
		total := 12 + length
		if length < recordbatch.HeaderSize-12 || pos+total > size {
			res.stop = fmt.Errorf("batch length %d at byte %d runs past the end (%d)", length, pos, size)
			break
		}
		b, err := r.at(pos, total)
		if err != nil {
			return res, err
		}
		h, err := recordbatch.ParseHeader(b)
		if err == nil {
			err = recordbatch.CheckCRC(b)
		}
		if err == nil {
			err = checkOffsets(h, res.next, s.base, upper)
		}
		if err != nil {
			res.stop = fmt.Errorf("batch at byte %d: %w", pos, err)
			break
		}
		if reindex {
			s.indexBatch(h, h.MaxTimestamp, pos, interval)
		}
		if onBatch != nil {
			if err := onBatch(h); err != nil {
				return res, err
			}
		}
		res.validEnd += total
		res.next = h.LastOffset() + 1
		res.batches++
	}
	return res, nil
}

// chunkReader serves byte ranges of [0, size) of a file from one buffer
// filled by large preads, moving forward only.
type chunkReader struct {
	f      *os.File
	size   int64
	pooled *[]byte
	buf    []byte // the buffer; buf[:n] holds the file from off
	off    int64
	n      int
}

func newChunkReader(f *os.File, size int64) *chunkReader {
	r := &chunkReader{f: f, size: size}
	if size >= scanChunk/4 {
		r.pooled = scanBufs.Get().(*[]byte)
		r.buf = *r.pooled
	} else {
		r.buf = make([]byte, size) // a small segment: read it whole
	}
	return r
}

// free returns the pooled buffer.
func (r *chunkReader) free() {
	if r.pooled != nil {
		scanBufs.Put(r.pooled)
		r.pooled, r.buf = nil, nil
	}
}

// at returns the n bytes at pos (pos+n <= size, pos not before an earlier
// call's pos). The slice is valid until the next call.
func (r *chunkReader) at(pos, n int64) ([]byte, error) {
	if pos >= r.off && pos+n <= r.off+int64(r.n) {
		return r.buf[pos-r.off : pos-r.off+n], nil
	}
	// Keep what is already read from pos on, then fill the rest.
	var have []byte
	if pos >= r.off && pos < r.off+int64(r.n) {
		have = r.buf[pos-r.off : r.n]
	}
	var kept int
	if n > int64(len(r.buf)) {
		// A batch larger than the buffer (up to message.max.bytes, which
		// may exceed it): a buffer of its own.
		big := make([]byte, n)
		kept = copy(big, have)
		r.free()
		r.buf = big
	} else {
		kept = copy(r.buf, have)
	}
	want := min(int64(len(r.buf)), r.size-pos)
	m, err := r.f.ReadAt(r.buf[kept:want], pos+int64(kept))
	if err != nil && !(errors.Is(err, io.EOF) && int64(kept+m) >= n) {
		return nil, fmt.Errorf("read at %d: %w", pos+int64(kept), err)
	}
	r.off, r.n = pos, kept+m
	if int64(r.n) < n {
		return nil, fmt.Errorf("read at %d: %w", pos, io.ErrUnexpectedEOF)
	}
	return r.buf[:n], nil
}
