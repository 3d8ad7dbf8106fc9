package reassign

import (
	"context"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"

	"github.com/weir-project/weir/test/harness"
)

// TestReassignThrottle: moving 3 MiB onto a new broker with --throttle
// 256 KiB/s takes as long as the limit says, within a generous margin
// (the rate is measured from the bytes that reached the new broker's
// disk, not assumed), and --verify removes the throttle once done.
func TestReassignThrottle(t *testing.T) {
	c := harness.StartCluster(t, 3)
	const topic = "thr"
	parts := []int32{0, 1, 2}
	c.CreateAssignedTopic(topic, [][]int32{{1}, {2}, {3}}, nil, opTimeout)
	fill(t, c, topic, parts, 256, 4000) // ~1 MiB per partition
	var total int64
	for i, p := range parts {
		total += logBytes(c.Node(int32(i+1)).Dir, topic, []int32{p})
	}
	b4 := c.AddBrokerOnly()
	c.WaitBrokerLive(4, opTimeout)
	const limit = 256 << 10
	plan := planFile(t, []move{{topic, 0, []int32{4}}, {topic, 1, []int32{4}}, {topic, 2, []int32{4}}})
	start := time.Now()
	out := mustWeir(t, c.Node(1), opTimeout, "topic", "reassign", "--execute", "--reassignment-json-file", plan, "--throttle", strconv.Itoa(limit))
	if !strings.Contains(out, "Throttle set to") {
		t.Fatalf("no throttle set:\n%s", out)
	}
	// Sample the new broker's copy until it holds everything.
	var copied int64
	harness.WaitFor(t, moveTimeout, "the new broker to hold every byte", func() bool {
		copied = logBytes(b4.Dir, topic, parts)
		return copied >= total
	})
	elapsed := time.Since(start)
	rate := float64(copied) / elapsed.Seconds()
	t.Logf("%d bytes moved in %v: %.0f bytes/s at a limit of %d (%.2f of it)", copied, elapsed.Round(time.Millisecond), rate, limit, rate/limit)
	// The bucket holds one second of budget, and a batch may overshoot it:
	// copied <= limit * (elapsed + 1s) + a batch. The lower bound only
	// says the throttle does not starve the move.
	if float64(copied) > limit*(elapsed.Seconds()+1)+64<<10 {
		t.Fatalf("throttle exceeded: %d bytes in %v at %d bytes/s", copied, elapsed, limit)
	}
	if rate < limit/3 {
		t.Fatalf("the move crawled at %.0f bytes/s with a limit of %d", rate, limit)
	}
	for _, p := range parts {
		waitPlaced(t, c, topic, p, []int32{4}, moveTimeout)
	}
	harness.WaitFor(t, opTimeout, "--verify to report every move completed", func() bool {
		out := mustWeir(t, c.Node(2), opTimeout, "topic", "reassign", "--verify", "--reassignment-json-file", plan)
		return strings.Count(out, "is completed") == 3 && strings.Contains(out, "Clearing broker-level throttles")
	})
	adm := kadm.NewClient(c.Client())
	ctx, cancel := context.WithTimeout(context.Background(), opTimeout)
	defer cancel()
	rc, err := adm.DescribeBrokerConfigs(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range rc {
		for _, cfg := range r.Configs {
			if cfg.Key == "replica.reassignment.throttle.bytes.per.sec" {
				t.Fatalf("throttle still set after --verify: %+v", cfg)
			}
		}
	}
}
