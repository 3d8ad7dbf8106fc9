package leaderepoch

import (
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"sync"
	"testing"

	"github.com/weir-project/weir/internal/storage/checkpoint"
)

type entries = []checkpoint.EpochEntry

// newCache opens an empty cache and assigns the given (epoch, start) pairs.
func newCache(t *testing.T, pairs ...checkpoint.EpochEntry) (*Cache, string) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "leader-epoch-checkpoint")
	c, err := Open(path)
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	for _, p := range pairs {
		if err := c.Assign(p.Epoch, p.StartOffset); err != nil {
			t.Fatalf("Assign%v: %v", p, err)
		}
	}
	return c, path
}

// checkEntries asserts the cache and its file both hold want.
func checkEntries(t *testing.T, c *Cache, path string, want entries) {
	t.Helper()
	if got := c.Entries(); !reflect.DeepEqual(got, want) && !(len(got) == 0 && len(want) == 0) {
		t.Fatalf("entries %v, want %v", got, want)
	}
	onDisk, err := checkpoint.ReadEpochs(path)
	if err != nil {
		t.Fatalf("ReadEpochs: %v", err)
	}
	if !reflect.DeepEqual(onDisk, want) && !(len(onDisk) == 0 && len(want) == 0) {
		t.Fatalf("file holds %v, want %v", onDisk, want)
	}
}

// es builds entries from (epoch, start offset) pairs.
func es(pairs ...int64) entries {
	var out entries
	for i := 0; i+1 < len(pairs); i += 2 {
		out = append(out, checkpoint.EpochEntry{Epoch: int32(pairs[i]), StartOffset: pairs[i+1]})
	}
	return out
}

var kip101 = entries{{Epoch: 0, StartOffset: 0}, {Epoch: 1, StartOffset: 10}, {Epoch: 3, StartOffset: 20}}

func TestEmptyCache(t *testing.T) {
	c, path := newCache(t)
	if _, _, ok := c.Latest(); ok {
		t.Fatal("Latest ok on empty cache")
	}
	if e, o := c.EndOffsetFor(0, 100); e != -1 || o != -1 {
		t.Fatalf("EndOffsetFor on empty = (%d, %d)", e, o)
	}
	if _, err := os.Stat(path); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("empty cache wrote a file: %v", err)
	}
}

func TestAssignPersistsAndReloads(t *testing.T) {
	c, path := newCache(t, kip101...)
	checkEntries(t, c, path, kip101)
	if e, o, ok := c.Latest(); !ok || e != 3 || o != 20 {
		t.Fatalf("Latest = (%d, %d, %v)", e, o, ok)
	}
	data, _ := os.ReadFile(path)
	if string(data) != "0\n3\n0 0\n1 10\n3 20\n" {
		t.Fatalf("file %q", data)
	}
	d, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(d.Entries(), kip101) {
		t.Fatalf("reloaded %v", d.Entries())
	}
}

func TestEndOffsetFor(t *testing.T) {
	c, _ := newCache(t, kip101...)
	for _, tc := range []struct {
		epoch     int32
		wantEpoch int32
		wantEnd   int64
	}{
		{0, 0, 10},   // an old epoch ends where the next begins
		{1, 1, 20},   //
		{2, 1, 20},   // unknown epoch between: the largest epoch below it
		{3, 3, 30},   // the latest epoch runs to the log end
		{5, -1, -1},  // newer than anything we know (Kafka: undefined)
		{-1, -1, -1}, // undefined epoch
	} {
		e, o := c.EndOffsetFor(tc.epoch, 30)
		if e != tc.wantEpoch || o != tc.wantEnd {
			t.Errorf("EndOffsetFor(%d, 30) = (%d, %d), want (%d, %d)", tc.epoch, e, o, tc.wantEpoch, tc.wantEnd)
		}
	}
}

func TestEndOffsetForEpochOlderThanHistory(t *testing.T) {
	// Retention removed epochs 0-1: Kafka answers the requested epoch with
	// the first known start offset, so the follower truncates there.
	c, _ := newCache(t, checkpoint.EpochEntry{Epoch: 2, StartOffset: 5}, checkpoint.EpochEntry{Epoch: 4, StartOffset: 20})
	if e, o := c.EndOffsetFor(1, 30); e != 1 || o != 5 {
		t.Fatalf("EndOffsetFor(1) = (%d, %d), want (1, 5)", e, o)
	}
}

