package storage

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math/rand"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/weir-project/weir/internal/storage/recordbatch"
)

// sharedLog is one log of TestManyLogsShareTinyFileCache. Readers take
// mu shared; the writer takes it exclusively only to truncate or reopen
// (a read racing a truncation may legitimately fail, which is not what
// this test is about). Appends, rolls, retention, DeleteRecords and
// cleaning run under readers.
type sharedLog struct {
	mu      sync.RWMutex
	l       atomic.Pointer[Log]
	dir     string
	cfg     Config
	compact bool
	model   logModel          // plain logs: the batches
	keys    map[string]string // compacted logs: latest value per key
	cleaned int               // cleaning passes that swapped segments in
}

// TestManyLogsShareTinyFileCache runs 12 logs with small segments (4 of
// them compacted) over one cache of 4 descriptors. A writer per log
// appends, rolls, truncates, deletes records, applies retention, flushes,
// reopens (cleanly and as after a crash) and cleans; readers read random
// logs at random offsets all the while. Every read must parse, every log
// must match its model at the end, the cache may exceed its capacity only
// by the descriptors in use at once, and the process's descriptor count
// must come back to where it started.
func TestManyLogsShareTinyFileCache(t *testing.T) {
	const capacity, nLogs, nCompact, readers = 4, 12, 4, 3
	fdsBefore := openFDs(t)
	files := newFileCache(capacity)
	seed := time.Now().UnixNano()
	if s, err := strconv.ParseInt(envOr("STORAGE_FILES_SEED", ""), 10, 64); err == nil {
		seed = s
	}
	t.Logf("seed %d (STORAGE_FILES_SEED to replay)", seed)

	logs := make([]*sharedLog, nLogs)
	for i := range logs {
		s := &sharedLog{dir: t.TempDir(), compact: i < nCompact, keys: map[string]string{}}
		s.cfg = testConfig()
		if s.compact {
			s.cfg = compactConfig()
		}
		s.cfg.SegmentBytes = 1024 + int64(i)*97
		s.cfg.IndexIntervalBytes = 128
		s.cfg.FileDeleteDelayMs = 60000 // readers may hold segments retention renamed
		l, err := openLogWithFiles(s.dir, s.cfg, 0, 0, true, quietLogger(), files)
		if err != nil {
			t.Fatal(err)
		}
		s.l.Store(l)
		logs[i] = s
	}

	var stop atomic.Bool
	var reads, peak atomic.Int64
	errc := make(chan error, nLogs+readers)
	fail := func(err error) {
		select {
		case errc <- err:
		default:
		}
		stop.Store(true)
	}
	// Each writer holds at most two descriptors at once (a cleaning pass:
	// the segment read and the one written), each reader one.
	maxOpen := int64(capacity + 2*nLogs + readers)
	var rwg, wwg sync.WaitGroup
	for r := range readers {
		rwg.Add(1)
		go func() {
			defer rwg.Done()
			rng := rand.New(rand.NewSource(seed + int64(r)))
			for !stop.Load() {
				s := logs[rng.Intn(nLogs)]
				s.mu.RLock()
				l := s.l.Load()
				start, end := l.LogStartOffset(), l.LogEndOffset()
				var err error
				if end > start {
					off := start + rng.Int63n(end-start)
					if err = checkRead(l, off); err != nil {
						err = fmt.Errorf("reader %d: %s at %d: %w", r, filepath.Base(s.dir), off, err)
					}
				}
				s.mu.RUnlock()
				if err != nil {
					fail(err)
					return
				}
				n := int64(files.Open())
				peak.Store(max(peak.Load(), n))
				if n > maxOpen {
					fail(fmt.Errorf("%d descriptors open, capacity %d, at most %d in use", n, capacity, maxOpen-capacity))
					return
				}
				reads.Add(1)
			}
		}()
	}
	for i, s := range logs {
		wwg.Add(1)
		go func() {
			defer wwg.Done()
			rng := rand.New(rand.NewSource(seed + 1000 + int64(i)))
			for step := 0; step < 250 && !stop.Load(); step++ {
				if err := s.step(rng, files, step); err != nil {
					fail(fmt.Errorf("%s step %d: %w", filepath.Base(s.dir), step, err))
					return
				}
			}
		}()
	}
	wwg.Wait()
	stop.Store(true)
	rwg.Wait()
	select {
	case err := <-errc:
		t.Fatal(err)
	default:
	}
	if n := files.Open(); n > capacity {
		t.Fatalf("%d descriptors open with nothing in use, capacity %d", n, capacity)
	}
	cleaned := 0
	for _, s := range logs {
		s.check(t)
		cleaned += s.cleaned
	}
	if cleaned == 0 {
		t.Fatal("no cleaning pass swapped a segment in")
	}
	for _, s := range logs {
		if err := s.l.Load().Close(); err != nil {
			t.Fatal(err)
		}
	}
	if n := files.Open(); n != 0 {
		t.Fatalf("%d descriptors open after every log closed", n)
	}
	if after := openFDs(t); after > fdsBefore {
		t.Fatalf("process has %d descriptors open, %d before the logs opened", after, fdsBefore)
	}
	t.Logf("%d reads, %d cleaning passes; %d opens, %d evictions, peak %d open (capacity %d)",
		reads.Load(), cleaned, files.opened.Load(), files.evictions.Load(), peak.Load(), capacity)
}

