package storage

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/weir-project/weir/internal/storage/recordbatch"
)

// TestCleanerAbortsAfterTruncateReappendRoll: a truncation that cuts a
// segment of the group being cleaned, followed by an append of exactly as
// many bytes and a roll, leaves the group's segments and sizes as planned
// but their contents new. The swap must notice and abort, or the cleaned
// copy of the old contents replaces the new records.
func TestCleanerAbortsAfterTruncateReappendRoll(t *testing.T) {
	l := openLog(t, t.TempDir(), compactConfig())
	o := batchOpts{ts: t0.UnixMilli()}
	for _, v := range []string{"v0", "v1", "v2"} {
		mustAppend(t, l, keyedBatch(t, o, kv{key: "k", value: v}), 0)
		forceRoll(t, l)
	}
	_, err := l.Clean(context.Background(), CleanOptions{Now: t0, stage: func(name string) {
		if name != stageCleaned {
			return
		}
		if err := l.TruncateTo(2); err != nil {
			t.Error(err)
		}
		mustAppend(t, l, keyedBatch(t, o, kv{key: "k", value: "v9"}), 1)
		forceRoll(t, l)
	}})
	if !errors.Is(err, errCleanAborted) {
		t.Fatalf("Clean: %v; want an abort", err)
	}
	checkState(t, l, map[string]string{"k": "v9"}, "after the aborted pass")
	cleanAt(t, l, t0)
	checkState(t, l, map[string]string{"k": "v9"}, "after a full pass")
}

// TestTruncateSyncsDirAfterRetiringSegments: the *.deleted renames of
// segments cut by a truncation must reach the disk before TruncateTo
// returns, or a power loss brings the cut records back at the next start.
func TestTruncateSyncsDirAfterRetiringSegments(t *testing.T) {
	l := openLog(t, t.TempDir(), testConfig())
	for i := range 3 {
		mustAppend(t, l, makeBatch(t, 2, 10, t0.UnixMilli(), fmt.Sprint("b", i)), 0)
		forceRoll(t, l)
	}
	waitRollFlushed(t, l) // the rolls' flushes fsync the dir too, from another goroutine
	cut := filepath.Join(l.Dir(), segmentName(4, logSuffix))
	var durable []bool // per dir fsync: was the cut segment already renamed?
	l.fsyncDir = func(dir string) error {
		_, err := os.Stat(cut)
		durable = append(durable, errors.Is(err, os.ErrNotExist))
		return syncDir(dir)
	}
	if err := l.TruncateTo(3); err != nil {
		t.Fatal(err)
	}
	if !slices.Contains(durable, true) {
		t.Fatalf("no directory fsync after renaming the cut segments (fsyncs: %v)", durable)
	}
}

// TestSegmentPathReadWhileRenamed: readers and the cleaner name a
// segment's file in their errors without the log's lock, while retention
// renames it to *.deleted under the lock. Under -race this test fails if
// the path is not safe to share.
func TestSegmentPathReadWhileRenamed(t *testing.T) {
	l := openLog(t, t.TempDir(), testConfig())
	for i := range 2 {
		mustAppend(t, l, makeBatch(t, 1, 10, t0.UnixMilli(), fmt.Sprint("b", i)), 0)
		forceRoll(t, l)
	}
	s := l.segments()[0]
	start := make(chan struct{})
	errc := make(chan error, 1)
	go func() {
		<-start
		// One byte past the end: the read fails and names the file.
		errc <- readBatches(s, s.size.Load()+1, func([]byte, recordbatch.Header) error { return nil })
	}()
	delc := make(chan error, 1)
	go func() {
		<-start
		_, err := l.DeleteRecordsBefore(1)
		delc <- err
	}()
	close(start)
	err := <-errc
	if derr := <-delc; derr != nil {
		t.Fatal(derr)
	}
	if err == nil || !strings.Contains(err.Error(), segmentName(0, logSuffix)) {
		t.Fatalf("read past the end: %v; want an error naming the segment", err)
	}
}

// TestCleanerAbortsWhenRetentionClosesItsSegment: with
// file.delete.delay.ms=0, DeleteRecords (or retention) closes a segment
// the pass is about to read. That is the log changing under the pass, an
// abort, not a failure that benches the log for ten backoffs.
func TestCleanerAbortsWhenRetentionClosesItsSegment(t *testing.T) {
	cfg := compactConfig()
	cfg.FileDeleteDelayMs = 0
	l := openLog(t, t.TempDir(), cfg)
	for range 3 {
		mustAppend(t, l, keyedBatch(t, batchOpts{ts: t0.UnixMilli()}, kv{key: "k", value: "v"}), 0)
		forceRoll(t, l)
	}
	_, err := l.Clean(context.Background(), CleanOptions{Now: t0, stage: func(name string) {
		if name == stagePlanned {
			if _, err := l.DeleteRecordsBefore(2); err != nil {
				t.Error(err)
			}
		}
	}})
	if !errors.Is(err, errCleanAborted) {
		t.Fatalf("Clean: %v; want an abort", err)
	}
	cleanAt(t, l, t0)
	if recs, _ := allRecords(t, l); len(recs) != 1 || recs[0].offset != 2 {
		t.Fatalf("records %+v", recs)
	}
}
