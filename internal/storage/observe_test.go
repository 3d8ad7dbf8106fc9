package storage

import (
	"sync"
	"testing"
	"time"
)

// flushTimes records what a FlushObserver is told.
type flushTimes struct {
	mu    sync.Mutex
	times []time.Duration
}

func (f *flushTimes) LogFlushed(d time.Duration) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.times = append(f.times, d)
}

func (f *flushTimes) count() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.times)
}

// TestFlushObserverTimesSegmentFsyncs: with log.flush.interval.messages=1
// every append fsyncs its segment, and the manager's observer is told of
// each; a flush with nothing new to sync tells nothing.
func TestFlushObserverTimesSegmentFsyncs(t *testing.T) {
	obs := &flushTimes{}
	cfg := testConfig()
	cfg.FlushIntervalMessages = 1
	m, err := OpenManager(ManagerConfig{Dirs: []string{t.TempDir()}, Defaults: cfg, FlushObserver: obs}, quietLogger())
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	l, err := m.GetOrCreate(TopicPartition{"flushed", 0}, cfg)
	if err != nil {
		t.Fatal(err)
	}
	for i := range 3 {
		mustAppend(t, l, makeBatch(t, 1, 10, 1, "f"), 0)
		if got := obs.count(); got != i+1 {
			t.Fatalf("after %d appends with log.flush.interval.messages=1, %d fsyncs observed", i+1, got)
		}
	}
	if err := l.Flush(); err != nil {
		t.Fatal(err)
	}
	if got := obs.count(); got != 3 {
		t.Fatalf("a flush with nothing unflushed was observed: %d fsyncs", got)
	}
}

// TestLoadStatsCountRecovery: a start after a crash recovers every log's
// segments from its recovery point, and LoadStats says how many; a start
// after a clean shutdown recovers nothing.
func TestLoadStatsCountRecovery(t *testing.T) {
	dir := t.TempDir()
	cfg := testConfig()
	mc := ManagerConfig{Dirs: []string{dir}, Defaults: cfg}
	m, err := OpenManager(mc, quietLogger())
	if err != nil {
		t.Fatal(err)
	}
	if st := m.LoadStats(); st.Logs != 0 || st.RecoveredLogs != 0 || st.RecoveredSegments != 0 {
		t.Fatalf("an empty dir loaded %+v", st)
	}
	var logs []*Log
	for p := range int32(2) {
		l, err := m.GetOrCreate(TopicPartition{"recovered", p}, cfg)
		if err != nil {
			t.Fatal(err)
		}
		mustAppend(t, l, makeBatch(t, 2, 10, 1, "r"), 0)
		logs = append(logs, l)
	}
	if err := m.Checkpoint(); err != nil {
		t.Fatal(err)
	}
	// Crash: no clean-shutdown marker; the logs' files are let go.
	for _, l := range logs {
		if err := l.Close(); err != nil {
			t.Fatal(err)
		}
	}
	m2, err := OpenManager(mc, quietLogger())
	if err != nil {
		t.Fatal(err)
	}
	st := m2.LoadStats()
	if st.Logs != 2 || st.RecoveredLogs != 2 || st.RecoveredSegments != 2 || st.Duration <= 0 {
		t.Errorf("after a crash: %+v, want 2 logs, both recovered, one segment each, a duration", st)
	}
	if err := m2.Close(); err != nil {
		t.Fatal(err)
	}
	m3, err := OpenManager(mc, quietLogger())
	if err != nil {
		t.Fatal(err)
	}
	defer m3.Close()
	if st := m3.LoadStats(); st.Logs != 2 || st.RecoveredLogs != 0 || st.RecoveredSegments != 0 {
		t.Errorf("after a clean shutdown: %+v, want 2 logs, none recovered", st)
	}
}
