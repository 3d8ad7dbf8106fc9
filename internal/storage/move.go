package storage

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/weir-project/weir/internal/storage/checkpoint"
)

// Moving a partition's log between the log dirs of one broker
// (AlterReplicaLogDirs), copy then swap, crash safe:
//
//  1. the caller stops serving the partition; MoveLog closes its log, so
//     nothing is appended (or acknowledged) past what gets copied;
//  2. every file is copied into "<dest>/<topic>-<partition>.<hex>-future"
//     and fsynced;
//  3. a marker file holding the log start offset and high watermark is
//     written into it atomically: from then on the copy is complete;
//  4. the source is renamed "...-delete", the copy renamed to its final
//     name, the source removed, the log reopened from its new dir;
//  5. once the new dir's checkpoints hold the partition, the marker goes.
//
// OpenManager finishes or undoes a move a crash interrupted: a future
// directory without its marker is an unfinished copy (the source is
// intact) and is removed; one with the marker replaces the source, as
// step 4 would have; a marker found in a partition's own directory gives
// its log start offset and high watermark (the larger of it and the
// checkpoints'), and is dropped after the next checkpoint.

// ErrLogDirNotFound: LOG_DIR_NOT_FOUND (57), a directory that is not one
// of log.dirs.
var ErrLogDirNotFound = errors.New("log dir not found")

// ErrUnknownPartition: the partition has no log here.
var ErrUnknownPartition = errors.New("partition not hosted")

// ErrMoving: the partition's log is being moved to another log dir.
var ErrMoving = errors.New("log being moved between log dirs")

const (
	futureSuffix   = "-future"
	moveMarkerFile = "move-complete"
)

// DirIndex returns the position of dir among the log dirs (compared as
// absolute, cleaned paths), or ErrLogDirNotFound.
func (m *Manager) DirIndex(dir string) (int, error) {
	want, err := filepath.Abs(dir)
	if err != nil {
		return 0, fmt.Errorf("%w: %s", ErrLogDirNotFound, dir)
	}
	for i, d := range m.cfg.Dirs {
		if abs, err := filepath.Abs(d); err == nil && abs == want {
			return i, nil
		}
	}
	return 0, fmt.Errorf("%w: %s is not in log.dirs", ErrLogDirNotFound, dir)
}

// MoveLog moves tp's log to log dir dest, keeping its log start offset
// and setting its high watermark to hw. The caller has stopped serving
// the partition (and must not use the old *Log again); the partition can
// be opened again (GetOrCreate, Get) once MoveLog returns, from the new
// dir on success, from the old one if the copy failed. Moving a log to
// the dir it is in does nothing.
func (m *Manager) MoveLog(tp TopicPartition, dest int, hw int64) (err error) {
	if dest < 0 || dest >= len(m.cfg.Dirs) {
		return fmt.Errorf("move %s: %w: index %d", tp.dirName(), ErrLogDirNotFound, dest)
	}
	m.mu.Lock()
	ml, ok := m.logs[tp]
	switch {
	case m.closed:
		m.mu.Unlock()
		return ErrClosed
	case !ok:
		m.mu.Unlock()
		return fmt.Errorf("move %s: %w", tp.dirName(), ErrUnknownPartition)
	case m.moving[tp]:
		m.mu.Unlock()
		return fmt.Errorf("move %s: %w", tp.dirName(), ErrMoving)
	case ml.dir == dest:
		m.mu.Unlock()
		return nil
	}
	if m.moving == nil {
		m.moving = map[TopicPartition]bool{}
	}
	m.moving[tp] = true
	delete(m.logs, tp)
	m.perDir[ml.dir]--
	m.mu.Unlock()

	old := ml.log
	src := old.Dir()
	start, cfg := old.LogStartOffset(), old.config()
	hw = min(max(hw, old.HighWatermark()), old.LogEndOffset())
	if err := old.Flush(); err != nil && !errors.Is(err, ErrClosed) {
		m.finishMove(tp, ml, nil)
		return fmt.Errorf("move %s: flush: %w", tp.dirName(), err)
	}
	if err := old.Close(); err != nil {
		m.logger.Warn("closing a log to move it", "dir", src, "err", err)
	}
	final := filepath.Join(m.cfg.Dirs[dest], tp.dirName())
	newLog, err := m.copyAndSwap(src, final, dest, cfg, start, hw)
	if err != nil {
		// The source is intact: reopen it where it was.
		re, rerr := openLogWithFiles(src, cfg, 0, start, false, m.logger, m.files)
		if rerr != nil {
			m.finishMove(tp, managedLog{}, nil)
			return fmt.Errorf("move %s: %w; reopening it in %s: %w", tp.dirName(), err, src, rerr)
		}
		re.SetHighWatermark(min(hw, re.LogEndOffset()))
		m.finishMove(tp, managedLog{log: re, dir: ml.dir}, re)
		return fmt.Errorf("move %s to %s: %w", tp.dirName(), m.cfg.Dirs[dest], err)
	}
	m.finishMove(tp, managedLog{log: newLog, dir: dest}, newLog)
	if err := m.Checkpoint(); err != nil {
		m.logger.Warn("checkpoint after moving a log", "partition", tp.dirName(), "err", err)
	} else if err := dropMoveMarker(final); err != nil {
		m.logger.Warn("finish moving a log", "partition", tp.dirName(), "err", err)
	}
	m.logger.Info("moved log to another log dir", "partition", tp.dirName(), "from", filepath.Dir(src), "to", m.cfg.Dirs[dest])
	return nil
}