// step runs one random operation on the log and its model.
func (s *sharedLog) step(rng *rand.Rand, files *fileCache, step int) error {
	l := s.l.Load()
	p := rng.Intn(100)
	switch {
	case p < 60:
		return s.append(l, rng, step)
	case p < 66:
		return l.rollForTest()
	case p < 72 && !s.compact:
		if s.model.end == s.model.start {
			return nil
		}
		off := s.model.start + 1 + rng.Int63n(s.model.end-s.model.start)
		s.mu.Lock()
		defer s.mu.Unlock()
		if err := l.TruncateTo(off); err != nil {
			return fmt.Errorf("truncate to %d: %w", off, err)
		}
		s.model.truncate(off)
	case p < 77 && !s.compact:
		off := s.model.start + rng.Int63n(s.model.end-s.model.start+1)
		got, err := l.DeleteRecordsBefore(off)
		if err != nil {
			return fmt.Errorf("delete records before %d: %w", off, err)
		}
		s.model.dropBelow(got)
	case p < 82 && !s.compact:
		c := s.cfg
		c.RetentionBytes, c.RetentionMs = rng.Int63n(4*s.cfg.SegmentBytes), -1
		l.SetConfig(c)
		_, err := l.EnforceRetention(time.Now())
		l.SetConfig(s.cfg)
		if err != nil {
			return fmt.Errorf("retention: %w", err)
		}
		s.model.dropBelow(l.LogStartOffset())
	case p < 86:
		if err := l.Flush(); err != nil {
			return fmt.Errorf("flush: %w", err)
		}
	case p < 92 && s.compact:
		st, err := l.Clean(context.Background(), CleanOptions{Now: t0, DedupeBufferBytes: 1 << 20})
		if err != nil && !errors.Is(err, errCleanAborted) {
			return fmt.Errorf("clean: %w", err)
		}
		if st.SegmentsOut > 0 {
			s.cleaned++
		}
	case p < 96:
		return s.reopen(l, files, rng.Intn(2) == 0)
	}
	return nil
}

// append writes one batch: keyed records for a compacted log.
func (s *sharedLog) append(l *Log, rng *rand.Rand, step int) error {
	var recs []recordbatch.Record
	var kvs [][2]string
	for j := range 1 + rng.Intn(4) {
		k := fmt.Sprintf("k%d", rng.Intn(20))
		v := fmt.Sprintf("%s=%d/%d", k, step, j)
		kvs = append(kvs, [2]string{k, v})
		recs = append(recs, recordbatch.Record{OffsetDelta: int32(j), Key: []byte(k), Value: bytes.Repeat([]byte(v), 1+rng.Intn(8))})
	}
	b, err := recordbatch.Build(recordbatch.BuildOptions{BaseTimestamp: t0.UnixMilli(), ProducerID: -1, ProducerEpoch: -1, BaseSequence: -1}, recs)
	if err != nil {
		return err
	}
	info, err := l.Append(b, 0)
	if err != nil {
		return fmt.Errorf("append: %w", err)
	}
	if s.compact {
		for j, kv := range kvs {
			s.keys[kv[0]] = string(recs[j].Value)
		}
		return nil
	}
	s.model.batches = append(s.model.batches, storedBatch{base: info.FirstOffset, last: info.LastOffset, data: b})
	s.model.end = info.LastOffset + 1
	return nil
}

// reopen closes the log (or drops it as a crash would) and opens it again
// with the same descriptor cache.
func (s *sharedLog) reopen(l *Log, files *fileCache, clean bool) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	rp, start := l.RecoveryPoint(), l.LogStartOffset()
	var err error
	if clean {
		err = l.Close()
	} else {
		err = l.crash()
	}
	if err != nil {
		return fmt.Errorf("close: %w", err)
	}
	nl, err := openLogWithFiles(s.dir, s.cfg, rp, start, clean, quietLogger(), files)
	if err != nil {
		return fmt.Errorf("reopen (clean %v): %w", clean, err)
	}
	s.l.Store(nl)
	return nil
}

