package storage

import (
	"fmt"
	"io"
	"math"

	"github.com/weir-project/weir/internal/storage/recordbatch"
)

// Bytes reads the region into memory. The segment's descriptor is held
// (reopened if the cache had closed it) only for the copy. A segment
// retired since Read (its log closed, or deleted past
// file.delete.delay.ms) gives an error wrapping ErrClosed.
func (r ReadResult) Bytes() ([]byte, error) {
	if r.Len == 0 {
		return nil, nil
	}
	f, err := r.file.acquire()
	if err != nil {
		return nil, fmt.Errorf("read %d bytes at %d: %w", r.Len, r.Pos, err)
	}
	defer r.file.release()
	b := make([]byte, r.Len)
	if _, err := f.ReadAt(b, r.Pos); err != nil {
		return nil, fmt.Errorf("read %d bytes at %d of %s: %w: %w", r.Len, r.Pos, r.file.name(), ErrStorage, err)
	}
	return b, nil
}

// WriteTo copies the region to w (sendfile when w is a *net.TCPConn),
// holding the segment's descriptor for the copy as Bytes does.
func (r ReadResult) WriteTo(w io.Writer) (int64, error) {
	if r.Len == 0 {
		return 0, nil
	}
	f, err := r.file.acquire()
	if err != nil {
		return 0, fmt.Errorf("send %d bytes at %d: %w", r.Len, r.Pos, err)
	}
	defer r.file.release()
	if n, handled, err := sendfile(w, f, r.Pos, r.Len); handled {
		return n, err
	}
	return io.Copy(w, io.NewSectionReader(f, r.Pos, r.Len))
}

// Read returns whole batches starting with the one containing offset, up
// to maxBytes (at least one batch, even if larger), never including a
// batch whose base offset >= maxOffset (the high watermark for consumers;
// pass -1 for the log end). Outside [LogStartOffset, LogEndOffset]:
// ErrOffsetOutOfRange. offset == LogEndOffset: empty result.
//
// The result stays within one segment. It holds no lock: it works on a
// snapshot of the segment list and on published sizes only.
func (l *Log) Read(offset int64, maxBytes int, maxOffset int64) (ReadResult, error) {
	leo := l.logEnd.Load()
	lso := l.logStart.Load()
	if offset < lso || offset > leo {
		return ReadResult{}, fmt.Errorf("read offset %d outside [%d, %d]: %w", offset, lso, leo, ErrOffsetOutOfRange)
	}
	limit := leo
	if maxOffset >= 0 && maxOffset < limit {
		limit = maxOffset
	}
	if offset >= limit {
		return ReadResult{FirstOffset: offset}, nil
	}
	segs := l.segments()
	i := floorSegment(segs, offset)
	if i < 0 {
		// Raced with retention or DeleteRecords.
		return ReadResult{}, fmt.Errorf("read offset %d below first segment: %w", offset, ErrOffsetOutOfRange)
	}
	for ; i < len(segs); i++ {
		r, found, err := segs[i].read(offset, maxBytes, limit)
		if err != nil {
			return ReadResult{}, fmt.Errorf("read offset %d in %s: %w", offset, l.dir, err)
		}
		if found {
			return r, nil
		}
		// offset lies past this segment's last batch (a gap): next segment.
	}
	return ReadResult{FirstOffset: offset}, nil
}

// read finds the batch containing offset (via the offset index, then a
// forward scan of headers) and extends the region with following batches
// while they fit maxBytes and start below limit.
func (s *segment) read(offset int64, maxBytes int, limit int64) (ReadResult, bool, error) {
	end := s.size.Load()
	_, pos := s.offIdx.Lookup(offset)
	var res ReadResult
	found := false
	err := s.scanHeaders(pos, end, func(p int64, h recordbatch.Header) bool {
		if h.BaseOffset >= limit {
			return false
		}
		if !found {
			if h.LastOffset() < offset {
				return true
			}
			found = true
			res = ReadResult{file: s.file, Pos: p, Len: h.Size(), FirstOffset: h.BaseOffset}
			return true
		}
		if res.Len+h.Size() > int64(maxBytes) {
			return false
		}
		res.Len += h.Size()
		return true
	})
	if err != nil {
		return ReadResult{}, false, fmt.Errorf("segment %s: %w", s.logPath(), err)
	}
	return res, found, nil
}

