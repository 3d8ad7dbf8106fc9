package storage

import (
	"context"
	"fmt"
	"path/filepath"
	"testing"

	"github.com/weir-project/weir/internal/storage/checkpoint"
)

// TestManagerBackgroundCleaner lets Run's cleaner compact a log, checks
// the cleaner-offset-checkpoint file, and that a restart restores it.
func TestManagerBackgroundCleaner(t *testing.T) {
	dir := t.TempDir()
	cfg := compactConfig()
	mcfg := ManagerConfig{Dirs: []string{dir}, Defaults: testConfig(), CleanerBackoffMs: 10}
	m, err := OpenManager(mcfg, quietLogger())
	if err != nil {
		t.Fatal(err)
	}
	tp := TopicPartition{Topic: "__consumer_offsets", Partition: 3}
	l, err := m.GetOrCreate(tp, cfg)
	if err != nil {
		t.Fatal(err)
	}
	model := map[string]string{}
	for i := range 60 {
		k := fmt.Sprintf("group-%d", i%7)
		v := fmt.Sprintf("offset %d", i)
		model[k] = v
		mustAppend(t, l, keyedBatch(t, batchOpts{ts: t0.UnixMilli()}, kv{key: k, value: v}), 0)
		if i%10 == 9 {
			forceRoll(t, l)
		}
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		m.Run(ctx)
	}()
	waitFor(t, func() bool { return l.CleanerCheckpoint() == 60 })
	cp := filepath.Join(dir, cleanerCheckpointFile)
	waitFor(t, func() bool {
		offs, err := checkpoint.ReadOffsets(cp)
		return err == nil && offs[checkpoint.TopicPartition{Topic: tp.Topic, Partition: tp.Partition}] == 60
	})
	recs := checkState(t, l, model, "background cleaned")
	if len(recs) != len(model) {
		t.Fatalf("%d records for %d keys", len(recs), len(model))
	}
	cancel()
	<-done
	if err := m.Close(); err != nil {
		t.Fatal(err)
	}

	m2, err := OpenManager(ManagerConfig{Dirs: []string{dir}, Defaults: cfg, DisableCleaner: true}, quietLogger())
	if err != nil {
		t.Fatal(err)
	}
	defer m2.Close()
	l2 := m2.Get(tp)
	if l2 == nil || l2.CleanerCheckpoint() != 60 {
		t.Fatalf("cleaner checkpoint not restored: %v", l2)
	}
	checkState(t, l2, model, "reopened")
	ctx2, cancel2 := context.WithCancel(context.Background())
	defer cancel2()
	m2.startCleaner(ctx2) // what Run does first
	m2.cleaner.mu.Lock()
	started := m2.cleaner.cancel != nil
	m2.cleaner.mu.Unlock()
	if started {
		t.Fatal("log.cleaner.enable=false still started the cleaner")
	}
}

// TestManagerCloseDuringCleaning closes the manager while its cleaner may
// be mid-pass: Close waits for it, and the reopened log is whole.
func TestManagerCloseDuringCleaning(t *testing.T) {
	dir := t.TempDir()
	cfg := compactConfig()
	cfg.SegmentBytes = 16 << 10
	m, err := OpenManager(ManagerConfig{Dirs: []string{dir}, Defaults: cfg, CleanerBackoffMs: 1}, quietLogger())
	if err != nil {
		t.Fatal(err)
	}
	tp := TopicPartition{Topic: "c", Partition: 0}
	l, err := m.GetOrCreate(tp, cfg)
	if err != nil {
		t.Fatal(err)
	}
	model := map[string]string{}
	for i := range 400 {
		k := fmt.Sprintf("k%d", i%50)
		v := fmt.Sprintf("%s/%d/%0200d", k, i, i)
		model[k] = v
		mustAppend(t, l, keyedBatch(t, batchOpts{ts: t0.UnixMilli()}, kv{key: k, value: v}), 0)
	}
	forceRoll(t, l)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go m.Run(ctx)
	waitFor(t, func() bool {
		m.cleaner.mu.Lock()
		defer m.cleaner.mu.Unlock()
		return m.cleaner.cancel != nil
	})
	if err := m.Close(); err != nil {
		t.Fatal(err)
	}
	m2, err := OpenManager(ManagerConfig{Dirs: []string{dir}, Defaults: cfg, DisableCleaner: true}, quietLogger())
	if err != nil {
		t.Fatal(err)
	}
	defer m2.Close()
	l2 := m2.Get(tp)
	if files := leftovers(t, l2.Dir()); len(files) != 0 {
		t.Fatalf("leftovers: %v", files)
	}
	checkState(t, l2, model, "after close during cleaning")
}
