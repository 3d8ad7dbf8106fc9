package storage

import (
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"time"

	"github.com/weir-project/weir/internal/storage/recordbatch"
)

// batchRef locates one batch inside an Append's records.
type batchRef struct {
	start int // byte offset in records
	h     recordbatch.Header
}

// splitAndCheck validates every batch in records before any touches disk.
// leader=true applies the producer rules (recordbatch.Validate walks the
// records) and max.message.bytes; a follower's batches were validated by
// the leader, so only their framing and CRC are checked, as Kafka does.
// A leader's batches that checked covers passed recordbatch.Validate as
// they arrived (recordbatch.Checked) and are not validated again; the
// rules that depend on the log's config still apply.
func splitAndCheck(records []byte, cfg Config, leader bool, checked recordbatch.Checked, refs []batchRef) ([]batchRef, error) {
	if len(records) == 0 {
		return nil, fmt.Errorf("empty record set: %w", recordbatch.ErrCorrupt)
	}
	if int64(len(records)) > cfg.SegmentBytes {
		return nil, fmt.Errorf("record set of %d bytes exceeds segment size %d: %w",
			len(records), cfg.SegmentBytes, ErrRecordListTooLarge)
	}
	pos := 0
	validated := leader && checked.Covers(records)
	err := recordbatch.Split(records, func(batch []byte, h recordbatch.Header) error {
		if leader {
			if len(batch) > cfg.MaxMessageBytes {
				return fmt.Errorf("batch at byte %d is %d bytes, max.message.bytes %d: %w",
					pos, len(batch), cfg.MaxMessageBytes, ErrMessageTooLarge)
			}
			vh := h
			if !validated {
				var err error
				if vh, err = recordbatch.Validate(batch); err != nil {
					return fmt.Errorf("batch at byte %d: %w", pos, err)
				}
			}
			if cfg.Compact && !vh.Control() {
				if err := recordbatch.CheckKeys(batch); err != nil {
					return fmt.Errorf("batch at byte %d of a compacted log: %w", pos, err)
				}
			}
			h = vh
		} else {
			if err := recordbatch.CheckCRC(batch); err != nil {
				return fmt.Errorf("batch at byte %d: %w", pos, err)
			}
			if h.LastOffsetDelta < 0 {
				return fmt.Errorf("batch at byte %d: negative last offset delta: %w", pos, recordbatch.ErrCorrupt)
			}
		}
		refs = append(refs, batchRef{start: pos, h: h})
		pos += len(batch)
		return nil
	})
	if err != nil {
		return nil, err
	}
	return refs, nil
}

// Append validates every batch in records (one or more, as a producer sent
// them) before writing any, then assigns offsets from the log end, stamps
// leaderEpoch, applies LogAppendTime if configured, and writes them.
// The batches are patched in place in records, which are written with a
// single write call.
func (l *Log) Append(records []byte, leaderEpoch int32) (AppendInfo, error) {
	return l.AppendChecked(records, recordbatch.Checked{}, leaderEpoch)
}

