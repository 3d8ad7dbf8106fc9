package producerstate

import (
	"bytes"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/weir-project/weir/internal/storage/checkpoint"
)

const snapshotSuffix = ".snapshot"

// SnapshotPath is the snapshot file for offset in dir.
func SnapshotPath(dir string, offset int64) string {
	return filepath.Join(dir, fmt.Sprintf("%020d%s", offset, snapshotSuffix))
}

// listSnapshots returns the offsets of dir's snapshot files, ascending.
func listSnapshots(dir string) ([]int64, error) {
	ents, err := os.ReadDir(dir)
	if err != nil {
		return nil, fmt.Errorf("list producer snapshots in %s: %w", dir, err)
	}
	var offs []int64
	for _, e := range ents {
		stem, ok := strings.CutSuffix(e.Name(), snapshotSuffix)
		if !ok || len(stem) != 20 || !e.Type().IsRegular() {
			continue
		}
		off, err := strconv.ParseInt(stem, 10, 64)
		if err != nil || off < 0 {
			continue
		}
		offs = append(offs, off)
	}
	slices.Sort(offs)
	return offs, nil
}

// Load builds a partition's producer state from its latest valid snapshot
// at or below logEnd. Snapshots above logEnd (left by a log cut in
// recovery) and corrupt ones are deleted on the way, so the snapshot files
// that remain agree with the state. It returns the state and the offset
// the log must replay from into it (the snapshot's, or logStart without
// one), which is what Log.SetProducerStateHook takes.
func Load(dir string, logStart, logEnd int64, logger *slog.Logger) (*State, int64, error) {
	if logger == nil {
		logger = slog.Default()
	}
	s := &State{dir: dir, logger: logger, producers: make(map[int64]*entry)}
	s.fileMu.Lock()
	defer s.fileMu.Unlock()
	off, producers, err := s.loadLatestLocked(logEnd)
	if err != nil {
		return nil, 0, err
	}
	if off < 0 {
		return s, logStart, nil
	}
	s.producers = producers
	return s, max(off, logStart), nil
}

// loadLatestLocked deletes snapshots above end, then reads the latest one
// at or below end, deleting each that fails to load. It returns offset -1
// when none loads.
func (s *State) loadLatestLocked(end int64) (int64, map[int64]*entry, error) {
	offs, err := listSnapshots(s.dir)
	if err != nil {
		return -1, nil, err
	}
	for i := len(offs) - 1; i >= 0; i-- {
		off := offs[i]
		path := SnapshotPath(s.dir, off)
		if off > end {
			if err := s.removeFile(path); err != nil {
				return -1, nil, fmt.Errorf("remove producer snapshot past log end %d: %w", end, err)
			}
			continue
		}
		data, err := os.ReadFile(path)
		if err == nil {
			var producers map[int64]*entry
			if producers, err = decodeSnapshot(data); err == nil {
				s.logger.Debug("loaded producer snapshot", "file", path, "producers", len(producers))
				s.last = lastSnapshot{path: path, data: data}
				return off, producers, nil
			}
		}
		// The log holds everything the snapshot held: drop it and fall
		// back to an older snapshot, or a replay of the whole log.
		s.logger.Warn("discarding unreadable producer snapshot; rebuilding from the log", "file", path, "err", err)
		if err := s.removeFile(path); err != nil {
			return -1, nil, fmt.Errorf("remove unreadable producer snapshot: %w", err)
		}
	}
	return -1, nil, nil
}

// removeFile removes a snapshot file (the caller holds fileMu), and
// forgets it if it was the last one written or loaded.
func (s *State) removeFile(path string) error {
	if path == s.last.path {
		s.last = lastSnapshot{}
	}
	if err := os.Remove(path); err != nil && !errors.Is(err, os.ErrNotExist) {
		return err
	}
	return nil
}

// Snapshot writes the state into <dir>/<nextOffset>.snapshot through a
// temp file and a rename, fsynced (file and directory) if sync. The log
// calls it at clean close (with sync, or without when a syncfs of the
// whole filesystem follows), and at each segment roll without: the roll
// holds the log's lock, and the log fsyncs the snapshot with the old
// segment, outside it, before its recovery point passes nextOffset. One
// lost before that fails its CRC at load and is replaced by an older
// snapshot and a longer replay.
//
// The file this state last wrote or loaded is not written again with the
// same bytes, unless sync asks for an fsync it never had.
func (s *State) Snapshot(dir string, nextOffset int64, sync bool) error {
	s.mu.Lock()
	data := encodeSnapshot(s.producers)
	s.mu.Unlock()
	s.fileMu.Lock()
	defer s.fileMu.Unlock()
	path := SnapshotPath(dir, nextOffset)
	if path == s.last.path && (s.last.synced || !sync) && bytes.Equal(data, s.last.data) {
		return nil
	}
	write := checkpoint.ReplaceFile
	if sync {
		write = checkpoint.WriteFileAtomic
	}
	s.last = lastSnapshot{}
	if err := write(path, data); err != nil {
		return fmt.Errorf("producer snapshot at %d: %w", nextOffset, err)
	}
	s.last = lastSnapshot{path: path, data: data, synced: sync}
	return nil
}

// TruncateTo is called after the log was truncated to offset: snapshots
// above it are deleted and the state is reloaded from the latest valid
// snapshot at or below it (empty if none); the log then replays its
// batches from that snapshot on.
func (s *State) TruncateTo(offset int64) {
	s.fileMu.Lock()
	defer s.fileMu.Unlock()
	off, producers, err := s.loadLatestLocked(offset)
	if err != nil {
		// The log will replay from whatever snapshot it finds; leave the
		// state empty so at worst duplicates go undetected, and say so.
		s.logger.Error("reloading producer state after truncation", "offset", offset, "err", err)
	}
	if off < 0 || err != nil {
		producers = make(map[int64]*entry)
	}
	s.mu.Lock()
	s.producers = producers
	s.mu.Unlock()
}

// DeleteSnapshotsBefore removes snapshot files below logStart (their
// segments are gone) except the newest one at or below it, which still
// carries producers whose last batch preceded the log start.
func (s *State) DeleteSnapshotsBefore(logStart int64) error {
	s.fileMu.Lock()
	defer s.fileMu.Unlock()
	offs, err := listSnapshots(s.dir)
	if err != nil {
		return err
	}
	keep := -1
	for i, off := range offs {
		if off <= logStart {
			keep = i
		}
	}
	for i, off := range offs {
		if off >= logStart || i == keep {
			break
		}
		if err := s.removeFile(SnapshotPath(s.dir, off)); err != nil {
			return fmt.Errorf("remove producer snapshot below log start %d: %w", logStart, err)
		}
	}
	return nil
}