// check compares the log with its model (test goroutine only).
func (s *sharedLog) check(t *testing.T) {
	t.Helper()
	l := s.l.Load()
	if s.compact {
		got := applyRecords(mustRecords(t, l))
		for k, v := range s.keys {
			if got[k] != v {
				t.Fatalf("%s: key %s = %.20q, want %.20q", filepath.Base(s.dir), k, got[k], v)
			}
		}
		return
	}
	if l.LogStartOffset() != s.model.start || l.LogEndOffset() != s.model.end {
		t.Fatalf("%s: log [%d,%d), model [%d,%d)", filepath.Base(s.dir), l.LogStartOffset(), l.LogEndOffset(), s.model.start, s.model.end)
	}
	all := readAll(t, l, s.model.start)
	if len(all) != len(s.model.batches) {
		t.Fatalf("%s: %d batches, model %d", filepath.Base(s.dir), len(all), len(s.model.batches))
	}
	for i := range all {
		if !bytes.Equal(all[i].data, s.model.batches[i].data) {
			t.Fatalf("%s: batch %d at offset %d differs from the model", filepath.Base(s.dir), i, all[i].base)
		}
	}
}

func mustRecords(t *testing.T, l *Log) []logRecord {
	recs, _ := allRecords(t, l)
	return recs
}

// rollForTest rolls the active segment if it holds anything.
func (l *Log) rollForTest() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.active().size.Load() == 0 {
		return nil
	}
	_, err := l.rollLocked(l.config())
	return err
}

// openFDs counts this process's open descriptors.
func openFDs(t *testing.T) int {
	t.Helper()
	ents, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Skipf("no /proc/self/fd: %v", err)
	}
	return len(ents)
}

// TestManagerLoadsManyPartitionsWithFewDescriptors: a Manager with 300
// partitions of several segments each, limited to 8 segment descriptors,
// creates, writes, closes, reloads after a clean shutdown and after a
// crash (no marker, recovery reads the unflushed segments) and serves
// every partition, never holding more than 8 segment files open once
// idle, and the process's descriptors never grow with the partitions.
func TestManagerLoadsManyPartitionsWithFewDescriptors(t *testing.T) {
	const parts, capacity = 300, 8
	dir := t.TempDir()
	cfg := testConfig()
	cfg.SegmentBytes = 300
	mc := ManagerConfig{Dirs: []string{dir}, Defaults: cfg, MaxOpenFiles: capacity}
	before := openFDs(t)
	// Slack for what a Manager opens for a moment (checkpoints, dirs).
	allowed := before + capacity + 4
	check := func(m *Manager, what string, batches int) {
		t.Helper()
		for p := range parts {
			l := m.Get(TopicPartition{"many", int32(p)})
			if l == nil {
				t.Fatalf("%s: partition %d missing", what, p)
			}
			if l.LogEndOffset() != 2*int64(batches) || l.NumSegments() < batches/2 {
				t.Fatalf("%s: partition %d ends at %d with %d segments, want %d batches of 2", what, p, l.LogEndOffset(), l.NumSegments(), batches)
			}
			if got := readAll(t, l, 0); len(got) != batches {
				t.Fatalf("%s: partition %d reads %d batches, want %d", what, p, len(got), batches)
			}
		}
		if n := m.OpenSegmentFiles(); n > capacity {
			t.Fatalf("%s: %d segment files open, capacity %d", what, n, capacity)
		}
		if n := openFDs(t); n > allowed {
			t.Fatalf("%s: %d descriptors open, %d before the manager", what, n, before)
		}
	}
	m, err := OpenManager(mc, quietLogger())
	if err != nil {
		t.Fatal(err)
	}
	for p := range parts {
		l, err := m.GetOrCreate(TopicPartition{"many", int32(p)}, cfg)
		if err != nil {
			t.Fatal(err)
		}
		for i := range 3 {
			mustAppend(t, l, makeBatch(t, 2, 50, int64(i), fmt.Sprint("p", p)), 0)
		}
	}
	check(m, "written", 3)
	if err := m.Close(); err != nil {
		t.Fatal(err)
	}
	if m.OpenSegmentFiles() != 0 {
		t.Fatalf("%d segment files open after Close", m.OpenSegmentFiles())
	}

	m, err = OpenManager(mc, quietLogger())
	if err != nil {
		t.Fatalf("reopen after a clean shutdown: %v", err)
	}
	check(m, "after a clean shutdown", 3)
	for p := range parts {
		mustAppend(t, m.Get(TopicPartition{"many", int32(p)}), makeBatch(t, 2, 50, 9, "more"), 0)
	}
	// A crash: no flush, no checkpoint, no marker; the files are let go.
	for _, l := range m.snapshot() {
		if err := l.crash(); err != nil {
			t.Fatal(err)
		}
	}
	m, err = OpenManager(mc, quietLogger())
	if err != nil {
		t.Fatalf("reopen after a crash: %v", err)
	}
	defer m.Close()
	check(m, "after a crash", 4)
}
