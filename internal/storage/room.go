package storage

import (
	"errors"
	"fmt"
	"syscall"
	"time"
)

// Writable and the room probe: what a follower asks before fetching.
//
// A log whose write found no room (ENOSPC, EDQUOT) takes writes again as
// soon as there is room, with no restart. A follower must not fetch
// while there is none: its fetch offset would tell the leader it is
// caught up whenever the leader has nothing newer, and the leader would
// add it to the ISR, where its failing appends would then hold the high
// watermark (and every acks=all produce) until replica.lag.time.max.ms
// threw it out again. So after such a failure the log answers Writable
// with ErrStorage until a probe finds room: the file system is asked to
// allocate probeBytes past the end of the active segment (fallocate with
// FALLOC_FL_KEEP_SIZE, the file's size untouched), and the blocks are
// given back at once. A file system without the call cannot be probed:
// the log is then taken as writable and the next write tells.

// probeBytes is the room a probe asks for: one follower fetch of a
// partition (replica.fetch.max.bytes' default). probeInterval spaces the
// probes of one log: a follower asks before every fetch it builds.
const (
	probeBytes    = 1 << 20
	probeInterval = 100 * time.Millisecond
)

// noteWriteLocked records the outcome of a write: a lack of room makes
// Writable probe, a success ends that.
func (l *Log) noteWriteLocked(err error) {
	switch {
	case err == nil:
		if l.outOfRoom != nil {
			l.outOfRoom = nil
			l.refusing.Store(l.writeRefusedLocked() != nil)
		}
	case errors.Is(err, syscall.ENOSPC) || errors.Is(err, syscall.EDQUOT):
		l.outOfRoom = err
		l.refusing.Store(true)
	}
}

// Refusing reports whether the log's last write failed and nothing has
// shown it can take writes since (no probe: for metrics).
func (l *Log) Refusing() bool { return l.refusing.Load() }

// Writable reports why the log cannot take writes now; nil if it can, as
// far as it can tell. A torn log and one past a failed fsync refuse
// writes until restarted; one whose last write found no room is probed
// (see above). Cheap while nothing failed: one atomic load.
func (l *Log) Writable() error {
	if !l.refusing.Load() {
		return nil
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed {
		return ErrClosed
	}
	if err := l.writeRefusedLocked(); err != nil {
		return err
	}
	if l.outOfRoom == nil {
		return nil
	}
	now := time.Now()
	if now.Sub(l.probedAt) < probeInterval {
		return fmt.Errorf("%s: %w: no room: %w", l.dir, ErrStorage, l.outOfRoom)
	}
	l.probedAt = now
	seg := l.active()
	if err := seg.file.probeRoom(seg.size.Load(), probeBytes); err != nil {
		l.outOfRoom = err
		return fmt.Errorf("%s: %w: no room: %w", l.dir, ErrStorage, err)
	}
	l.outOfRoom = nil
	l.refusing.Store(false)
	return nil
}

// probeRoom asks the file system for n bytes of blocks past size (the
// file's end) and gives them back: an error only when there is no room.
// Any reservation past the end goes with them (reserveAhead makes a new
// one).
func (h *segFile) probeRoom(size, n int64) error {
	f, err := h.acquire()
	if err != nil {
		return err
	}
	defer h.release()
	err = fallocateKeepSize(f, size, n)
	if errors.Is(err, syscall.ENOSPC) || errors.Is(err, syscall.EDQUOT) {
		return err
	}
	if err != nil {
		return nil // cannot be probed here: the next write tells
	}
	// Truncating a file to its own size frees its blocks past the end.
	h.reserved = 0
	if err := f.Truncate(size); err != nil {
		return fmt.Errorf("give back the probe's room: %w", err)
	}
	return nil
}
