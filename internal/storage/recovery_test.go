package storage

import (
	"bytes"
	"encoding/binary"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// buildLog writes n batches with small segments, closes the log without
// the clean path (crash-style) and returns the dir, the batches and the
// config. The recovery point is left where the rolls put it.
func buildLog(t *testing.T, n int) (string, []storedBatch, Config, int64) {
	t.Helper()
	cfg := testConfig()
	cfg.SegmentBytes = 2048
	cfg.IndexIntervalBytes = 200
	dir := t.TempDir()
	l, err := OpenLog(dir, cfg, 0, 0, true, quietLogger())
	if err != nil {
		t.Fatal(err)
	}
	for i := range n {
		mustAppend(t, l, makeBatch(t, 2, 70, int64(i), "rec"), 0)
	}
	want := readAll(t, l, 0)
	waitRollFlushed(t, l)
	rp := l.RecoveryPoint()
	if err := l.crash(); err != nil { // no seal, no flush: like a crash
		t.Fatal(err)
	}
	return dir, want, cfg, rp
}

func segFiles(t *testing.T, dir, suffix string) []string {
	t.Helper()
	m, err := filepath.Glob(filepath.Join(dir, "*"+suffix))
	if err != nil || len(m) == 0 {
		t.Fatalf("no %s files: %v", suffix, err)
	}
	return m
}

// checkPrefix asserts the reopened log holds exactly want[:k] for some k
// >= atLeast and returns k.
func checkPrefix(t *testing.T, l *Log, want []storedBatch, atLeast int) int {
	t.Helper()
	got := readAll(t, l, 0)
	if len(got) < atLeast || len(got) > len(want) {
		t.Fatalf("recovered %d batches, want between %d and %d", len(got), atLeast, len(want))
	}
	for i := range got {
		if !bytes.Equal(got[i].data, want[i].data) {
			t.Fatalf("batch %d differs after recovery", i)
		}
	}
	if len(got) > 0 && l.LogEndOffset() != got[len(got)-1].last+1 {
		t.Fatalf("LEO %d, last batch ends at %d", l.LogEndOffset(), got[len(got)-1].last)
	}
	return len(got)
}

func TestRecoverTornTail(t *testing.T) {
	dir, want, cfg, rp := buildLog(t, 60)
	logs := segFiles(t, dir, ".log")
	last := logs[len(logs)-1]
	st, _ := os.Stat(last)
	lastBatch := want[len(want)-1]
	// Cut half of the final batch.
	if err := os.Truncate(last, st.Size()-int64(len(lastBatch.data))/2); err != nil {
		t.Fatal(err)
	}
	l, err := OpenLog(dir, cfg, rp, 0, false, quietLogger())
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	if k := checkPrefix(t, l, want, len(want)-1); k != len(want)-1 {
		t.Fatalf("kept %d batches, want %d", k, len(want)-1)
	}
	info, _ := mustAppend(t, l, makeBatch(t, 1, 1, 1, "next"), 0)
	if info.FirstOffset != lastBatch.base {
		t.Fatalf("append after recovery at %d, want %d", info.FirstOffset, lastBatch.base)
	}
}

func TestRecoverFlippedByteDeletesLaterSegments(t *testing.T) {
	dir, want, cfg, _ := buildLog(t, 60)
	logs := segFiles(t, dir, ".log")
	if len(logs) < 4 {
		t.Fatalf("only %d segments", len(logs))
	}
	victim := logs[len(logs)-3]
	data, _ := os.ReadFile(victim)
	data[len(data)/2] ^= 0x55
	os.WriteFile(victim, data, 0o644)
	// Recovery point 0: everything is recovered, so the flip is cut.
	l, err := OpenLog(dir, cfg, 0, 0, false, quietLogger())
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	k := checkPrefix(t, l, want, 1)
	if k >= len(want) {
		t.Fatal("corruption not cut")
	}
	if got := len(segFilesMaybe(dir, ".log")); got != len(logs)-2 {
		t.Fatalf("%d segments left, want %d", got, len(logs)-2)
	}
}

func segFilesMaybe(dir, suffix string) []string {
	m, _ := filepath.Glob(filepath.Join(dir, "*"+suffix))
	return m
}

func TestRecoverFlippedByteInLastSegment(t *testing.T) {
	dir, want, cfg, rp := buildLog(t, 60)
	logs := segFiles(t, dir, ".log")
	last := logs[len(logs)-1]
	data, _ := os.ReadFile(last)
	data[len(data)-10] ^= 0x01
	os.WriteFile(last, data, 0o644)
	l, err := OpenLog(dir, cfg, rp, 0, false, quietLogger())
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	if k := checkPrefix(t, l, want, len(want)-1); k != len(want)-1 {
		t.Fatalf("kept %d, want %d", k, len(want)-1)
	}
}

func TestRecoverIndexFaults(t *testing.T) {
	faults := map[string]func(t *testing.T, dir string){
		"deleted index": func(t *testing.T, dir string) {
			for _, p := range segFiles(t, dir, ".index") {
				os.Remove(p)
			}
		},
		"truncated index": func(t *testing.T, dir string) {
			for _, p := range segFiles(t, dir, ".index") {
				st, _ := os.Stat(p)
				if st.Size() > 0 {
					os.Truncate(p, st.Size()-3)
				}
			}
		},
		"garbage timeindex": func(t *testing.T, dir string) {
			for _, p := range segFiles(t, dir, ".timeindex") {
				os.WriteFile(p, bytes.Repeat([]byte{0xde, 0xad, 0xbe, 0xef}, 9), 0o644)
			}
		},
		"garbage index": func(t *testing.T, dir string) {
			for _, p := range segFiles(t, dir, ".index") {
				os.WriteFile(p, bytes.Repeat([]byte{0x7f, 0, 0, 1}, 8), 0o644)
			}
		},
	}
	for name, fault := range faults {
		for _, clean := range []bool{true, false} {
			t.Run(name, func(t *testing.T) {
				dir, want, cfg, rp := buildLog(t, 60)
				fault(t, dir)
				l, err := OpenLog(dir, cfg, rp, 0, clean, quietLogger())
				if err != nil {
					t.Fatal(err)
				}
				defer l.Close()
				if k := checkPrefix(t, l, want, len(want)); k != len(want) {
					t.Fatalf("lost data: %d of %d", k, len(want))
				}
				// Every offset is found via the rebuilt index.
				for _, b := range want {
					r, err := l.Read(b.last, 1, -1)
					if err != nil || r.FirstOffset != b.base {
						t.Fatalf("Read(%d) = %+v %v", b.last, r, err)
					}
				}
				wantTs := want[len(want)-1].base + 1 // record ts = batch index + record index
				if ts, _ := l.MaxTimestamp(); ts != int64(len(want)-1)+1 {
					t.Fatalf("max timestamp %d, want %d", ts, wantTs)
				}
			})
		}
	}
}

func TestCorruptionBelowRecoveryPointIsAnError(t *testing.T) {
	dir, _, cfg, rp := buildLog(t, 60)
	logs := segFiles(t, dir, ".log")
	victim := logs[0]
	data, _ := os.ReadFile(victim)
	data[len(data)/2] ^= 0x55
	os.WriteFile(victim, data, 0o644)
	os.Remove(strings.TrimSuffix(victim, ".log") + ".index") // forces a rescan
	_, err := OpenLog(dir, cfg, rp, 0, false, quietLogger())
	if err == nil || !strings.Contains(err.Error(), filepath.Base(victim)) || !strings.Contains(err.Error(), "byte") {
		t.Fatalf("want error naming %s and position, got %v", filepath.Base(victim), err)
	}
	if !errors.Is(err, ErrStorage) {
		t.Fatalf("error does not wrap ErrStorage: %v", err)
	}
	// Nothing was cut.
	after, _ := os.ReadFile(victim)
	if len(after) != len(data) {
		t.Fatal("segment below the recovery point was truncated")
	}
}

func TestRecoverLeftoversAndEmptyDir(t *testing.T) {
	dir, want, cfg, rp := buildLog(t, 30)
	os.WriteFile(filepath.Join(dir, "00000000000000000000.log.deleted"), []byte("x"), 0o644)
	os.WriteFile(filepath.Join(dir, "recovery.tmp"), []byte("x"), 0o644)
	os.WriteFile(filepath.Join(dir, segmentName(99999, indexSuffix)), nil, 0o644)
	// An empty trailing segment, as left by a crash right after a roll.
	os.WriteFile(filepath.Join(dir, segmentName(want[len(want)-1].last+1, logSuffix)), nil, 0o644)
	l, err := OpenLog(dir, cfg, rp, 0, false, quietLogger())
	if err != nil {
		t.Fatal(err)
	}
	checkPrefix(t, l, want, len(want))
	l.Close()
	for _, junk := range []string{"00000000000000000000.log.deleted", "recovery.tmp", segmentName(99999, indexSuffix)} {
		if _, err := os.Stat(filepath.Join(dir, junk)); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("%s not removed", junk)
		}
	}

	empty := t.TempDir()
	l2, err := OpenLog(empty, cfg, 0, 42, false, quietLogger())
	if err != nil {
		t.Fatal(err)
	}
	defer l2.Close()
	if l2.LogStartOffset() != 42 || l2.LogEndOffset() != 42 {
		t.Fatalf("empty dir: start %d end %d", l2.LogStartOffset(), l2.LogEndOffset())
	}
	if _, err := os.Stat(filepath.Join(empty, segmentName(42, logSuffix))); err != nil {
		t.Fatal(err)
	}
}

