package cluster

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/weir-project/weir/test/harness"
)

// elrView is a partition's leader, ISR and ELR as DescribeTopicPartitions
// (KIP-966) answers them.
type elrView struct {
	leader   int32
	isr, elr []int32
}

func (v elrView) String() string {
	return fmt.Sprintf("leader %d isr %v elr %v", v.leader, v.isr, v.elr)
}

// describeELR asks every running node for topic's partition 0.
func describeELR(c *harness.Cluster, topic string) ([]elrView, error) {
	var views []elrView
	for i, b := range c.Nodes {
		if !b.Running() {
			continue
		}
		req := kmsg.NewPtrDescribeTopicPartitionsRequest()
		rt := kmsg.NewDescribeTopicPartitionsRequestTopic()
		rt.Topic = topic
		req.Topics, req.ResponsePartitionLimit = append(req.Topics, rt), 10
		raw, err := harness.RequestTo(b.Addr, req)
		if err != nil {
			return nil, fmt.Errorf("node %d: %w", i+1, err)
		}
		resp := raw.(*kmsg.DescribeTopicPartitionsResponse)
		if len(resp.Topics) != 1 || resp.NextCursor != nil {
			return nil, fmt.Errorf("node %d answered %+v", i+1, resp)
		}
		if err := kerr.ErrorForCode(resp.Topics[0].ErrorCode); err != nil {
			return nil, fmt.Errorf("node %d: %s: %w", i+1, topic, err)
		}
		for _, p := range resp.Topics[0].Partitions {
			views = append(views, elrView{p.LeaderID, p.ISR, p.EligibleLeaderReplicas})
		}
	}
	return views, nil
}

// waitELR waits until every running node answers want (a node just
// restarted may not answer yet, or not know the topic).
func waitELR(t *testing.T, c *harness.Cluster, topic string, want elrView) {
	t.Helper()
	var last string
	defer func() {
		if t.Failed() {
			t.Logf("%s-0, last seen: %s", topic, last)
		}
	}()
	harness.WaitFor(t, opTimeout, fmt.Sprintf("%s-0: %v on every node", topic, want), func() bool {
		views, err := describeELR(c, topic)
		if err != nil {
			last = err.Error()
			return false
		}
		last = fmt.Sprint(views)
		return len(views) > 0 && !slices.ContainsFunc(views, func(v elrView) bool {
			return v.leader != want.leader || !slices.Equal(v.isr, want.isr) || !slices.Equal(v.elr, want.elr)
		})
	})
}

// TestELRDescribed: the eligible leader replicas are kept by the rules of
// KIP-966 and shown by DescribeTopicPartitions (a franz-go kmsg request)
// by `weir topic describe` and by the console's topic page. One node is down at a time, so the
// metadata quorum (all three nodes) stays up.
//
// Replicas {1, 2, 3}, min.insync.replicas 2. Node 3 stops: the ISR {1, 2}
// still has its minimum, the high watermark may advance without node 3,
// so node 3 is not eligible, nor when the minimum is raised to 3 (a
// config change removes nobody from the ISR). Node 3 comes back; node 2
// stops: the ISR {1, 3} is below the minimum, the high watermark stops,
// and node 2 holds everything committed: the ELR is {2}. The minimum is
// lowered to 2 again: the ISR has it, and the ELR is emptied.
func TestELRDescribed(t *testing.T) {
	c := harness.StartCluster(t, 3, "auto.leader.rebalance.enable=false", "console.listener=http://127.0.0.1:0")
	guardNodes(t, c)
	const topic = "elr-described"
	createAssignedTopic(t, c, topic, [][]int32{{1, 2, 3}}, map[string]*string{"min.insync.replicas": kmsg.StringPtr("2")})
	produceSyncEach(t, acksAllProducer(c), topic, "a", "b", "c")
	waitELR(t, c, topic, elrView{1, []int32{1, 2, 3}, []int32{}})
	minISR := func(n int) {
		harness.RunCLI(t, c.Node(1), "topic", "alter-config", topic, "--set", fmt.Sprintf("min.insync.replicas=%d", n))
	}

	c.Node(3).Kill()
	waitELR(t, c, topic, elrView{1, []int32{1, 2}, []int32{}})
	minISR(3)
	waitELR(t, c, topic, elrView{1, []int32{1, 2}, []int32{}})
	c.Node(3).Restart()
	waitELR(t, c, topic, elrView{1, []int32{1, 2, 3}, []int32{}})

	c.Node(2).Kill()
	waitELR(t, c, topic, elrView{1, []int32{1, 3}, []int32{2}})
	out := harness.RunCLI(t, c.Node(1), "topic", "describe", topic)
	if !strings.Contains(out, "\tLeader: 1\tReplicas: 1,2,3\tIsr: 1,3\tOffline: 2\tElr: 2\n") {
		t.Fatalf("weir topic describe does not show the ELR:\n%s", out)
	}
	// Where it matters most: the partitions under their minimum.
	if out := harness.RunCLI(t, c.Node(1), "topic", "describe", topic, "--under-min-isr-partitions"); out != "\tTopic: "+topic+"\tPartition: 0\tLeader: 1\tReplicas: 1,2,3\tIsr: 1,3\tOffline: 2\tElr: 2\n" {
		t.Fatalf("weir topic describe --under-min-isr-partitions:\n%q", out)
	}
	var docs []struct {
		Partitions []struct {
			ELR []int32 `json:"elr"`
		} `json:"partitions"`
	}
	js := harness.RunCLI(t, c.Node(1), "topic", "describe", topic, "--output", "json")
	if err := json.Unmarshal([]byte(js), &docs); err != nil || len(docs) != 1 || len(docs[0].Partitions) != 1 ||
		!slices.Equal(docs[0].Partitions[0].ELR, []int32{2}) {
		t.Fatalf("weir topic describe --output json: %v\n%s", err, js)
	}
	// ISR, offline and ELR cells of the partition's row.
	if page := consoleTopicPage(t, c.Node(1), topic); !strings.Contains(page, "<td>1, 3</td><td>2</td><td>2</td>") {
		t.Fatalf("the console's topic page does not show the ELR:\n%s", page)
	}

	minISR(2)
	waitELR(t, c, topic, elrView{1, []int32{1, 3}, []int32{}})
	c.Node(2).Restart()
	waitELR(t, c, topic, elrView{1, []int32{1, 2, 3}, []int32{}})
	if out := harness.RunCLI(t, c.Node(1), "topic", "describe", topic); strings.Contains(out, "Elr:") {
		t.Fatalf("an empty ELR is shown:\n%s", out)
	}
}

// consoleTopicPage is the HTML of topic's page in b's console.
func consoleTopicPage(t *testing.T, b *harness.Broker, topic string) string {
	t.Helper()
	m := regexp.MustCompile(`msg="console listening" url=(http://\S+)/`).FindStringSubmatch(b.Output())
	if m == nil {
		t.Fatalf("no console address in the broker's log:\n%s", b.Output())
	}
	resp, err := http.Get(m[1] + "/topics/" + topic)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("console topic page: %s, %v\n%s", resp.Status, err, body)
	}
	return string(body)
}
