package consumergroups

import (
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/weir-project/weir/test/harness"
)

// weir runs the weir binary's client commands against b; stdout.
func weir(t *testing.T, b *harness.Broker, args ...string) string {
	t.Helper()
	return harness.RunCLI(t, b, args...)
}

// TestWeirGroupDescribesConsumerGroups: weir group list and describe show
// a KIP-848 group: its state, and per partition the committed offset,
// lag and owning member (from DescribeGroups, which describes consumer
// groups in the classic consumer protocol's format).
func TestWeirGroupDescribesConsumerGroups(t *testing.T) {
	b := startBroker(t)
	adm := kadm.NewClient(b.Client())
	const topic, g, partitions = "cli848", "cli848-group", 3
	createTopic(t, adm, topic, partitions)
	ms := []*member{
		startMember(t, b, "cli-a", g, topic, kgo.RangeBalancer()),
		startMember(t, b, "cli-b", g, topic, kgo.RangeBalancer()),
	}
	d := waitStable(t, b.Client(), g, topic, partitions, 2)
	values := produce(t, b, topic, "v", 30)
	waitAllRead(t, ms, values)
	waitCommitted(t, adm, g, topic, 30)

	if out := weir(t, b, "group", "list"); !strings.Contains(out, g) {
		t.Fatalf("weir group list:\n%s", out)
	}
	var out string
	harness.WaitFor(t, 30*time.Second, "describe shows every partition owned", func() bool {
		out = weir(t, b, "group", "describe", g)
		owned := 0
		for _, line := range strings.Split(out, "\n") {
			f := strings.Fields(line)
			if len(f) >= 9 && f[0] == g && f[1] == topic && strings.HasPrefix(f[8], "cli-") && f[5] == "0" {
				owned++
			}
		}
		return owned == partitions
	})
	for _, m := range d.Members {
		if !strings.Contains(out, m.MemberID) {
			t.Errorf("member %s missing from:\n%s", m.MemberID, out)
		}
	}
}
