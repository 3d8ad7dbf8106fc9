package storage

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/weir-project/weir/internal/storage/checkpoint"
)

// DefaultRecoveryThreadsPerDir is num.recovery.threads.per.data.dir's
// default (Kafka's, 2).
const DefaultRecoveryThreadsPerDir = 2

// recoveryThreads is how many logs of one dir are loaded or flushed at once.
func (m *Manager) recoveryThreads() int {
	if m.cfg.RecoveryThreadsPerDir > 0 {
		return m.cfg.RecoveryThreadsPerDir
	}
	return DefaultRecoveryThreadsPerDir
}

// LoadStats describe the load of the logs at start (OpenManager).
type LoadStats struct {
	// Duration is the time loading took, every log dir, recovery
	// included.
	Duration time.Duration
	// Logs counts the logs loaded.
	Logs int
	// RecoveredLogs counts those with unflushed segments (the dir was
	// not shut down cleanly), and RecoveredSegments those segments: each
	// rescanned from its log's recovery point on.
	RecoveredLogs, RecoveredSegments int
	// LostUnflushed says a log dir was not shut down cleanly and the
	// machine restarted since it was opened (or that cannot be told):
	// writes not yet flushed then may be lost (boot.go).
	LostUnflushed bool
}

// LoadStats says what loading the logs at start took.
func (m *Manager) LoadStats() LoadStats { return m.loaded }

// loadJob is one partition directory found at start.
type loadJob struct {
	tp            TopicPartition
	dir           int
	path          string
	rp, lso, hw   int64
	cleaned       int64
	cleanShutdown bool
}

// loadAll loads every "<topic>-<partition>" directory of every log dir:
// each dir with its own recoveryThreads workers (so a slow disk does not
// hold the others back), every log recovered from its recovery point
// unless the dir's clean-shutdown marker is there. The markers are
// removed once everything is loaded, so a crash from then on is detected.
func (m *Manager) loadAll() error {
	start := time.Now()
	defer func() { m.loaded.Duration = time.Since(start) }()
	jobs := make([][]loadJob, len(m.cfg.Dirs))
	found := make(map[TopicPartition]string) // partition -> its directory
	moved, err := recoverMoves(m.cfg.Dirs)
	if err != nil {
		return fmt.Errorf("open log manager: %w", err)
	}
	cleanerPoints := m.readCleanerCheckpoints()
	boot := m.cfg.BootID
	if boot == "" {
		boot = currentBoot()
	}
	lost := make([]bool, len(m.cfg.Dirs))
	for i, dir := range m.cfg.Dirs {
		var err error
		if jobs[i], err = m.findLogs(i, dir, found, cleanerPoints[i], moved); err != nil {
			return err
		}
		_, err = os.Stat(filepath.Join(dir, cleanShutdownFile))
		lost[i] = mayHaveLost(dir, err == nil, len(jobs[i]), boot)
		m.loaded.LostUnflushed = m.loaded.LostUnflushed || lost[i]
	}

	var wg sync.WaitGroup
	var mu sync.Mutex // guards errs and m.logs
	var errs []error
	for _, dirJobs := range jobs {
		next := make(chan loadJob)
		for range min(m.recoveryThreads(), len(dirJobs)) {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for j := range next {
					l, err := openLogWithFiles(j.path, m.cfg.Defaults, j.rp, j.lso, j.cleanShutdown, m.logger, m.files)
					mu.Lock()
					if err != nil {
						errs = append(errs, fmt.Errorf("load %s: %w", j.path, err))
					} else {
						l.setCleanerCheckpoint(j.cleaned)
						l.SetHighWatermark(min(j.hw, l.LogEndOffset()))
						m.adopt(l)
						m.loaded.Logs++
						if l.recoveredSegments > 0 {
							m.loaded.RecoveredLogs++
							m.loaded.RecoveredSegments += l.recoveredSegments
						}
						m.logs[j.tp] = managedLog{log: l, dir: j.dir}
						m.perDir[j.dir]++
					}
					mu.Unlock()
				}
			}()
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer close(next)
			for _, j := range dirJobs {
				next <- j
			}
		}()
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		for _, ml := range m.logs {
			ml.log.Close()
		}
		return err
	}
	for i, dir := range m.cfg.Dirs {
		if err := recordBoot(dir, boot, lost[i]); err != nil {
			return err
		}
		if err := os.Remove(filepath.Join(dir, cleanShutdownFile)); err != nil && !errors.Is(err, os.ErrNotExist) {
			return fmt.Errorf("remove clean-shutdown marker in %s: %w", dir, err)
		}
		if err := syncDir(dir); err != nil {
			return err
		}
	}
	if err := m.dropMoveMarkers(moved); err != nil {
		for _, ml := range m.logs {
			ml.log.Close()
		}
		return fmt.Errorf("open log manager: %w", err)
	}
	return nil
}