func TestKIP279WalkBack(t *testing.T) {
	// Leader took over in epoch 2 at offset 15; a follower whose latest
	// epoch is 1 learns that its epoch ended (for the leader) in epoch 0's
	// range at 15, and truncates there.
	leader, _ := newCache(t, checkpoint.EpochEntry{Epoch: 0, StartOffset: 0}, checkpoint.EpochEntry{Epoch: 2, StartOffset: 15})
	if e, o := leader.EndOffsetFor(1, 40); e != 0 || o != 15 {
		t.Fatalf("leader EndOffsetFor(1) = (%d, %d), want (0, 15)", e, o)
	}
	// The follower then asks for epoch 0, which both know.
	if e, o := leader.EndOffsetFor(0, 40); e != 0 || o != 15 {
		t.Fatalf("leader EndOffsetFor(0) = (%d, %d), want (0, 15)", e, o)
	}
}

func TestAssignRules(t *testing.T) {
	for _, tc := range []struct {
		name   string
		epoch  int32
		offset int64
		want   entries
	}{
		{"same epoch later offset is a no-op", 3, 25, kip101},
		{"same epoch same offset is a no-op", 3, 20, kip101},
		{"newer epoch appends", 4, 30, append(append(entries{}, kip101...), checkpoint.EpochEntry{Epoch: 4, StartOffset: 30})},
		{"newer epoch at latest start replaces it", 4, 20, es(0, 0, 1, 10, 4, 20)},
		{"same epoch earlier offset moves it", 3, 15, es(0, 0, 1, 10, 3, 15)},
		{"newer epoch earlier offset drops later entries", 4, 15, es(0, 0, 1, 10, 4, 15)},
		{"older epoch drops newer entries", 2, 25, es(0, 0, 1, 10, 2, 25)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, path := newCache(t, kip101...)
			if err := c.Assign(tc.epoch, tc.offset); err != nil {
				t.Fatal(err)
			}
			checkEntries(t, c, path, tc.want)
		})
	}
	c, _ := newCache(t)
	if c.Assign(-1, 0) == nil || c.Assign(0, -1) == nil {
		t.Fatal("negative Assign accepted")
	}
}

func TestTruncateFromEnd(t *testing.T) {
	for _, tc := range []struct {
		offset int64
		want   entries
	}{
		{100, kip101},
		{21, kip101},
		{20, es(0, 0, 1, 10)},
		{15, es(0, 0, 1, 10)},
		{10, es(0, 0)},
		{0, nil},
		{-1, kip101}, // undefined: ignored
	} {
		c, path := newCache(t, kip101...)
		if err := c.TruncateFromEnd(tc.offset); err != nil {
			t.Fatal(err)
		}
		checkEntries(t, c, path, tc.want)
	}
}

func TestTruncateFromStart(t *testing.T) {
	for _, tc := range []struct {
		offset int64
		want   entries
	}{
		{0, kip101},
		{5, es(0, 5, 1, 10, 3, 20)},
		{10, es(1, 10, 3, 20)},
		{15, es(1, 15, 3, 20)},
		{20, es(3, 20)},
		{25, es(3, 25)},
	} {
		c, path := newCache(t, kip101...)
		if err := c.TruncateFromStart(tc.offset); err != nil {
			t.Fatal(err)
		}
		checkEntries(t, c, path, tc.want)
	}
	// Entries all above the new start: nothing changes.
	c, path := newCache(t, checkpoint.EpochEntry{Epoch: 2, StartOffset: 50})
	if err := c.TruncateFromStart(10); err != nil {
		t.Fatal(err)
	}
	checkEntries(t, c, path, es(2, 50))
}

func TestOpenReplaysNonMonotonicFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "leader-epoch-checkpoint")
	if err := os.WriteFile(path, []byte("0\n3\n0 0\n2 10\n1 20\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	c, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	if want := (es(0, 0, 1, 20)); !reflect.DeepEqual(c.Entries(), want) {
		t.Fatalf("entries %v, want %v", c.Entries(), want)
	}
}

