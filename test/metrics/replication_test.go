package metrics_test

import (
	"bytes"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/weir-project/weir/test/harness"
)

// TestMetricsReplicationTimesAndBytes produces with acks=-1 to a
// three-replica partition. On the leader each Produce waited for its
// followers: remote time, with the parts of every request adding up to
// its total. Once the followers caught up, each one's replication bytes
// in equal the leader's bytes in; the leader counts what it sent them as
// replication bytes out and none of it as bytes out (Kafka keeps
// follower fetches out of BytesOutPerSec).
func TestMetricsReplicationTimesAndBytes(t *testing.T) {
	c := harness.StartCluster(t, 3, harness.MetricsListener)
	ctx := harness.Ctx(t, 3*time.Minute)
	const topic, n = "replicated-metered", 20
	tally := &clientTally{requests: map[int16]int{}}
	cl := c.Client(kgo.WithHooks(tally), kgo.ProducerLinger(0), kgo.DefaultProduceTopic(topic))
	if _, err := kadm.NewClient(cl).CreateTopic(ctx, 1, 3, nil, topic); err != nil {
		t.Fatal(err)
	}
	st := c.WaitFullISR(topic, 0, time.Minute)
	leader := c.Node(st.Leader)
	// The leader's replica applies the metadata a moment after Metadata
	// answers show it; until then it would commit alone.
	harness.WaitFor(t, time.Minute, "the leader to lead with the full ISR", func() bool {
		s := scrapeMetrics(t, leader.MetricsURL)
		return s.Value("kafka_server_replicamanager_leadercount", nil) == 1 &&
			s.Value("kafka_server_replicamanager_underreplicatedpartitions", nil) == 0
	})
	reqBefore, _, _ := tally.get()
	before := scrapeMetrics(t, leader.MetricsURL).requestTimes("Produce")
	for i := range n {
		// acks=-1 (franz-go's default): each answer waits for both
		// followers to fetch the batch.
		rec := &kgo.Record{Value: bytes.Repeat([]byte{'r'}, 100+i)}
		if err := cl.ProduceSync(ctx, rec).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	reqAfter, _, _ := tally.get()
	produces := float64(reqAfter[0] - reqBefore[0])

	var rt requestTimes
	harness.WaitFor(t, 30*time.Second, "the leader to count the produce requests", func() bool {
		rt = scrapeMetrics(t, leader.MetricsURL).requestTimes("Produce")
		return rt.settled(before.count + produces)
	})
	rt = rt.minus(before)
	checkAddsUp(t, "Produce", rt)
	if rt.remote <= 0 {
		t.Errorf("%v acks=-1 produce requests to a three-replica partition spent remote time %vs", produces, rt.remote)
	}

	label := map[string]string{"topic": topic}
	in := scrapeMetrics(t, leader.MetricsURL).Value("kafka_server_brokertopicmetrics_bytesin_total", label)
	if in <= 0 {
		t.Fatalf("leader's bytes in %v after %d records", in, n)
	}
	for _, node := range c.Nodes {
		if node == leader {
			continue
		}
		var s scrape
		harness.WaitFor(t, time.Minute, "a follower's replication bytes in to reach the leader's bytes in", func() bool {
			s = scrapeMetrics(t, node.MetricsURL)
			return s.Value("kafka_server_brokertopicmetrics_replicationbytesin_total", label) >= in
		})
		if got := s.Value("kafka_server_brokertopicmetrics_replicationbytesin_total", label); got != in {
			t.Errorf("follower %d appended %v bytes from the leader, which took %v from producers", node.NodeID(), got, in)
		}
		if got := s.Value("kafka_server_brokertopicmetrics_bytesin_total", label); got != 0 {
			t.Errorf("follower %d counts %v replicated bytes as producers' bytes in", node.NodeID(), got)
		}
	}

	// A group commit waits for __consumer_offsets' followers the same
	// way: remote time on its coordinator, whichever node that is.
	commitsBefore, _, _ := tally.get()
	offs := kadm.Offsets{}
	offs.Add(kadm.Offset{Topic: topic, Partition: 0, At: 1, LeaderEpoch: -1})
	if r, err := kadm.NewClient(cl).CommitOffsets(ctx, "replicated-group", offs); err != nil || r.Error() != nil {
		t.Fatalf("commit: %v %v", err, r.Error())
	}
	// Every OffsetCommit answered (a first one may be refused while the
	// coordinator loads) is counted on some node: wait for all of them.
	commitsAfter, _, _ := tally.get()
	sentCommits := float64(commitsAfter[8] - commitsBefore[8])
	var commits requestTimes
	harness.WaitFor(t, 30*time.Second, "the commits counted", func() bool {
		commits = requestTimes{counts: make([]float64, len(requestTimeSeries))}
		for _, node := range c.Nodes {
			ns := scrapeMetrics(t, node.MetricsURL).requestTimes("OffsetCommit")
			commits.count += ns.count
			commits.total, commits.queue, commits.local = commits.total+ns.total, commits.queue+ns.queue, commits.local+ns.local
			commits.remote, commits.send = commits.remote+ns.remote, commits.send+ns.send
			for i := range ns.counts {
				commits.counts[i] += ns.counts[i]
			}
		}
		return commits.settled(sentCommits)
	})
	checkAddsUp(t, "OffsetCommit", commits)
	if commits.remote <= 0 {
		t.Errorf("%v commits to a three-replica __consumer_offsets spent remote time %vs", commits.count, commits.remote)
	}

	s := scrapeMetrics(t, leader.MetricsURL)
	if got := s.Value("kafka_server_brokertopicmetrics_replicationbytesout_total", label); got < 2*in {
		t.Errorf("leader sent %v bytes to two followers of a %v-byte log", got, in)
	}
	if got := s.Value("kafka_server_brokertopicmetrics_bytesout_total", label); got != 0 {
		t.Errorf("leader counts %v bytes of follower fetches as bytes out", got)
	}
	if got := s.Value("kafka_server_brokertopicmetrics_replicationbytesin_total", label); got != 0 {
		t.Errorf("the leader counts %v bytes as appended from a leader", got)
	}
}
