package metrics_test

import (
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/weir-project/weir/test/harness"
)

// TestMetricsFollowAnISRShrinkAndExpand pauses a follower of a
// three-replica partition: its leader's under-replicated and under-min-ISR
// gauges go to 1 and an ISR shrink is counted; resumed, the follower
// rejoins, an expansion is counted and the gauges return to 0. Exactly
// one node says it is the active controller throughout.
func TestMetricsFollowAnISRShrinkAndExpand(t *testing.T) {
	// Only the leader's lag check may take the follower out of the ISR:
	// with a session timeout far beyond the test, the controller never
	// fences the paused broker (which would remove it too, uncounted).
	c := harness.StartCluster(t, 3, harness.MetricsListener,
		"replica.lag.time.max.ms=1000", "broker.session.timeout.ms=120000")
	ctx := harness.Ctx(t, 3*time.Minute)
	const topic = "isr-metered"
	cl := c.Client()
	if _, err := kadm.NewClient(cl).CreateTopic(ctx, 1, 3, map[string]*string{"min.insync.replicas": kadm.StringPtr("3")}, topic); err != nil {
		t.Fatal(err)
	}
	st := c.WaitFullISR(topic, 0, time.Minute)
	leader := c.Node(st.Leader)
	if err := cl.ProduceSync(ctx, &kgo.Record{Topic: topic, Value: []byte("x")}).FirstErr(); err != nil {
		t.Fatal(err)
	}

	var follower *harness.Broker
	active := 0.0
	for _, n := range c.Nodes {
		s := scrapeMetrics(t, n.MetricsURL)
		a := s.Value("kafka_controller_kafkacontroller_activecontrollercount", nil)
		active += a
		if n != leader && a == 0 {
			follower = n
		}
	}
	if active != 1 {
		t.Fatalf("%v nodes say they are the active controller", active)
	}
	if follower == nil {
		t.Fatal("no follower that is not the active controller")
	}
	// The leader's replica applies the metadata a moment after its
	// Metadata answers show it.
	var before scrape
	harness.WaitFor(t, time.Minute, "the leader to see the full ISR", func() bool {
		before = scrapeMetrics(t, leader.MetricsURL)
		return before.Value("kafka_server_replicamanager_underreplicatedpartitions", nil) == 0 &&
			before.Value("kafka_server_replicamanager_leadercount", nil) == 1
	})
	shrinks0 := before.Value("kafka_server_replicamanager_isrshrinks_total", nil)
	expands0 := before.Value("kafka_server_replicamanager_isrexpands_total", nil)

	follower.Pause()
	var s scrape
	harness.WaitFor(t, time.Minute, "the leader to count the paused follower out", func() bool {
		s = scrapeMetrics(t, leader.MetricsURL)
		return s.Value("kafka_server_replicamanager_underreplicatedpartitions", nil) == 1
	})
	if got := s.Value("kafka_server_replicamanager_underminisrpartitioncount", nil); got != 1 {
		t.Errorf("under-min-ISR %v with ISR 2 of min 3", got)
	}
	if got := s.Value("kafka_server_replicamanager_isrshrinks_total", nil) - shrinks0; got < 1 {
		t.Errorf("ISR shrinks moved by %v", got)
	}

	follower.Resume()
	harness.WaitFor(t, time.Minute, "the follower back in the ISR", func() bool {
		s = scrapeMetrics(t, leader.MetricsURL)
		return s.Value("kafka_server_replicamanager_underreplicatedpartitions", nil) == 0
	})
	if got := s.Value("kafka_server_replicamanager_isrexpands_total", nil) - expands0; got < 1 {
		t.Errorf("ISR expansions moved by %v", got)
	}
	if got := s.Value("kafka_server_replicamanager_underminisrpartitioncount", nil); got != 0 {
		t.Errorf("under-min-ISR %v with the ISR full again", got)
	}
	if got := s.Value("kafka_server_replicamanager_leadercount", nil); got < 1 {
		t.Errorf("leader count %v on the leader", got)
	}
}