func TestOpenMalformed(t *testing.T) {
	path := filepath.Join(t.TempDir(), "leader-epoch-checkpoint")
	if err := os.WriteFile(path, []byte("0\n2\n0 0\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := Open(path); !errors.Is(err, checkpoint.ErrMalformed) {
		t.Fatalf("Open = %v, want ErrMalformed", err)
	}
}

func TestSetPath(t *testing.T) {
	c, path := newCache(t, kip101[:1]...)
	newPath := filepath.Join(t.TempDir(), "moved")
	c.SetPath(newPath)
	if err := c.Assign(7, 70); err != nil {
		t.Fatal(err)
	}
	checkEntries(t, c, newPath, es(0, 0, 7, 70))
	if old, _ := checkpoint.ReadEpochs(path); len(old) != 1 {
		t.Fatalf("old file changed: %v", old)
	}
}

func TestConcurrentUse(t *testing.T) {
	c, path := newCache(t)
	var wg sync.WaitGroup
	for r := 0; r < 3; r++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < 200; i++ {
				// Epoch e starts at 10e, so any answer must fit that shape.
				e, o := c.EndOffsetFor(int32(i%50), 1000)
				if e >= 0 && o != 1000 && o%10 != 0 {
					t.Errorf("EndOffsetFor = (%d, %d)", e, o)
					return
				}
				c.Entries()
			}
		}()
	}
	for e := int32(0); e < 50; e++ {
		if err := c.Assign(e, int64(e)*10); err != nil {
			t.Fatal(err)
		}
	}
	wg.Wait()
	if n := len(c.Entries()); n != 50 {
		t.Fatalf("%d entries", n)
	}
	checkEntries(t, c, path, c.Entries())
}

