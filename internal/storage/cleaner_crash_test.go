package storage

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"syscall"
	"testing"
	"time"
)

const cleanCrashDirEnv = "STORAGE_CLEAN_CRASH_DIR"

// crashCleanConfig is shared by the crash test and its child: segments
// small enough that the cleanable part forms two groups.
func crashCleanConfig() Config {
	c := compactConfig()
	c.SegmentBytes = 72 << 10
	c.IndexIntervalBytes = 512
	return c
}

// TestCleanerCrashHelper is the child of TestCleanerCrash: it opens the
// log in STORAGE_CLEAN_CRASH_DIR and cleans it, sending itself SIGKILL at
// the given swap stage of the given group (1-based).
func TestCleanerCrashHelper(t *testing.T) {
	dir := os.Getenv(cleanCrashDirEnv)
	if dir == "" {
		t.Skip("only run as the cleaner crash test's child")
	}
	stage := os.Getenv("STORAGE_CLEAN_CRASH_STAGE")
	group, _ := strconv.Atoi(os.Getenv("STORAGE_CLEAN_CRASH_GROUP"))
	l, err := OpenLog(dir, crashCleanConfig(), 0, 0, true, quietLogger())
	if err != nil {
		fmt.Println("error", err)
		os.Exit(1)
	}
	seen := 0
	_, err = l.Clean(context.Background(), CleanOptions{Now: t0, stage: func(name string) {
		if name != stage {
			return
		}
		if seen++; seen == group {
			syscall.Kill(os.Getpid(), syscall.SIGKILL)
			select {} // the signal is on its way
		}
	}})
	if err != nil {
		fmt.Println("error", err)
		os.Exit(1)
	}
	fmt.Println("finished without crashing")
	os.Exit(2)
}

// TestCleanerCrash kills a child process at every step of the segment
// swap, in the first and in the second group, then reopens the log: it
// must hold, group by group, exactly the old batches or exactly the
// cleaned ones, replay to the same key/value map, and have no leftovers.
func TestCleanerCrash(t *testing.T) {
	template := t.TempDir()
	orig := prepareCrashLog(t, template)
	want := applyRecords(orig.recs)

	// The reference: the same pass, uncrashed.
	refDir := filepath.Join(t.TempDir(), "ref")
	copyDir(t, template, refDir)
	ref := openLog(t, refDir, crashCleanConfig())
	st := cleanAt(t, ref, t0)
	if st.SegmentsOut != 2 {
		t.Fatalf("reference pass made %d segments, the test needs 2 groups: %+v", st.SegmentsOut, st)
	}
	refBatches := batchesByBase(t, ref)
	var bounds []int64 // group ranges: the cleaned segments' bases
	for _, s := range ref.segments() {
		bounds = append(bounds, s.base)
	}

	run := 0
	for _, stage := range []string{stageCleaned, stageSwap, stageOldPartly, stageOld, stageDone} {
		for group := 1; group <= 2; group++ {
			dir := filepath.Join(t.TempDir(), "p-0")
			copyDir(t, template, dir)
			runCleanCrashChild(t, dir, stage, group)
			// Alternate a trusted reopen (recovery point at the log end,
			// as the checkpoint says) and a full rescan.
			rp := orig.leo
			if run%2 == 1 {
				rp = 0
			}
			run++
			l, err := OpenLog(dir, crashCleanConfig(), rp, 0, false, quietLogger())
			if err != nil {
				t.Fatalf("stage %s group %d: reopen: %v", stage, group, err)
			}
			what := fmt.Sprintf("stage %s group %d", stage, group)
			if files := leftovers(t, dir); len(files) != 0 {
				t.Fatalf("%s: leftovers after load: %v", what, files)
			}
			if l.LogEndOffset() != orig.leo {
				t.Fatalf("%s: log end %d, was %d", what, l.LogEndOffset(), orig.leo)
			}
			checkState(t, l, want, what)
			got := batchesByBase(t, l)
			for i, lo := range bounds {
				hi := int64(1 << 62)
				if i+1 < len(bounds) {
					hi = bounds[i+1]
				}
				g, o, r := batchRange(got, lo, hi), batchRange(orig.batches, lo, hi), batchRange(refBatches, lo, hi)
				isOld, isNew := equalBatches(g, o), equalBatches(g, r)
				if !isOld && !isNew {
					t.Fatalf("%s: offsets [%d,%d) hold a mix of old and cleaned batches", what, lo, hi)
				}
				// Up to the group's swap the old files must stay; after
				// its *.swap rename the new ones must win.
				crashedGroup := i + 1
				switch {
				case crashedGroup < group && !isNew:
					t.Fatalf("%s: group %d was swapped before the crash but is old", what, crashedGroup)
				case crashedGroup == group && stage == stageCleaned && !isOld:
					t.Fatalf("%s: group %d crashed before its swap but is new", what, crashedGroup)
				case crashedGroup == group && stage != stageCleaned && !isNew:
					t.Fatalf("%s: group %d crashed after its swap began but is old", what, crashedGroup)
				}
			}
			t.Logf("%s: recovered with %d batches, log end %d", what, len(got), l.LogEndOffset())
			// A further pass over the recovered log still works.
			cleanAt(t, l, t0)
			checkState(t, l, want, what+" then cleaned again")
			if err := l.Close(); err != nil {
				t.Fatal(err)
			}
		}
	}
}

