package verify

import (
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/weir-project/weir/internal/verify"
	"github.com/weir-project/weir/test/harness"
)

// runVerify runs `weir verify` with args (plus --out and --binary) and
// returns its result, its output and its exit code.
func runVerify(t *testing.T, timeout time.Duration, args ...string) (*verify.Result, string, int, string) {
	t.Helper()
	out := t.TempDir()
	keepIfFailed(t, out)
	args = append([]string{"verify", "--out", out, "--binary", harness.Bin()}, args...)
	cmd := exec.Command(harness.Bin(), args...)
	// Should this test process die (go test's timeout), verify is told
	// to stop, and stops its cluster.
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGTERM}
	var buf bytes.Buffer
	cmd.Stdout, cmd.Stderr = &buf, &buf
	start := time.Now()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	var err error
	select {
	case err = <-done:
	case <-time.After(timeout):
		// SIGTERM lets verify stop its cluster; then make sure.
		cmd.Process.Signal(os.Interrupt)
		select {
		case <-done:
		case <-time.After(time.Minute):
			cmd.Process.Kill()
			<-done
		}
		t.Fatalf("weir verify did not finish within %v:\n%s", timeout, buf.String())
	}
	code := 0
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	t.Logf("weir verify %s: exit %d after %v", strings.Join(args[5:], " "), code, time.Since(start).Round(time.Second))
	b, rerr := os.ReadFile(filepath.Join(out, verify.ResultFile))
	if rerr != nil {
		t.Fatalf("no result (exit %d): %v\n%s", code, rerr, buf.String())
	}
	var res verify.Result
	if err := json.Unmarshal(b, &res); err != nil {
		t.Fatal(err)
	}
	// A node whose raft hung in its stop exits all the same (metadata's
	// shutdownRaft) and logs where it waited: a bug to find, not noise.
	if logs, err := os.ReadFile(filepath.Join(out, "nodes.log")); err == nil {
		if at := bytes.Index(logs, []byte("raft did not stop")); at >= 0 {
			t.Errorf("a node's raft did not stop:\n%s", logs[at:min(len(logs), at+20000)])
		}
	}
	return &res, buf.String(), code, out
}

// keepIfFailed keeps a failed test's verify output (history, result,
// report, the nodes' logs), which t.TempDir would remove, in a directory
// of its own under the system's temp dir, and says where.
func keepIfFailed(t *testing.T, out string) {
	t.Cleanup(func() {
		if !t.Failed() {
			return
		}
		keep, err := os.MkdirTemp("", "weir-"+strings.ReplaceAll(t.Name(), "/", "_")+"-")
		if err == nil {
			err = os.CopyFS(keep, os.DirFS(out))
		}
		if err != nil {
			t.Logf("keep the verify output: %v", err)
			return
		}
		t.Logf("the verify output is kept in %s", keep)
	})
}

func counts(res *verify.Result, topic string) map[string]int {
	for _, t := range res.Topics {
		if t.Name == topic {
			return t.Counts
		}
	}
	return nil
}

// TestVerifySafe: 75 seconds (or as long as one fault of each kind takes) of the seeded workload against three nodes
// while a fault of every kind strikes in turn (a restart among them
// composed with its leader's death). Nothing acknowledged may
// be lost, duplicated, moved or invented, nor anything deleted read
// again (the deleter must have deleted); the run itself must go cleanly
// (every fault applied and healed, the cluster healthy again after
// each); and the report must render.
func TestVerifySafe(t *testing.T) {
	res, output, code, dir := runVerify(t, 6*time.Minute, "--duration", "75s", "--seed", "1")
	if code != 0 || !res.OK() {
		t.Fatalf("exit %d, %d violations:\n%s", code, res.Violations, output)
	}
	c := counts(res, "verify")
	for _, k := range verify.SafetyKinds {
		if c[k] != 0 {
			t.Fatalf("%s: %d\n%s", k, c[k], output)
		}
	}
	if len(res.Errors) > 0 {
		t.Fatalf("the run went wrong: %v\n%s", res.Errors, output)
	}
	faults := res.FaultCounts()
	for _, k := range []string{verify.FaultKill, verify.FaultPause, verify.FaultPartition, verify.FaultOneWay, verify.FaultTorn, verify.FaultPower, verify.FaultController, verify.FaultRestart, verify.FaultMove} {
		if faults[k] == 0 {
			t.Errorf("no %s fault in %v", k, faults)
		}
	}
	if os.Geteuid() == 0 && faults[verify.FaultDiskFull] == 0 {
		t.Errorf("no disk-full fault as root: %v", faults)
	}
	// Seed 1 draws a restart that kills the partition's leader as the
	// stopped node returns: a clean stop composed with a crash.
	if !slices.ContainsFunc(res.Faults, func(w verify.FaultWindow) bool {
		return w.Fault == verify.FaultRestart && strings.Contains(w.Detail, "killed -9")
	}) {
		t.Errorf("no restart that killed its leader (a change of the draws? pick another seed): %+v", res.Faults)
	}
	if acked := res.Topics[0].Acked; acked < 1000 || res.Topics[0].AckedRead != acked {
		t.Fatalf("%d acknowledged, %d of them read", acked, res.Topics[0].AckedRead)
	}
	if res.Deletes == 0 {
		t.Fatalf("no DeleteRecords completed:\n%s", output)
	}
	for _, r := range res.Resources {
		t.Logf("node %d: peak RSS %d MiB, peak descriptors %d", r.Node, r.PeakRSS>>20, r.PeakFDs)
	}

	t.Run("check", func(t *testing.T) {
		out, err := exec.Command(harness.Bin(), "verify", "--check", filepath.Join(dir, verify.HistoryFile)).CombinedOutput()
		if err != nil || !strings.Contains(string(out), "verdict: no safety violation") {
			t.Fatalf("--check of the saved history: %v\n%s", err, out)
		}
	})
	t.Run("report in chromium", func(t *testing.T) {
		renderReport(t, filepath.Join(dir, verify.ReportFile), len(res.Faults))
	})
}

