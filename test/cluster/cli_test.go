package cluster

import (
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"

	"github.com/weir-project/weir/test/harness"
)

// TestClusterStatusAndUnhealthyPartitions: `weir cluster status` lists
// every broker with its state and the active controller, and, once a
// broker is killed and fenced, names it fenced and the partitions it
// leaves under-replicated, as `weir topic describe
// --under-replicated-partitions` does.
func TestClusterStatusAndUnhealthyPartitions(t *testing.T) {
	c := harness.StartCluster(t, 3)
	createTopic(t, c, "status", 3, 3, nil)
	out := harness.RunCLI(t, c.Nodes[0], "cluster", "status")
	for id := 1; id <= 3; id++ {
		if !regexp.MustCompile(`(?m)^` + string(rune('0'+id)) + `\s+127\.0\.0\.1:\d+\s+-\s+live$`).MatchString(out) {
			t.Fatalf("cluster status does not show broker %d live:\n%s", id, out)
		}
	}
	if !regexp.MustCompile(`Controller: [123]\n`).MatchString(out) || !strings.Contains(out, "Partitions: 3 (offline 0, under min ISR 0, under-replicated 0)") {
		t.Fatalf("cluster status of a healthy cluster:\n%s", out)
	}
	if got := harness.RunCLI(t, c.Nodes[0], "topic", "describe", "--under-replicated-partitions"); got != "" {
		t.Fatalf("under-replicated partitions of a healthy cluster:\n%s", got)
	}

	c.Nodes[2].Kill()
	harness.WaitFor(t, time.Minute, "broker 3 fenced in cluster status", func() bool {
		out = harness.RunCLI(t, c.Nodes[0], "cluster", "status")
		return regexp.MustCompile(`(?m)^3\s+\S+\s+-\s+fenced$`).MatchString(out) &&
			strings.Contains(out, "under-replicated 3)")
	})
	got := harness.RunCLI(t, c.Nodes[0], "topic", "describe", "status", "--under-replicated-partitions")
	if n := strings.Count(got, "Topic: status"); n != 3 {
		t.Fatalf("describe --under-replicated-partitions listed %d partitions, want 3:\n%s", n, got)
	}
	if got := harness.RunCLI(t, c.Nodes[0], "topic", "describe", "--unavailable-partitions"); got != "" {
		t.Fatalf("unavailable partitions with two of three brokers live:\n%s", got)
	}
}

// TestDescribeLogDirs: every broker answers DescribeLogDirs with its log
// dir, its filesystem's size, and the replicas it holds with their sizes.
func TestDescribeLogDirs(t *testing.T) {
	c := harness.StartCluster(t, 3)
	createTopic(t, c, "dirs", 2, 3, nil)
	acks := harness.StartAckStream(t, c, harness.StreamConfig{Topic: "dirs", Records: 200, Pace: time.Millisecond})
	<-acks.Done()
	acks.Finish()
	adm := kadm.NewClient(c.Client())
	harness.WaitFor(t, time.Minute, "every replica of dirs-0 to hold the records", func() bool {
		all, err := adm.DescribeAllLogDirs(harness.Ctx(t, opTimeout), nil)
		if err != nil {
			t.Fatal(err)
		}
		holders := 0
		for broker, dirs := range all {
			for dir, d := range dirs {
				if d.Err != nil {
					t.Fatalf("broker %d dir %s: %v", broker, dir, d.Err)
				}
				if d.Dir != c.Node(broker).Dir {
					t.Fatalf("broker %d reports dir %s, its log dir is %s", broker, d.Dir, c.Node(broker).Dir)
				}
				if d.TotalBytes <= 0 || d.UsableBytes <= 0 {
					t.Fatalf("broker %d dir %s: total %d usable %d bytes", broker, dir, d.TotalBytes, d.UsableBytes)
				}
				if p, ok := d.Topics.Lookup("dirs", 0); ok && p.Size > 0 {
					holders++
				}
			}
		}
		return holders == 3
	})
}