// findLogs lists the partition directories of log dir i with what the
// dir's checkpoints say of each, and finishes deletions a crash
// interrupted. A partition in moved was moved here from another dir just
// before a crash (see recoverMoves): this dir's checkpoints may not know it.
func (m *Manager) findLogs(i int, dir string, found map[TopicPartition]string, cleaned map[checkpoint.TopicPartition]int64, moved map[TopicPartition]movedOffsets) ([]loadJob, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("create log dir %s: %w", dir, err)
	}
	_, err := os.Stat(filepath.Join(dir, cleanShutdownFile))
	clean := err == nil
	rps := m.readCheckpoint(filepath.Join(dir, recoveryPointFile))
	lsos := m.readCheckpoint(filepath.Join(dir, logStartFile))
	hws := m.readCheckpoint(filepath.Join(dir, hwFile))
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, fmt.Errorf("list log dir %s: %w", dir, err)
	}
	var jobs []loadJob
	for _, e := range entries {
		if !e.IsDir() {
			continue
		}
		p := filepath.Join(dir, e.Name())
		if strings.HasSuffix(e.Name(), "-delete") {
			// A partition deleted just before a crash: finish the job.
			if err := os.RemoveAll(p); err != nil {
				return nil, fmt.Errorf("remove deleted partition dir %s: %w", p, err)
			}
			continue
		}
		tp, ok := parseTopicPartition(e.Name())
		if !ok {
			continue
		}
		if prev, dup := found[tp]; dup {
			// Which copy is current cannot be told; Kafka refuses too.
			return nil, fmt.Errorf("open log manager: duplicate log directories for partition %s: %s and %s; remove one of them", tp.dirName(), prev, p)
		}
		found[tp] = p
		key := checkpoint.TopicPartition{Topic: tp.Topic, Partition: tp.Partition}
		j := loadJob{tp: tp, dir: i, path: p, rp: rps[key], lso: lsos[key], hw: hws[key], cleaned: cleaned[key], cleanShutdown: clean}
		if mo, ok := moved[tp]; ok {
			j.rp, j.cleaned, j.cleanShutdown = 0, 0, false
			j.lso, j.hw = max(j.lso, mo.logStart), max(j.hw, mo.hw)
		}
		jobs = append(jobs, j)
	}
	return jobs, nil
}

// eachLog runs fn on every given log, recoveryThreads logs of a dir at a
// time (Kafka flushes at shutdown with the recovery threads too).
func (m *Manager) eachLog(logs map[TopicPartition]managedLog, fn func(TopicPartition, managedLog)) {
	byDir := make([][]TopicPartition, len(m.cfg.Dirs))
	for tp, ml := range logs {
		byDir[ml.dir] = append(byDir[ml.dir], tp)
	}
	var wg sync.WaitGroup
	for _, tps := range byDir {
		next := make(chan TopicPartition)
		for range min(m.recoveryThreads(), len(tps)) {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for tp := range next {
					fn(tp, logs[tp])
				}
			}()
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer close(next)
			for _, tp := range tps {
				next <- tp
			}
		}()
	}
	wg.Wait()
}