// TestAssignRetriesFailedPersist: a failed write of the checkpoint leaves
// the cache dirty, and the next Assign writes it even when it changes
// nothing, so the file does not lag the cache until the next epoch.
func TestAssignRetriesFailedPersist(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "leader-epoch-checkpoint")
	c, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	// A (non-empty) directory where the temp file would go makes the
	// write fail.
	if err := os.MkdirAll(filepath.Join(path+".tmp", "x"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := c.Assign(3, 10); err == nil {
		t.Fatal("assign with an unwritable checkpoint succeeded")
	}
	if err := os.RemoveAll(path + ".tmp"); err != nil {
		t.Fatal(err)
	}
	if err := c.Assign(3, 12); err != nil { // no change, but dirty
		t.Fatal(err)
	}
	re, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	if e, start, ok := re.Latest(); !ok || e != 3 || start != 10 {
		t.Fatalf("reloaded %d@%d (%v), want 3@10", e, start, ok)
	}
}

// TestBeginDefersTheWrite: Begin serves the new epoch from memory without
// touching the file; the epoch's first Assign (the first append) writes
// it, and a truncation below it drops it from both.
func TestBeginDefersTheWrite(t *testing.T) {
	c, path := newCache(t, checkpoint.EpochEntry{Epoch: 1, StartOffset: 0})
	before, _ := os.ReadFile(path)
	if err := c.Begin(4, 30); err != nil {
		t.Fatal(err)
	}
	if e, start, ok := c.Latest(); !ok || e != 4 || start != 30 {
		t.Fatalf("Latest after Begin = %d@%d (%v), want 4@30", e, start, ok)
	}
	if e, o := c.EndOffsetFor(1, 35); e != 1 || o != 30 {
		t.Fatalf("EndOffsetFor(1) after Begin = (%d, %d), want (1, 30)", e, o)
	}
	if after, _ := os.ReadFile(path); string(after) != string(before) {
		t.Fatalf("Begin wrote the file: %q -> %q", before, after)
	}
	if c.Begin(-1, 0) == nil || c.Begin(0, -1) == nil {
		t.Fatal("negative Begin accepted")
	}
	// The epoch's first record: same epoch, same start, and it is written.
	if err := c.Assign(4, 30); err != nil {
		t.Fatal(err)
	}
	checkEntries(t, c, path, []checkpoint.EpochEntry{{Epoch: 1, StartOffset: 0}, {Epoch: 4, StartOffset: 30}})

	// An epoch begun and never appended to goes with a truncation to its
	// start, and the file follows.
	if err := c.Begin(5, 40); err != nil {
		t.Fatal(err)
	}
	if err := c.TruncateFromEnd(40); err != nil {
		t.Fatal(err)
	}
	checkEntries(t, c, path, []checkpoint.EpochEntry{{Epoch: 1, StartOffset: 0}, {Epoch: 4, StartOffset: 30}})
}

// TestFlushWritesWhatBeginDeferred: Flush writes the entries Begin kept in
// memory, and only then; a failed Flush leaves the cache dirty for the
// next one. Begin does not wait for writeMu, which Flush holds while it
// writes the file.
func TestFlushWritesWhatBeginDeferred(t *testing.T) {
	c, path := newCache(t, checkpoint.EpochEntry{Epoch: 1, StartOffset: 0})
	if err := c.Flush(); err != nil || c.Dirty() {
		t.Fatalf("Flush of a clean cache: %v, dirty %v", err, c.Dirty())
	}
	if err := c.Begin(2, 10); err != nil {
		t.Fatal(err)
	}
	if err := c.Begin(2, 15); err != nil || !c.Dirty() { // the same epoch later on: no change
		t.Fatalf("Begin: %v, dirty %v", err, c.Dirty())
	}
	if err := os.MkdirAll(filepath.Join(path+".tmp", "x"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := c.Flush(); err == nil || !c.Dirty() {
		t.Fatalf("Flush with an unwritable checkpoint: %v, dirty %v", err, c.Dirty())
	}
	if err := os.RemoveAll(path + ".tmp"); err != nil {
		t.Fatal(err)
	}
	if err := c.Flush(); err != nil || c.Dirty() {
		t.Fatalf("Flush: %v, dirty %v", err, c.Dirty())
	}
	checkEntries(t, c, path, []checkpoint.EpochEntry{{Epoch: 1, StartOffset: 0}, {Epoch: 2, StartOffset: 10}})

	// Hold writeMu as Flush does while it writes: Begin goes on.
	c.Begin(3, 20)
	c.writeMu.Lock()
	done := make(chan struct{})
	go func() { c.Begin(4, 30); close(done) }()
	<-done
	c.writeMu.Unlock()
	if err := c.Flush(); err != nil || c.Dirty() {
		t.Fatalf("Flush: %v, dirty %v", err, c.Dirty())
	}
	checkEntries(t, c, path, []checkpoint.EpochEntry{{Epoch: 1, StartOffset: 0}, {Epoch: 2, StartOffset: 10}, {Epoch: 3, StartOffset: 20}, {Epoch: 4, StartOffset: 30}})
}

// TestEntryWithoutRecordsIsNotWritten: a leader's epoch begun at the log
// end has no record to protect, so a flush below the log end, and the
// truncation that drops the entry at the next load, write no file: a
// broker leading thousands of empty partitions did two fsyncs per
// partition at every stop and start for it.
func TestEntryWithoutRecordsIsNotWritten(t *testing.T) {
	path := filepath.Join(t.TempDir(), "leader-epoch-checkpoint")
	c, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Begin(3, 0); err != nil {
		t.Fatal(err)
	}
	if err := c.FlushBelow(0); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(path); !os.IsNotExist(err) {
		t.Fatalf("flush below the log end wrote the file (%v)", err)
	}
	if err := c.TruncateFromEnd(0); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(path); !os.IsNotExist(err) {
		t.Fatalf("truncating an unwritten entry wrote the file (%v)", err)
	}
	// With a record of the epoch, the entry is written, once.
	if err := c.Begin(3, 0); err != nil {
		t.Fatal(err)
	}
	if err := c.FlushBelow(1); err != nil {
		t.Fatal(err)
	}
	st, err := os.Stat(path)
	if err != nil {
		t.Fatalf("entry with a record not written: %v", err)
	}
	if c.Dirty() {
		t.Fatal("dirty after the flush")
	}
	if err := c.FlushBelow(5); err != nil {
		t.Fatal(err)
	}
	if st2, _ := os.Stat(path); !os.SameFile(st, st2) { // a write replaces the file
		t.Fatal("a flush with nothing new rewrote the file")
	}
	again, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	if e := again.Entries(); len(e) != 1 || e[0].Epoch != 3 || e[0].StartOffset != 0 {
		t.Fatalf("reopened: %+v", e)
	}
}