// finishMove ends a move: the log (if any) is loaded again.
func (m *Manager) finishMove(tp TopicPartition, ml managedLog, l *Log) {
	m.mu.Lock()
	defer m.mu.Unlock()
	delete(m.moving, tp)
	if l != nil {
		m.adopt(l)
		m.logs[tp] = ml
		m.perDir[ml.dir]++
	}
}

// copyAndSwap does steps 2-4 and opens the moved log.
func (m *Manager) copyAndSwap(src, final string, dest int, cfg Config, start, hw int64) (*Log, error) {
	var rnd [8]byte
	if _, err := rand.Read(rnd[:]); err != nil {
		return nil, err
	}
	future := final + "." + hex.EncodeToString(rnd[:]) + futureSuffix
	if err := copyLogDir(src, future); err != nil {
		os.RemoveAll(future)
		return nil, err
	}
	marker := fmt.Sprintf("%d %d\n", start, hw)
	if err := checkpoint.WriteFileAtomic(filepath.Join(future, moveMarkerFile), []byte(marker)); err != nil {
		os.RemoveAll(future)
		return nil, err
	}
	// From here the copy is complete; a crash is finished by OpenManager.
	if err := completeMove(src, future, final); err != nil {
		return nil, err
	}
	l, err := openLogWithFiles(final, cfg, 0, start, false, m.logger, m.files)
	if err != nil {
		return nil, fmt.Errorf("open moved log %s: %w", final, err)
	}
	l.SetHighWatermark(min(hw, l.LogEndOffset()))
	return l, nil
}

// completeMove replaces src (if it still exists) by the complete copy
// future, named final.
func completeMove(src, future, final string) error {
	if src != "" {
		if _, err := os.Stat(src); err == nil {
			var rnd [8]byte
			if _, err := rand.Read(rnd[:]); err != nil {
				return err
			}
			tomb := src + "." + hex.EncodeToString(rnd[:]) + "-delete"
			if err := os.Rename(src, tomb); err != nil {
				return fmt.Errorf("retire moved log %s: %w", src, err)
			}
			if err := syncDir(filepath.Dir(src)); err != nil {
				return err
			}
			defer os.RemoveAll(tomb)
		}
	}
	if err := os.Rename(future, final); err != nil {
		return fmt.Errorf("rename %s to %s: %w", future, final, err)
	}
	// The marker stays until the new dir's checkpoints hold the
	// partition (dropMoveMarker): until then it is what gives a restart
	// the log start offset and high watermark.
	return syncDir(filepath.Dir(final))
}

// dropMoveMarker removes the marker of a finished move, once the log
// dir's checkpoints know the partition.
func dropMoveMarker(dir string) error {
	if err := os.Remove(filepath.Join(dir, moveMarkerFile)); err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("remove move marker in %s: %w", dir, err)
	}
	return syncDir(dir)
}

// readMoveMarker reads the offsets a move's marker in dir holds; ok is
// false without a marker.
func readMoveMarker(dir string) (mo movedOffsets, ok bool, err error) {
	data, err := os.ReadFile(filepath.Join(dir, moveMarkerFile))
	if errors.Is(err, os.ErrNotExist) {
		return mo, false, nil
	}
	if err != nil {
		return mo, false, fmt.Errorf("read move marker in %s: %w", dir, err)
	}
	f := strings.Fields(string(data))
	if len(f) != 2 {
		return mo, false, fmt.Errorf("move marker in %s: %q", dir, data)
	}
	if mo.logStart, err = strconv.ParseInt(f[0], 10, 64); err == nil {
		mo.hw, err = strconv.ParseInt(f[1], 10, 64)
	}
	if err != nil {
		return mo, false, fmt.Errorf("move marker in %s: %w", dir, err)
	}
	return mo, true, nil
}