// TestVerifyUnsafe: with acks=1, unclean leader election and
// min.insync.replicas=1, the "lose" fault makes a leader acknowledge
// writes that only it holds, then kills it. The checker must find the
// loss, and verify must exit non-zero.
func TestVerifyUnsafe(t *testing.T) {
	res, output, code, _ := runVerify(t, 4*time.Minute, "--unsafe", "--duration", "30s", "--seed", "1")
	c := counts(res, "verify")
	if code == 0 || res.OK() || c[verify.KLost] == 0 {
		t.Fatalf("exit %d, %d lost, %d violations: the checker missed the loss\n%s", code, c[verify.KLost], res.Violations, output)
	}
	if res.FaultCounts()[verify.FaultLose] == 0 {
		t.Fatalf("no lose fault ran:\n%s", output)
	}
	t.Logf("--unsafe: %d lost, %d inconsistent offsets, %d violations in all", c[verify.KLost], c[verify.KInconsistent], res.Violations)
}

// TestVerifyCascade: five nodes; a partition's followers are killed one
// by one as its ISR shrinks, then its leader, alone in the ISR, loses
// power. The follower killed last is an eligible leader replica (KIP-966)
// and must lead: nothing acknowledged may be lost. Before eligible
// leader replicas, the same seed over three minutes found 4,499
// violations. With five nodes a move takes a replica to a node that had
// none, so the run moves partitions too; and a node's data disk is
// replaced (wipe): it comes back empty, and must fetch every replica again
// without leading any before it has.
func TestVerifyCascade(t *testing.T) {
	res, output, code, _ := runVerify(t, 5*time.Minute, "--nodes", "5", "--faults", "cascade,move,wipe", "--duration", "20s", "--seed", "1")
	if code != 0 || !res.OK() {
		t.Fatalf("exit %d, %d violations:\n%s", code, res.Violations, output)
	}
	if len(res.Errors) > 0 {
		t.Fatalf("the run went wrong: %v\n%s", res.Errors, output)
	}
	for _, k := range []string{verify.FaultCascade, verify.FaultMove, verify.FaultWipe} {
		if res.FaultCounts()[k] == 0 {
			t.Fatalf("no %s fault ran:\n%s", k, output)
		}
	}
	if acked := res.Topics[0].Acked; acked < 500 || res.Topics[0].AckedRead != acked {
		t.Fatalf("%d acknowledged, %d of them read\n%s", acked, res.Topics[0].AckedRead, output)
	}
}

// TestVerifyOverlap: faults start every 3 s and last 7 s, two in force at
// once (--overlap 2), so each strikes while the cluster still recovers
// from the one before: a kill while a restarted node truncates and
// catches up, a partition during the hand-over a SIGTERM began, a power
// loss with another node down, a slow link to a node that truncates. Nothing acknowledged may be lost, the run
// must go cleanly, and faults must in fact have overlapped. The group is
// a KIP-848 one (--group-protocol consumer) whose members come and go
// (--group-churn 8s): its coordinator moves with the faults, and its
// partitions between members.
func TestVerifyOverlap(t *testing.T) {
	res, output, code, _ := runVerify(t, 6*time.Minute, "--overlap", "2", "--interval", "3s", "--fault-duration", "7s",
		"--faults", "kill,pause,partition,torn,power,restart,slow", "--duration", "45s", "--seed", "2", "--group-protocol", "consumer", "--group-churn", "8s")
	if code != 0 || !res.OK() {
		t.Fatalf("exit %d, %d violations:\n%s", code, res.Violations, output)
	}
	if len(res.Errors) > 0 {
		t.Fatalf("the run went wrong: %v\n%s", res.Errors, output)
	}
	if acked := res.Topics[0].Acked; acked < 500 || res.Topics[0].AckedRead != acked {
		t.Fatalf("%d acknowledged, %d of them read\n%s", acked, res.Topics[0].AckedRead, output)
	}
	overlaps, lossy := 0, 0
	for i, a := range res.Faults {
		for _, b := range res.Faults[i+1:] {
			if b.Start < a.End || a.End < 0 {
				overlaps++
				// A partition or a slow link holds no process: it
				// may cut or slow a node another fault stops.
				network := func(kind string) bool { return kind == verify.FaultPartition || kind == verify.FaultSlow }
				if a.Node == b.Node && !network(a.Fault) && !network(b.Fault) {
					t.Errorf("two faults on node %d at once: %+v and %+v", a.Node, a, b)
				}
				if a.Fault == verify.FaultPower && b.Fault == verify.FaultPower {
					lossy++
				}
			}
		}
	}
	if overlaps == 0 || lossy > 0 {
		t.Fatalf("%d pairs of faults overlapped (want some), %d of them two power losses (want none):\n%s", overlaps, lossy, output)
	}
	t.Logf("%d faults, %d pairs in force at once; %d acknowledged, all read", len(res.Faults), overlaps, res.Topics[0].Acked)
}
