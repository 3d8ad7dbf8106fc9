package reassign

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/weir-project/weir/test/harness"
)

// TestReassignCLI: --generate proposes a balanced plan over the brokers
// given and changes nothing; --list (and --output json) shows a move in
// progress; --cancel takes it back to the original replicas and the
// adding replica's log is deleted; bad files and flags fail on one line.
func TestReassignCLI(t *testing.T) {
	c := harness.StartCluster(t, 3)
	const topic = "cli"
	c.CreateAssignedTopic(topic, [][]int32{{1, 2}, {2, 3}, {3, 1}}, nil, opTimeout)
	fill(t, c, topic, []int32{0}, 200, 10000) // 2 MB: slow at the throttle below
	b4 := c.AddBrokerOnly()
	c.WaitBrokerLive(4, opTimeout)
	n1 := c.Node(1)

	out := mustWeir(t, n1, opTimeout, "topic", "reassign", "--generate", "--topics", topic, "--broker-list", "1,2,3,4")
	current := proposedPlan(t, out, "Current partition replica assignment")
	proposed := proposedPlan(t, out, "Proposed partition reassignment configuration")
	if len(current) != 3 || len(proposed) != 3 {
		t.Fatalf("--generate:\n%s", out)
	}
	load := map[int32]int{}
	for _, m := range proposed {
		if len(m.Replicas) != 2 {
			t.Fatalf("proposal changes the replication factor: %+v", m)
		}
		for _, r := range m.Replicas {
			load[r]++
		}
	}
	for b := int32(1); b <= 4; b++ {
		if load[b] < 1 || load[b] > 2 {
			t.Fatalf("broker %d gets %d of 6 replicas: %+v", b, load[b], proposed)
		}
	}
	if got := inProgress(t, n1.Dial()); len(got) != 0 {
		t.Fatalf("--generate started reassignments: %+v", got)
	}

	// A slow move, listed, then cancelled.
	plan := planFile(t, []move{{topic, 0, []int32{4, 2}}})
	mustWeir(t, n1, opTimeout, "topic", "reassign", "--execute", "--reassignment-json-file", plan, "--throttle", "20000")
	out = mustWeir(t, c.Node(2), opTimeout, "topic", "reassign", "--list", "--output", "json")
	var listed []struct {
		Topic     string  `json:"topic"`
		Partition int32   `json:"partition"`
		Replicas  []int32 `json:"replicas"`
		Adding    []int32 `json:"addingReplicas"`
		Removing  []int32 `json:"removingReplicas"`
	}
	if err := json.Unmarshal([]byte(out), &listed); err != nil || len(listed) != 1 ||
		!slices.Equal(listed[0].Replicas, []int32{4, 2, 1}) || !slices.Equal(listed[0].Adding, []int32{4}) || !slices.Equal(listed[0].Removing, []int32{1}) {
		t.Fatalf("--list --output json: %v\n%s", err, out)
	}
	if out := mustWeir(t, n1, opTimeout, "topic", "reassign", "--list"); !strings.Contains(out, "ADDING") || !strings.Contains(out, "4,2,1") {
		t.Fatalf("--list:\n%s", out)
	}
	if _, err := weir(t, n1, opTimeout, "topic", "reassign", "--execute", "--reassignment-json-file", plan); err == nil || !strings.Contains(err.Error(), "in progress") {
		t.Fatalf("a second --execute while one is in progress: %v", err)
	}
	out = mustWeir(t, n1, opTimeout, "topic", "reassign", "--verify", "--reassignment-json-file", plan)
	if !strings.Contains(out, "is in progress") || strings.Contains(out, "Clearing") {
		t.Fatalf("--verify of a move in progress:\n%s", out)
	}
	out = mustWeir(t, n1, opTimeout, "topic", "reassign", "--cancel", "--reassignment-json-file", plan)
	if !strings.Contains(out, "Successfully cancelled partition reassignments for: cli-0") {
		t.Fatalf("--cancel:\n%s", out)
	}
	// Back to the original replicas; as in Kafka their order is the
	// reassignment's (its target first), so [2 1]: the rollback plan
	// --execute printed restores the order too.
	waitPlaced(t, c, topic, 0, []int32{2, 1}, opTimeout)
	partitionDirGone(t, b4, topic, 0)
	if out := mustWeir(t, n1, opTimeout, "topic", "reassign", "--cancel", "--reassignment-json-file", plan); !strings.Contains(out, "None of the partitions") {
		t.Fatalf("--cancel with nothing in progress:\n%s", out)
	}

	// Rebalance onto the new broker: every broker ends with an even share
	// of the 6 replicas, as every node sees it.
	out = mustWeir(t, c.Node(3), moveTimeout, "cluster", "rebalance", "--timeout", moveTimeout.String())
	if !strings.Contains(out, "The cluster is balanced.") {
		t.Fatalf("rebalance:\n%s", out)
	}
	load = map[int32]int{}
	for p := range int32(3) {
		st := c.WaitPartition(topic, p, opTimeout, "no move in progress", func(st harness.PartitionState) bool {
			return len(st.Replicas) == 2 && len(st.ISR) == 2
		})
		for _, r := range st.Replicas {
			load[r]++
		}
	}
	for b := int32(1); b <= 4; b++ {
		if load[b] < 1 || load[b] > 2 {
			t.Fatalf("after rebalance broker %d holds %d of 6 replicas (%v):\n%s", b, load[b], load, out)
		}
	}
	if out := mustWeir(t, c.Node(1), opTimeout, "cluster", "rebalance", "--dry-run"); !strings.Contains(out, "Nothing to move") {
		t.Fatalf("a second rebalance would move more:\n%s", out)
	}

	// Bad input: one line each, naming the problem.
	dir := t.TempDir()
	write := func(name, body string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	for _, bad := range []struct {
		args []string
		want string
	}{
		{[]string{"--execute"}, "--reassignment-json-file is required"},
		{[]string{"--generate", "--topics", topic}, "--broker-list"},
		{[]string{"--generate", "--topics", topic, "--broker-list", "1,9"}, "broker 9"},
		{[]string{"--execute", "--verify"}, "exactly one"},
		{[]string{"--execute", "--reassignment-json-file", write("v2", `{"version":2,"partitions":[]}`)}, "version 2"},
		{[]string{"--execute", "--reassignment-json-file", write("dup", `{"version":1,"partitions":[{"topic":"cli","partition":0,"replicas":[1,1]}]}`)}, "twice"},
		{[]string{"--execute", "--reassignment-json-file", write("dirs", `{"version":1,"partitions":[{"topic":"cli","partition":0,"replicas":[1,2],"log_dirs":["/x","any"]}]}`)}, "log_dirs"},
		{[]string{"--execute", "--reassignment-json-file", write("broker", `{"version":1,"partitions":[{"topic":"cli","partition":1,"replicas":[2,9]}]}`)}, "INVALID_REPLICA_ASSIGNMENT"},
		{[]string{"--execute", "--reassignment-json-file", write("topic", `{"version":1,"partitions":[{"topic":"nope","partition":0,"replicas":[1]}]}`)}, "UNKNOWN_TOPIC_OR_PARTITION"},
	} {
		out, err := weir(t, n1, opTimeout, append([]string{"topic", "reassign"}, bad.args...)...)
		if err == nil {
			t.Fatalf("%v succeeded:\n%s", bad.args, out)
		}
		msg := err.Error()
		stderr := msg[strings.LastIndex(msg, ": weir: ")+1:]
		if !strings.Contains(msg, bad.want) || strings.Count(strings.TrimSpace(stderr), "\n") > 0 {
			t.Errorf("%v: %v (want one line naming %q)", bad.args, msg, bad.want)
		}
	}
}