// copyLogDir copies the regular files of src into a new directory dst,
// fsyncing each and dst itself.
func copyLogDir(src, dst string) error {
	entries, err := os.ReadDir(src)
	if err != nil {
		return fmt.Errorf("list %s: %w", src, err)
	}
	if err := os.Mkdir(dst, 0o755); err != nil {
		return fmt.Errorf("create %s: %w", dst, err)
	}
	for _, e := range entries {
		if !e.Type().IsRegular() {
			continue
		}
		if err := copyLogFile(filepath.Join(src, e.Name()), filepath.Join(dst, e.Name())); err != nil {
			return err
		}
	}
	if err := syncDir(dst); err != nil {
		return err
	}
	return syncDir(filepath.Dir(dst))
}

func copyLogFile(src, dst string) error {
	in, err := os.Open(src)
	if err != nil {
		return fmt.Errorf("open %s: %w", src, err)
	}
	defer in.Close()
	out, err := os.OpenFile(dst, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o644)
	if err != nil {
		return fmt.Errorf("create %s: %w", dst, err)
	}
	if _, err := io.Copy(out, in); err != nil {
		out.Close()
		return fmt.Errorf("copy %s: %w: %w", src, ErrStorage, err)
	}
	if err := out.Sync(); err != nil {
		out.Close()
		return fmt.Errorf("fsync %s: %w: %w", dst, ErrStorage, err)
	}
	return out.Close()
}

// movedOffsets is what a move's marker says.
type movedOffsets struct{ logStart, hw int64 }

// recoverMoves finishes or undoes the moves a crash interrupted (see the
// top of this file), before the log dirs are scanned, and returns the
// offsets the marker of each moved partition holds: its new dir's
// checkpoints may not know it yet.
func recoverMoves(dirs []string) (map[TopicPartition]movedOffsets, error) {
	out := map[TopicPartition]movedOffsets{}
	for _, dir := range dirs {
		entries, err := os.ReadDir(dir)
		if err != nil {
			if errors.Is(err, os.ErrNotExist) {
				continue
			}
			return nil, fmt.Errorf("list log dir %s: %w", dir, err)
		}
		for _, e := range entries {
			if !e.IsDir() {
				continue
			}
			path := filepath.Join(dir, e.Name())
			if !strings.HasSuffix(e.Name(), futureSuffix) {
				// A finished move whose marker is still there.
				if tp, ok := parseTopicPartition(e.Name()); ok {
					mo, marked, err := readMoveMarker(path)
					if err != nil {
						return nil, err
					}
					if marked {
						out[tp] = mo
					}
				}
				continue
			}
			dot := strings.LastIndexByte(e.Name(), '.')
			tp, ok := parseTopicPartition(e.Name()[:max(dot, 0)])
			mo, marked, merr := readMoveMarker(path)
			if !ok || !marked || merr != nil {
				// An unfinished copy: the source is intact.
				if err := os.RemoveAll(path); err != nil {
					return nil, fmt.Errorf("remove unfinished log copy %s: %w", path, err)
				}
				continue
			}
			src := ""
			for _, other := range dirs {
				if other != dir {
					if _, err := os.Stat(filepath.Join(other, tp.dirName())); err == nil {
						src = filepath.Join(other, tp.dirName())
					}
				}
			}
			if err := completeMove(src, path, filepath.Join(dir, tp.dirName())); err != nil {
				return nil, fmt.Errorf("finish moving %s: %w", tp.dirName(), err)
			}
			out[tp] = mo
		}
	}
	return out, nil
}

// dropMoveMarkers checkpoints the partitions whose moves recoverMoves
// finished, then removes their markers.
func (m *Manager) dropMoveMarkers(moved map[TopicPartition]movedOffsets) error {
	if len(moved) == 0 {
		return nil
	}
	if err := m.Checkpoint(); err != nil {
		return err
	}
	for tp := range moved {
		if l := m.Get(tp); l != nil {
			if err := dropMoveMarker(l.Dir()); err != nil {
				return err
			}
		}
	}
	return nil
}
