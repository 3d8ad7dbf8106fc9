package storage

import (
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/weir-project/weir/internal/storage/checkpoint"
)

// TestFailedSyncfsLeavesTheDirToRecovery: when the one syncfs of a dir
// fails at shutdown, nothing in that dir may claim to be durable: no
// clean-shutdown marker, recovery points where the last real flush left
// them. The next start then recovers those logs whole, while a dir whose
// syncfs succeeded is trusted as usual.
func TestFailedSyncfsLeavesTheDirToRecovery(t *testing.T) {
	dirs := []string{t.TempDir(), t.TempDir()}
	mc := ManagerConfig{Dirs: dirs, Defaults: testConfig()}
	m, err := OpenManager(mc, quietLogger())
	if err != nil {
		t.Fatal(err)
	}
	injected := errors.New("injected writeback error")
	m.syncFS = func(dir string) error {
		if dir == dirs[0] {
			return injected
		}
		return nil
	}
	tps := []TopicPartition{{"s", 0}, {"s", 1}, {"s", 2}, {"s", 3}}
	inDir := map[TopicPartition]string{}
	for _, tp := range tps {
		l, err := m.GetOrCreate(tp, testConfig())
		if err != nil {
			t.Fatal(err)
		}
		for range 5 {
			mustAppend(t, l, makeBatch(t, 2, 50, 1, tp.Topic), 0)
		}
		inDir[tp] = filepath.Dir(l.Dir())
	}
	// One log of the failing dir is flushed before: its recovery point
	// is durable, and must stay where that flush put it.
	var flushed TopicPartition
	for _, tp := range tps {
		if inDir[tp] == dirs[0] {
			flushed = tp
			break
		}
	}
	if err := m.Get(flushed).Flush(); err != nil {
		t.Fatal(err)
	}
	mustAppend(t, m.Get(flushed), makeBatch(t, 2, 50, 1, "after flush"), 0)

	err = m.Close()
	if !errors.Is(err, injected) || !errors.Is(err, ErrStorage) {
		t.Fatalf("Close = %v, want the injected syncfs error as ErrStorage", err)
	}
	if _, err := os.Stat(filepath.Join(dirs[0], cleanShutdownFile)); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("clean-shutdown marker written despite the failed syncfs (stat: %v)", err)
	}
	if _, err := os.Stat(filepath.Join(dirs[1], cleanShutdownFile)); err != nil {
		t.Fatalf("no clean-shutdown marker in the dir whose syncfs succeeded: %v", err)
	}
	for _, d := range dirs {
		rps, err := checkpoint.ReadOffsets(filepath.Join(d, recoveryPointFile))
		if err != nil || len(rps) != 2 {
			t.Fatalf("recovery points in %s: %v, %v; want 2", d, rps, err)
		}
		for tp, rp := range rps {
			want := int64(10) // the whole log, made durable by the syncfs
			switch {
			case d == dirs[0] && tp.Partition == flushed.Partition:
				want = 10 // the flush's, not the end (12)
			case d == dirs[0]:
				want = 0
			}
			if rp != want {
				t.Errorf("recovery point of %v in %s = %d, want %d", tp, d, rp, want)
			}
		}
	}

	m2, err := OpenManager(mc, quietLogger())
	if err != nil {
		t.Fatal(err)
	}
	defer m2.Close()
	if st := m2.LoadStats(); st.RecoveredLogs != 2 {
		t.Errorf("recovered %d logs, want the 2 of the dir whose syncfs failed", st.RecoveredLogs)
	}
	for _, tp := range tps {
		want := int64(10)
		if tp == flushed {
			want = 12
		}
		if l := m2.Get(tp); l == nil || l.LogEndOffset() != want || len(readAll(t, l, 0)) != int(want/2) {
			t.Errorf("%v not reloaded whole (want end %d)", tp, want)
		}
	}
}