// OffsetForTimestamp returns the first record with a timestamp >= ts: its
// offset and timestamp, as Kafka answers ListOffsets; found=false if none.
// The batch is found by headers and then decoded to pick the record; if it
// cannot be decoded, the batch's first offset and max timestamp are
// returned. Offsets below the log start are never returned.
func (l *Log) OffsetForTimestamp(ts int64) (offset int64, timestamp int64, found bool, err error) {
	lso := l.logStart.Load()
	leo := l.logEnd.Load()
	for _, s := range l.segments() {
		if maxTs, _ := s.timestamps(); maxTs < ts {
			continue
		}
		// Every batch before the time-index entry below ts has a max
		// timestamp < ts, so the answer lies at or after that entry.
		from := s.base
		if ts > math.MinInt64 {
			from = s.timeIdx.Lookup(ts - 1)
		}
		_, pos := s.offIdx.Lookup(max(from, lso))
		serr := s.scanHeaders(pos, s.size.Load(), func(_ int64, h recordbatch.Header) bool {
			if h.BaseOffset >= leo {
				return false
			}
			if h.LastOffset() < lso || h.MaxTimestamp < ts {
				return true
			}
			offset, timestamp, found = max(h.BaseOffset, lso), h.MaxTimestamp, true
			return false
		})
		if serr != nil {
			return 0, 0, false, fmt.Errorf("offset for timestamp %d in %s: %w", ts, s.logPath(), serr)
		}
		if found {
			if o, t, ok := s.recordAtOrAfter(offset, ts, lso); ok {
				offset, timestamp = o, t
			}
			return offset, timestamp, true, nil
		}
	}
	return -1, -1, false, nil
}

// recordAtOrAfter finds, in the batch containing offset, the first record
// at or above the log start lso with a timestamp >= ts. A LogAppendTime
// batch stamps every record with its max timestamp, so its first record
// is the answer.
func (s *segment) recordAtOrAfter(offset, ts, lso int64) (int64, int64, bool) {
	r, found, err := s.read(offset, 0, math.MaxInt64)
	if err != nil || !found {
		return 0, 0, false
	}
	b, err := r.Bytes()
	if err != nil {
		return 0, 0, false
	}
	h, err := recordbatch.ParseHeader(b)
	if err != nil {
		return 0, 0, false
	}
	if h.LogAppendTime() {
		return max(h.BaseOffset, lso), h.MaxTimestamp, true
	}
	recs, err := recordbatch.Records(b)
	if err != nil {
		return 0, 0, false
	}
	for _, rec := range recs {
		o, t := h.BaseOffset+int64(rec.OffsetDelta), h.BaseTimestamp+rec.TimestampDelta
		if o >= lso && t >= ts {
			return o, t, true
		}
	}
	return 0, 0, false
}

// MaxTimestamp returns the largest timestamp in the log and the offset of
// the record carrying it (ListOffsets -3); (-1, -1) if empty. The offset
// is that record's when the batch can be decoded, else the batch's last.
func (l *Log) MaxTimestamp() (ts int64, offset int64) {
	ts, offset = -1, -1
	var holder *segment
	for _, s := range l.segments() {
		if t, o := s.timestamps(); t > ts {
			ts, offset, holder = t, o, s
		}
	}
	if holder == nil {
		return -1, -1
	}
	if o, ok := holder.recordWithTimestamp(offset, ts); ok {
		offset = o
	}
	return ts, offset
}

// recordWithTimestamp finds the first record with timestamp ts in the
// batch containing offset.
func (s *segment) recordWithTimestamp(offset, ts int64) (int64, bool) {
	r, found, err := s.read(offset, 0, math.MaxInt64)
	if err != nil || !found {
		return 0, false
	}
	b, err := r.Bytes()
	if err != nil {
		return 0, false
	}
	h, err := recordbatch.ParseHeader(b)
	if err != nil {
		return 0, false
	}
	if h.LogAppendTime() {
		return h.BaseOffset, true
	}
	recs, err := recordbatch.Records(b)
	if err != nil {
		return 0, false
	}
	for _, rec := range recs {
		if h.BaseTimestamp+rec.TimestampDelta == ts {
			return h.BaseOffset + int64(rec.OffsetDelta), true
		}
	}
	return 0, false
}
