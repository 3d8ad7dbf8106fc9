package cluster

// Helpers of the tests that break a cluster on purpose (pause_test.go,
// quorum_test.go, shutdown_test.go): what every node sees, topics with a
// chosen replica assignment, and checks of the brokers' logs. The
// producer streams they break the cluster under are harness.AckStream.

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/weir-project/weir/test/harness"
)

// waitEveryNode waits until every running node's Metadata answer for a
// partition satisfies cond, and returns the last answer. A node that was
// just resumed answers from its stale image until it has applied the
// metadata log, so one node's word (the harness asks the first that
// answers) may show a state long gone; every node's is the current one.
func waitEveryNode(t *testing.T, c *harness.Cluster, topic string, p int32, timeout time.Duration, what string, cond func(harness.PartitionState) bool) harness.PartitionState {
	t.Helper()
	var running []int32
	for i, b := range c.Nodes {
		if b.Running() {
			running = append(running, int32(i+1))
		}
	}
	return waitSeenBy(t, c, running, topic, p, timeout, what, cond)
}

// waitSeenBy waits until the Metadata answers of the given nodes for a
// partition all satisfy cond, and returns the last one. Asking only
// nodes known to be up also keeps a paused node's silence (the harness
// waits 5 s for each answer) out of the timings.
func waitSeenBy(t *testing.T, c *harness.Cluster, nodes []int32, topic string, p int32, timeout time.Duration, what string, cond func(harness.PartitionState) bool) harness.PartitionState {
	t.Helper()
	var st harness.PartitionState
	harness.WaitFor(t, timeout, fmt.Sprintf("nodes %v to show %s-%d with %s", nodes, topic, p, what), func() bool {
		for _, id := range nodes {
			var err error
			if st, err = c.Node(id).Partition(topic, p); err != nil || !cond(st) {
				return false
			}
		}
		return true
	})
	return st
}

// fullISR: a leader and every replica in sync.
func fullISR(st harness.PartitionState) bool {
	return st.Leader > 0 && len(st.Replicas) > 0 && len(st.ISR) == len(st.Replicas)
}

// createAssignedTopic creates a topic whose partition p has the replicas
// assignment[p] and waits until every partition is led by its preferred
// replica (the first) with a full ISR: these tests choose which node to
// break by its role.
func createAssignedTopic(t *testing.T, c *harness.Cluster, topic string, assignment [][]int32, configs map[string]*string) {
	t.Helper()
	c.CreateAssignedTopic(topic, assignment, configs, opTimeout)
	for p, replicas := range assignment {
		c.WaitPartition(topic, int32(p), opTimeout, fmt.Sprintf("leader %d and a full ISR", replicas[0]), func(st harness.PartitionState) bool {
			return st.Leader == replicas[0] && len(st.ISR) == len(replicas)
		})
	}
}

// otherNodes are the ids 1..n without the given ones, in order.
func otherNodes(n int, except ...int32) []int32 {
	var out []int32
	for id := int32(1); id <= int32(n); id++ {
		skip := false
		for _, e := range except {
			skip = skip || e == id
		}
		if !skip {
			out = append(out, id)
		}
	}
	return out
}

// logLines are the lines of what b logged from byte offset since on that
// contain every one of parts.
func logLines(b *harness.Broker, since int, parts ...string) []string {
	out, _ := b.OutputSince(since)
	var hits []string
	for _, line := range strings.Split(out, "\n") {
		all := line != ""
		for _, p := range parts {
			all = all && strings.Contains(line, p)
		}
		if all {
			hits = append(hits, line)
		}
	}
	return hits
}

// logEnds is the current end of every node's log, for logLines.
func logEnds(c *harness.Cluster) []int {
	out := make([]int, len(c.Nodes))
	for i, b := range c.Nodes {
		_, out[i] = b.OutputSince(-1)
	}
	return out
}

// guardNodes, at the end of the test, fails it if a node's race detector
// or runtime reported anything (a cluster test is also a race test of the
// broker), and, if the test failed, keeps every node's log: in the
// directory $WEIR_CLUSTER_LOGS when set, else the tail in the test log.
func guardNodes(t *testing.T, c *harness.Cluster) {
	t.Cleanup(func() {
		for i, b := range c.Nodes {
			out := b.Output()
			for _, bad := range []string{"WARNING: DATA RACE", "panic:", "fatal error:", "raft did not stop"} {
				if at := strings.Index(out, bad); at >= 0 {
					t.Errorf("node %d logged %q:\n%s", i+1, bad, out[at:min(len(out), at+4000)])
				}
			}
		}
		if !t.Failed() {
			return
		}
		for i, b := range c.Nodes {
			// A shutdown the test did not ask for comes from a signal
			// sent by something else on the machine.
			code, exited := b.ExitCode()
			t.Logf("node %d: exited %v (code %d); shutdowns logged: %q", i+1, exited, code, logLines(b, 0, `msg="weir shutting down"`))
			keepLog(t, fmt.Sprintf("node%d", i+1), b.Output())
		}
	})
}

// keepLog keeps a log of a failed test: as a file in $WEIR_CLUSTER_LOGS
// when set, else its tail in the test's output.
func keepLog(t *testing.T, what, text string) {
	dir := os.Getenv("WEIR_CLUSTER_LOGS")
	if dir == "" {
		t.Logf("%s log (tail):\n%s", what, tailOf(text, 16<<10))
		return
	}
	name := filepath.Join(dir, fmt.Sprintf("%s-%d-%s-%s.log", strings.ReplaceAll(t.Name(), "/", "_"), os.Getpid(), time.Now().Format("150405"), what))
	if err := os.WriteFile(name, []byte(text), 0o644); err != nil {
		t.Logf("keep the %s log: %v", what, err)
		return
	}
	t.Logf("%s log: %s", what, name)
}

// pauseNode stops b with SIGSTOP; a failing test still resumes it, so
// that its log shows what it did next. (Through the harness, never by a
// bare pid: pids are reused fast on a machine with pid_max 32768, and a
// stray signal would hit another test's process.)
func pauseNode(t *testing.T, b *harness.Broker) {
	t.Helper()
	t.Cleanup(func() {
		if b.Running() {
			b.Resume()
		}
	})
	b.Pause()
}
