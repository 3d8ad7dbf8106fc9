package storage

import (
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"sync"
	"testing"
)

// bigSegmentLog writes batches of mixed sizes (some crossing the scan's
// chunk edges, one larger than a chunk) into one segment of several MiB
// and leaves it as a crash would: nothing flushed, no clean close.
func bigSegmentLog(t testing.TB, dir string) ([]storedBatch, Config) {
	t.Helper()
	cfg := testConfig()
	cfg.MaxMessageBytes = 3 * scanChunk
	l, err := OpenLog(dir, cfg, 0, 0, true, quietLogger())
	if err != nil {
		t.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(1, 2))
	for i := range 120 {
		size := 100 + rng.IntN(60000)
		if i == 70 {
			size = scanChunk + scanChunk/2 // one batch past the chunk size
		}
		mustAppend(t, l, makeBatch(t, 1, size, int64(i), fmt.Sprintf("b%d", i)), 0)
	}
	want := readAll(t, l, 0)
	if err := l.crash(); err != nil {
		t.Fatal(err)
	}
	return want, cfg
}

// TestScanAcrossChunks: recovery of a segment larger than the scan's
// buffer keeps every batch and rebuilds indexes that find each one; a
// flipped byte deep in the file is cut at the first byte of its batch.
func TestScanAcrossChunks(t *testing.T) {
	dir := t.TempDir()
	want, cfg := bigSegmentLog(t, dir)
	logPath := segFiles(t, dir, ".log")[0]
	if st, _ := os.Stat(logPath); st.Size() < 3*scanChunk {
		t.Fatalf("segment of %d bytes does not span several chunks", st.Size())
	}
	l, err := OpenLog(dir, cfg, 0, 0, false, quietLogger())
	if err != nil {
		t.Fatal(err)
	}
	if k := checkPrefix(t, l, want, len(want)); k != len(want) {
		t.Fatalf("recovered %d of %d batches", k, len(want))
	}
	for _, b := range want {
		if got := readAll(t, l, b.base); len(got) == 0 || got[0].base != b.base {
			t.Fatalf("read from %d after reindex starts at %v", b.base, got)
		}
	}
	if err := l.crash(); err != nil {
		t.Fatal(err)
	}

	// Flip a byte inside batch 100 (past the big one, chunks in): the log
	// keeps batches 0..99 exactly.
	pos := int64(0)
	for _, b := range want[:100] {
		pos += int64(len(b.data))
	}
	data, _ := os.ReadFile(logPath)
	data[pos+int64(len(want[100].data))/2] ^= 0x40
	if err := os.WriteFile(logPath, data, 0o644); err != nil {
		t.Fatal(err)
	}
	l, err = OpenLog(dir, cfg, 0, 0, false, quietLogger())
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	if k := checkPrefix(t, l, want, 100); k != 100 {
		t.Fatalf("kept %d batches, want 100", k)
	}
	if st, _ := os.Stat(logPath); st.Size() != pos {
		t.Fatalf("segment cut at %d, want %d (the corrupt batch's first byte)", st.Size(), pos)
	}
}

// TestManagerRecoversManyPartitionsInParallel: a crashed log dir of many
// partitions, some with torn or corrupt tails, loads with several
// recovery threads; each partition keeps exactly its valid prefix.
func TestManagerRecoversManyPartitionsInParallel(t *testing.T) {
	dir := t.TempDir()
	const parts = 60
	cfg := testConfig()
	cfg.SegmentBytes = 4096
	m, err := OpenManager(ManagerConfig{Dirs: []string{dir}, Defaults: cfg, RecoveryThreadsPerDir: 8}, quietLogger())
	if err != nil {
		t.Fatal(err)
	}
	want := make([][]storedBatch, parts)
	for p := range parts {
		l, err := m.GetOrCreate(TopicPartition{Topic: "t", Partition: int32(p)}, cfg)
		if err != nil {
			t.Fatal(err)
		}
		for i := range 10 + p%7 {
			mustAppend(t, l, makeBatch(t, 3, 200, int64(i), fmt.Sprintf("p%d-%d", p, i)), 0)
		}
		want[p] = readAll(t, l, 0)
	}
	if err := m.Checkpoint(); err != nil {
		t.Fatal(err)
	}
	// Crash: close the logs without flushing, no clean-shutdown marker.
	for _, l := range m.snapshot() {
		if err := l.crash(); err != nil {
			t.Fatal(err)
		}
	}
	keep := make([]int, parts)
	for p := range parts {
		keep[p] = len(want[p])
		pdir := filepath.Join(dir, fmt.Sprintf("t-%d", p))
		logs := segFiles(t, pdir, ".log")
		last := logs[len(logs)-1]
		data, _ := os.ReadFile(last)
		lastBatch := want[p][len(want[p])-1]
		switch p % 3 {
		case 1: // torn final batch
			data = data[:len(data)-len(lastBatch.data)/2]
			keep[p]--
		case 2: // flipped byte in the final batch
			data[len(data)-len(lastBatch.data)/2] ^= 0x10
			keep[p]--
		}
		if err := os.WriteFile(last, data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	m, err = OpenManager(ManagerConfig{Dirs: []string{dir}, Defaults: cfg, RecoveryThreadsPerDir: 8}, quietLogger())
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	if n := len(m.Partitions()); n != parts {
		t.Fatalf("%d partitions loaded, want %d", n, parts)
	}
	for p := range parts {
		l := m.Get(TopicPartition{Topic: "t", Partition: int32(p)})
		if k := checkPrefix(t, l, want[p], keep[p]); k != keep[p] {
			t.Fatalf("partition %d kept %d batches, want %d", p, k, keep[p])
		}
	}
}

// TestManagerCreatesConcurrently: GetOrCreate from many goroutines, the
// same partitions asked for twice, yields one log per partition, spread
// evenly over the dirs, and Delete waits for a creation in flight.
func TestManagerCreatesConcurrently(t *testing.T) {
	dirs := []string{t.TempDir(), t.TempDir()}
	m, err := OpenManager(ManagerConfig{Dirs: dirs, Defaults: testConfig()}, quietLogger())
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	const parts = 40
	logs := make([]*Log, 2*parts)
	var wg sync.WaitGroup
	for i := range 2 * parts {
		wg.Add(1)
		go func() {
			defer wg.Done()
			l, err := m.GetOrCreate(TopicPartition{Topic: "c", Partition: int32(i % parts)}, testConfig())
			if err != nil {
				t.Error(err)
			}
			logs[i] = l
		}()
	}
	wg.Wait()
	for i := range parts {
		if logs[i] != logs[i+parts] || logs[i] == nil {
			t.Fatalf("partition %d: two logs (or none) for one partition", i)
		}
	}
	for i, dir := range dirs {
		entries, _ := os.ReadDir(dir)
		n := 0
		for _, e := range entries {
			if e.IsDir() {
				n++
			}
		}
		if n != parts/2 {
			t.Fatalf("dir %d holds %d partitions, want %d", i, n, parts/2)
		}
	}
	wg.Add(2)
	tp := TopicPartition{Topic: "d", Partition: 0}
	go func() { defer wg.Done(); _, _ = m.GetOrCreate(tp, testConfig()) }()
	go func() {
		defer wg.Done()
		if err := m.Delete(tp); err != nil {
			t.Error(err)
		}
	}()
	wg.Wait()
	// Whichever ran first, the manager and the disk agree.
	dir, loaded := m.DirOf(tp)
	_, statErr := os.Stat(filepath.Join(dir, "d-0"))
	if loaded && statErr != nil {
		t.Fatalf("log loaded but its dir is gone: %v", statErr)
	}
}