// AppendChecked is Append for records whose batches were validated as
// they arrived: those checked covers are not validated again.
func (l *Log) AppendChecked(records []byte, checked recordbatch.Checked, leaderEpoch int32) (AppendInfo, error) {
	cfg := l.config()
	var stack [4]batchRef
	refs, err := splitAndCheck(records, cfg, true, checked, stack[:0])
	if err != nil {
		return AppendInfo{}, err
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed {
		return AppendInfo{}, ErrClosed
	}
	cfg = l.config()
	now := time.Now()
	nowMs := now.UnixMilli()
	first := l.logEnd.Load()
	off := first
	info := AppendInfo{FirstOffset: first, MaxTimestamp: -1, LogAppendTime: -1}
	for i := range refs {
		r := &refs[i]
		b := records[r.start : r.start+int(r.h.Size())]
		recordbatch.SetBaseOffset(b, off)
		recordbatch.SetPartitionLeaderEpoch(b, leaderEpoch)
		r.h.BaseOffset = off
		r.h.PartitionLeaderEpoch = leaderEpoch
		if cfg.LogAppendTime {
			recordbatch.SetLogAppendTime(b, nowMs)
			r.h.MaxTimestamp = nowMs
			r.h.Attributes |= 1 << 3
		}
		info.MaxTimestamp = max(info.MaxTimestamp, r.h.MaxTimestamp)
		info.NumRecords += int64(r.h.RecordCount)
		off += int64(r.h.LastOffsetDelta) + 1
	}
	info.LastOffset = off - 1
	if cfg.LogAppendTime {
		info.LogAppendTime = nowMs
	}
	// In memory only (a no-op but for the first append of an epoch):
	// the file is written before the recovery point passes first, and
	// until then a crash is followed by a rescan of this batch, which
	// assigns its epoch again (doc.go, Leader epochs).
	if err := l.epochs.Begin(leaderEpoch, first); err != nil {
		return AppendInfo{}, fmt.Errorf("append to %s: %w", l.dir, err)
	}
	if err := l.appendLocked(records, refs, cfg, now); err != nil {
		return AppendInfo{}, err
	}
	info.LogStartOffset = l.logStart.Load()
	return info, l.afterAppendLocked(info.NumRecords, cfg, now)
}

// AppendAsFollower appends batches whose offsets the leader already
// assigned. Offsets must increase: a batch may not start below the log
// end offset or the previous batch's end, but may start above it, since a
// compacted leader log has gaps where the cleaner removed whole batches
// (Kafka accepts these gaps too).
func (l *Log) AppendAsFollower(records []byte) (AppendInfo, error) {
	cfg := l.config()
	var stack [4]batchRef
	refs, err := splitAndCheck(records, cfg, false, recordbatch.Checked{}, stack[:0])
	if err != nil {
		return AppendInfo{}, err
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed {
		return AppendInfo{}, ErrClosed
	}
	cfg = l.config()
	next := l.logEnd.Load()
	info := AppendInfo{FirstOffset: refs[0].h.BaseOffset, MaxTimestamp: -1, LogAppendTime: -1}
	for _, r := range refs {
		if r.h.BaseOffset < next {
			return AppendInfo{}, fmt.Errorf("follower batch at offset %d, expected at least %d: %w", r.h.BaseOffset, next, ErrUnexpectedOffset)
		}
		next = r.h.LastOffset() + 1
		info.MaxTimestamp = max(info.MaxTimestamp, r.h.MaxTimestamp)
		info.NumRecords += int64(r.h.RecordCount)
	}
	info.LastOffset = next - 1
	now := time.Now()
	if err := l.appendLocked(records, refs, cfg, now); err != nil {
		return AppendInfo{}, err
	}
	// A follower's epoch cache is its only record of where the leader's
	// epochs began, which truncation after a failover depends on. As on
	// the leader, the file follows before the recovery point passes
	// these batches; until then recovery rescans them.
	for _, r := range refs {
		if r.h.PartitionLeaderEpoch < 0 {
			continue // written before leader epochs (magic 2 always has one)
		}
		if err := l.epochs.Begin(r.h.PartitionLeaderEpoch, r.h.BaseOffset); err != nil {
			return info, fmt.Errorf("appended to %s but %w", l.dir, err)
		}
	}
	info.LogStartOffset = l.logStart.Load()
	return info, l.afterAppendLocked(info.NumRecords, cfg, now)
}

// appendLocked writes already patched batches at the log end: rolls if
// needed, one write, sparse index entries, then publishes size and log end.
func (l *Log) appendLocked(records []byte, refs []batchRef, cfg Config, now time.Time) error {
	if err := l.writeRefusedLocked(); err != nil {
		return err
	}
	last := refs[len(refs)-1].h.LastOffset()
	seg, err := l.maybeRollLocked(int64(len(records)), last, cfg, now)
	if err != nil {
		l.noteWriteLocked(err)
		return err
	}
	pos := seg.size.Load()
	if err, cutErr := seg.write(records, pos); err != nil {
		if cutErr != nil {
			l.torn = cutErr
			l.refusing.Store(true)
			l.logger.Error("truncating after failed write; log refuses writes until restarted", "file", seg.logPath(), "pos", pos, "err", cutErr)
		}
		l.noteWriteLocked(err)
		return err
	}
	l.noteWriteLocked(nil)
	for _, r := range refs {
		seg.indexBatch(r.h, r.h.MaxTimestamp, pos+int64(r.start), cfg.IndexIntervalBytes)
	}
	if seg.firstAppend.IsZero() {
		seg.firstAppend = now
	}
	seg.size.Store(pos + int64(len(records)))
	l.logEnd.Store(last + 1)
	if l.hook != nil {
		for _, r := range refs {
			l.hook.OnBatch(batchInfo(r.h))
		}
	}
	return nil
}

// write writes records at pos of the segment's .log under one use of its
// descriptor (no reopen while the cache keeps it, as it does the active
// segment of a log being appended to). After a failed write, whatever
// part reached the file is cut so the log stays a sequence of whole
// batches; cutErr is set if that failed too.
func (s *segment) write(records []byte, pos int64) (err, cutErr error) {
	f, err := s.file.acquire()
	if err != nil {
		return fmt.Errorf("write %d bytes to %s at %d: %w", len(records), s.logPath(), pos, err), nil
	}
	defer s.file.release()
	s.file.reserveAhead(f, pos, pos+int64(len(records)))
	if _, err := f.WriteAt(records, pos); err != nil {
		s.file.reserved = 0 // the cut below frees the reservation
		if terr := f.Truncate(pos); terr != nil {
			cutErr = fmt.Errorf("truncate %s to %d after a failed write: %w", s.logPath(), pos, terr)
		}
		return fmt.Errorf("write %d bytes to %s at %d: %w: %w", len(records), s.logPath(), pos, ErrStorage, err), cutErr
	}
	return nil, nil
}

// afterAppendLocked applies the message-count flush policy.
func (l *Log) afterAppendLocked(n int64, cfg Config, now time.Time) error {
	if l.unflushedMsgs == 0 {
		l.firstUnflushed = now
	}
	l.unflushedMsgs += n
	if cfg.flushByMessages(l.unflushedMsgs) {
		return l.flushLocked()
	}
	return nil
}

// flushIfDue applies the time flush policy (manager's scheduler).
func (l *Log) flushIfDue(now time.Time) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	cfg := l.config()
	if l.closed || l.unflushedMsgs == 0 || !cfg.flushByTimeEnabled() {
		return nil
	}
	if now.Sub(l.firstUnflushed) < time.Duration(cfg.FlushIntervalMs)*time.Millisecond {
		return nil
	}
	return l.flushLocked()
}

// maybeRollLocked returns the segment the next append of size bytes,
// ending at lastOffset, goes to, rolling first when the active segment
// would exceed segment.bytes, is older than segment.ms, has a full index,
// or could not express lastOffset relative to its base in an int32.
func (l *Log) maybeRollLocked(size, lastOffset int64, cfg Config, now time.Time) (*segment, error) {
	seg := l.active()
	cur := seg.size.Load()
	if cur == 0 {
		return seg, nil
	}
	switch {
	case cur+size > cfg.SegmentBytes,
		!seg.firstAppend.IsZero() && now.Sub(seg.firstAppend) >= time.Duration(cfg.SegmentMs)*time.Millisecond,
		seg.indexFull(),
		lastOffset-seg.base > math.MaxInt32:
		return l.rollLocked(cfg)
	}
	return seg, nil
}

// rollLocked seals the active segment (final time-index entry, producer
// state snapshot, not fsynced) and starts a new one at the log end. The
// fsyncs that make everything below the new base durable run outside the
// lock, and the recovery point moves there once they are done
// (rollflush.go): appends go on meanwhile.
func (l *Log) rollLocked(cfg Config) (*segment, error) {
	old := l.active()
	newBase := l.logEnd.Load()
	old.sealIndexes()
	if err := old.file.trimReserved(old.size.Load()); err != nil {
		l.logger.Warn("give back the space reserved past a sealed segment", "segment", old.base, "err", err)
	}
	if l.hook != nil {
		if err := l.hook.Snapshot(l.dir, newBase, false); err != nil {
			l.logger.Warn("producer state snapshot at roll", "offset", newBase, "err", err)
		}
	}
	seg, err := l.newSegmentLocked(newBase, cfg, false)
	if err != nil {
		return nil, err
	}
	l.setSegments(append(append([]*segment(nil), l.segments()...), seg))
	l.scheduleRollFlushLocked(newBase)
	l.logger.Debug("rolled segment", "old", old.base, "new", newBase, "size", old.size.Load())
	return seg, nil
}

// newSegmentLocked creates an empty segment at base, refusing to clobber
// a non-empty file of the same name. The directory is fsynced if syncDir;
// a roll leaves that to its flush (rollflush.go; Flush does it too).
func (l *Log) newSegmentLocked(base int64, cfg Config, syncDir bool) (*segment, error) {
	p := filepath.Join(l.dir, segmentName(base, logSuffix))
	if st, err := os.Stat(p); err == nil && st.Size() > 0 {
		return nil, fmt.Errorf("new segment %s already holds %d bytes: %w", p, st.Size(), ErrStorage)
	}
	// Stale index files of a former segment at this base would be trusted.
	for _, suf := range []string{indexSuffix, timeIndexSuffix} {
		if err := os.Remove(filepath.Join(l.dir, segmentName(base, suf))); err != nil && !errors.Is(err, os.ErrNotExist) {
			return nil, fmt.Errorf("remove stale index of new segment %d: %w", base, err)
		}
	}
	seg, _, err := openSegment(l.dir, base, cfg, l.files)
	if err != nil {
		return nil, fmt.Errorf("new segment in %s: %w: %w", l.dir, ErrStorage, err)
	}
	if !syncDir {
		return seg, nil
	}
	if err := l.fsyncDir(l.dir); err != nil {
		l.logger.Warn("fsync dir after creating segment", "err", err)
	}
	return seg, nil
}

// batchInfo converts a header for the producer-state hook.
func batchInfo(h recordbatch.Header) BatchInfo {
	last := int32(-1)
	if h.BaseSequence >= 0 {
		// Sequences wrap at MaxInt32 like Kafka's incrementSequence.
		last = int32((int64(h.BaseSequence) + int64(h.LastOffsetDelta)) % (math.MaxInt32 + 1))
	}
	return BatchInfo{
		FirstOffset:   h.BaseOffset,
		LastOffset:    h.LastOffset(),
		ProducerID:    h.ProducerID,
		ProducerEpoch: h.ProducerEpoch,
		BaseSequence:  h.BaseSequence,
		LastSequence:  last,
		MaxTimestamp:  h.MaxTimestamp,
		Transactional: h.Transactional(),
		Control:       h.Control(),
	}
}