// TestRecoverFromGarbage: a segment of arbitrary bytes recovers to a valid
// (possibly empty) prefix without error or panic.
func TestRecoverFromGarbage(t *testing.T) {
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, segmentName(0, logSuffix)), bytes.Repeat([]byte{0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0x40}, 100), 0o644)
	l, err := OpenLog(dir, testConfig(), 0, 0, false, quietLogger())
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	if l.LogEndOffset() != 0 || l.Size() != 0 {
		t.Fatalf("garbage kept: LEO %d size %d", l.LogEndOffset(), l.Size())
	}
}

// A power loss can cost a segment the tail its last fsync did not cover
// while a later segment, created by a roll meanwhile, kept its bytes: the
// kernel writes files back in any order. The earlier segment then ends at
// a whole batch, nothing in it is invalid, and the log has a hole.
func TestRecoverLostTailBeforeLaterSegment(t *testing.T) {
	dir, want, cfg, _ := buildLog(t, 60)
	logs := segFiles(t, dir, ".log")
	if len(logs) < 4 {
		t.Fatalf("only %d segments", len(logs))
	}
	victim := logs[len(logs)-3]
	data, err := os.ReadFile(victim)
	if err != nil {
		t.Fatal(err)
	}
	first := 12 + int64(binary.BigEndian.Uint32(data[8:12]))
	if err := os.Truncate(victim, first); err != nil { // one whole batch left
		t.Fatal(err)
	}
	l, err := OpenLog(dir, cfg, 0, 0, false, quietLogger())
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	k := checkPrefix(t, l, want, 1)
	if got := len(segFilesMaybe(dir, ".log")); got != len(logs)-2 {
		t.Fatalf("%d segments left, want %d (the segments after the hole removed); kept %d of %d batches", got, len(logs)-2, k, len(want))
	}
}
