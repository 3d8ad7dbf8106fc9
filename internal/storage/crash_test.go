package storage

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"math/rand"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"
)

const crashHelperEnv = "STORAGE_CRASH_HELPER_DIR"

// TestCrashHelper is the child process of TestCrashRecovery: it appends
// batches through a Manager forever, printing "ack <last offset>" after
// each append and "synced <recovery point>" whenever the recovery point
// moved, until it is killed.
func TestCrashHelper(t *testing.T) {
	dir := os.Getenv(crashHelperEnv)
	if dir == "" {
		t.Skip("only run as the crash test's child")
	}
	flushEvery, _ := strconv.ParseInt(os.Getenv("STORAGE_CRASH_FLUSH"), 10, 64)
	cfg := testConfig()
	cfg.SegmentBytes = 8 << 10
	cfg.FlushIntervalMessages = flushEvery
	// One segment descriptor: rolls and flushes reopen what they fsync.
	m, err := OpenManager(ManagerConfig{Dirs: []string{dir}, Defaults: cfg, CheckpointIntervalMs: 20, MaxOpenFiles: 1}, quietLogger())
	if err != nil {
		fmt.Println("error", err)
		os.Exit(1)
	}
	go m.Run(context.Background())
	l, err := m.GetOrCreate(TopicPartition{Topic: "crash", Partition: 0}, cfg)
	if err != nil {
		fmt.Println("error", err)
		os.Exit(1)
	}
	out := bufio.NewWriter(os.Stdout)
	synced := l.RecoveryPoint()
	for i := 0; ; i++ {
		info, err := l.Append(makeBatch(t, 1+i%5, 100, int64(i), "crash-"+strconv.Itoa(i)), 0)
		if err != nil {
			fmt.Fprintln(out, "error", err)
			out.Flush()
			os.Exit(1)
		}
		fmt.Fprintln(out, "ack", info.LastOffset)
		if rp := l.RecoveryPoint(); rp > synced {
			synced = rp
			fmt.Fprintln(out, "synced", rp)
		}
		out.Flush()
	}
}

// TestCrashRecovery kills a child that appends with SIGKILL after a random
// number of acknowledgements, reopens the log and checks it is a prefix of
// what was written containing every fsynced batch.
func TestCrashRecovery(t *testing.T) {
	seed := time.Now().UnixNano()
	t.Logf("seed %d", seed)
	rng := rand.New(rand.NewSource(seed))
	dir := t.TempDir()
	for round := range 4 {
		flush := int64(0)
		if round%2 == 0 {
			flush = 1
		}
		acked, synced := runCrashChild(t, dir, flush, 20+rng.Intn(200))
		m, err := OpenManager(ManagerConfig{Dirs: []string{dir}, Defaults: testConfig()}, quietLogger())
		if err != nil {
			t.Fatalf("round %d: reopen: %v", round, err)
		}
		l := m.Get(TopicPartition{Topic: "crash", Partition: 0})
		if l == nil {
			t.Fatalf("round %d: partition not loaded", round)
		}
		leo := l.LogEndOffset()
		if leo < synced {
			t.Fatalf("round %d: log end %d below fsynced offset %d", round, leo, synced)
		}
		if flush == 1 && leo < acked+1 {
			t.Fatalf("round %d: log end %d, acked through %d with fsync per message", round, leo, acked)
		}
		// The log is a prefix of what the child wrote: consecutive batches
		// with the tags the child used, in order, every one readable.
		var next int64
		for _, b := range readAll(t, l, 0) {
			if b.base != next {
				t.Fatalf("round %d: batch at %d, expected %d", round, b.base, next)
			}
			if !bytes.Contains(b.data, []byte("crash-")) {
				t.Fatalf("round %d: foreign batch at %d", round, b.base)
			}
			next = b.last + 1
		}
		if next != leo {
			t.Fatalf("round %d: read up to %d, log end %d", round, next, leo)
		}
		if err := m.Close(); err != nil {
			t.Fatal(err)
		}
		t.Logf("round %d: flush=%d acked %d synced %d recovered %d", round, flush, acked, synced, leo)
	}
}

// runCrashChild starts the helper, waits for acks acknowledgements and
// kills it with SIGKILL; it returns the last acked and fsynced offsets.
func runCrashChild(t *testing.T, dir string, flush int64, acks int) (acked, synced int64) {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^TestCrashHelper$", "-test.count=1")
	cmd.Env = append(os.Environ(), crashHelperEnv+"="+dir, "STORAGE_CRASH_FLUSH="+strconv.FormatInt(flush, 10))
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	pid := cmd.Process.Pid
	killed := false
	defer func() {
		if !killed {
			cmd.Process.Kill()
		}
		cmd.Wait()
	}()
	sc := bufio.NewScanner(stdout)
	acked, synced = -1, 0
	n := 0
	deadline := time.Now().Add(60 * time.Second)
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) == 2 && f[0] == "ack" {
			acked, _ = strconv.ParseInt(f[1], 10, 64)
			n++
		} else if len(f) == 2 && f[0] == "synced" {
			synced, _ = strconv.ParseInt(f[1], 10, 64)
		} else if len(f) > 0 && f[0] == "error" {
			t.Fatalf("child: %s", sc.Text())
		}
		if n >= acks || time.Now().After(deadline) {
			break
		}
	}
	if n < acks {
		t.Fatalf("child (pid %d) stopped after %d acks", pid, n)
	}
	if err := cmd.Process.Kill(); err != nil { // SIGKILL on Unix
		t.Fatal(err)
	}
	killed = true
	return acked, synced
}