// crashLog is the prepared log's content.
type crashLog struct {
	recs    []logRecord
	batches map[int64][]byte
	leo     int64
}

// prepareCrashLog writes a compacted log with keys overwritten many times
// and some tombstones, over small segments, and closes it cleanly.
func prepareCrashLog(t *testing.T, dir string) crashLog {
	l, err := OpenLog(dir, crashCleanConfig(), 0, 0, true, quietLogger())
	if err != nil {
		t.Fatal(err)
	}
	val := string(bytes.Repeat([]byte("v"), 200))
	for i := range 180 {
		recs := make([]kv, 3)
		for j := range recs {
			k := "key-" + strconv.Itoa((i*3+j)%40)
			recs[j] = kv{key: k, value: fmt.Sprintf("%s/%d/%s", k, i, val), tomb: (i+j)%11 == 0}
		}
		mustAppend(t, l, keyedBatch(t, batchOpts{ts: t0.UnixMilli() + int64(i), pid: int64(1 + i%3), seq: int32(i / 3 * 3)}, recs...), 0)
		if i%9 == 8 {
			forceRoll(t, l)
		}
	}
	recs, _ := allRecords(t, l)
	out := crashLog{recs: recs, batches: batchesByBase(t, l), leo: l.LogEndOffset()}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	return out
}

// runCleanCrashChild runs the helper and insists it died by SIGKILL.
func runCleanCrashChild(t *testing.T, dir, stage string, group int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, os.Args[0], "-test.run=^TestCleanerCrashHelper$", "-test.count=1")
	cmd.Env = append(os.Environ(), cleanCrashDirEnv+"="+dir,
		"STORAGE_CLEAN_CRASH_STAGE="+stage, "STORAGE_CLEAN_CRASH_GROUP="+strconv.Itoa(group))
	out, err := cmd.CombinedOutput() // CommandContext kills the child by PID on timeout
	ws, ok := cmd.ProcessState.Sys().(syscall.WaitStatus)
	if err == nil || !ok || !ws.Signaled() || ws.Signal() != syscall.SIGKILL {
		t.Fatalf("stage %s group %d: child did not die by SIGKILL (%v):\n%s", stage, group, err, out)
	}
}

// batchesByBase reads the log's batches keyed by base offset.
func batchesByBase(t testing.TB, l *Log) map[int64][]byte {
	t.Helper()
	out := make(map[int64][]byte)
	for _, b := range readAll(t, l, l.LogStartOffset()) {
		out[b.base] = b.data
	}
	return out
}

// batchRange selects the batches with base in [lo, hi).
func batchRange(m map[int64][]byte, lo, hi int64) map[int64][]byte {
	out := make(map[int64][]byte)
	for base, b := range m {
		if base >= lo && base < hi {
			out[base] = b
		}
	}
	return out
}

func equalBatches(a, b map[int64][]byte) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if !bytes.Equal(v, b[k]) {
			return false
		}
	}
	return true
}
