package cluster

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/weir-project/weir/test/harness"
)

// describeClusterOn asks one node, directly, for DescribeCluster: the
// controller id it reports and the live brokers it lists.
func describeClusterOn(b *harness.Broker) (controller int32, brokers []int32, err error) {
	cl, err := kgo.NewClient(kgo.SeedBrokers(b.Addr), kgo.RequestRetries(0), kgo.DialTimeout(2*time.Second))
	if err != nil {
		return -1, nil, err
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	resp, err := cl.SeedBrokers()[0].Request(ctx, kmsg.NewPtrDescribeClusterRequest())
	if err != nil {
		return -1, nil, err
	}
	r := resp.(*kmsg.DescribeClusterResponse)
	if err := kerr.ErrorForCode(r.ErrorCode); err != nil {
		return -1, nil, err
	}
	for _, br := range r.Brokers {
		brokers = append(brokers, br.NodeID)
	}
	slices.Sort(brokers)
	return r.ControllerID, brokers, nil
}

// waitController waits until every running node reports the same active
// controller, one that is running and not in except, and returns it.
func waitController(t *testing.T, c *harness.Cluster, timeout time.Duration, except ...int32) int32 {
	t.Helper()
	var id int32
	harness.WaitFor(t, timeout, "the running nodes to agree on a running controller", func() bool {
		id = -1
		for _, b := range c.Nodes {
			if !b.Running() {
				continue
			}
			got, _, err := describeClusterOn(b)
			if err != nil || (id != -1 && got != id) {
				return false
			}
			id = got
		}
		return id > 0 && !slices.Contains(except, id) && c.Node(id).Running()
	})
	return id
}

// topicsOn lists the topics one node's Metadata shows, each with its
// partitions' replica counts and whether each has a leader.
func topicsOn(t *testing.T, b *harness.Broker) map[string][]kmsg.MetadataResponseTopicPartition {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(b.Addr), kgo.RequestRetries(0))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	req := kmsg.NewPtrMetadataRequest() // Topics nil: all of them
	resp, err := cl.SeedBrokers()[0].Request(harness.Ctx(t, opTimeout), req)
	if err != nil {
		t.Fatalf("metadata from %s: %v", b.Addr, err)
	}
	out := map[string][]kmsg.MetadataResponseTopicPartition{}
	for _, mt := range resp.(*kmsg.MetadataResponse).Topics {
		if mt.Topic != nil && mt.ErrorCode == 0 {
			out[*mt.Topic] = mt.Partitions
		}
	}
	return out
}

// creation is one CreateTopics call of the loop and what it answered.
type creation struct {
	name       string
	partitions int32
	rf         int16
	err        error // nil: NONE
	at         time.Time
}

// createLoop creates topics ct-0, ct-1, ... one request at a time until
// stop is called, varying partition counts and replication factors, and
// records every answer.
type createLoop struct {
	mu   sync.Mutex
	done []creation
	ch   chan struct{} // signalled on each success
}

func (l *createLoop) run(ctx context.Context, cl *kgo.Client) {
	for i := 0; ctx.Err() == nil; i++ {
		cr := creation{name: fmt.Sprintf("ct-%d", i), partitions: int32(1 + i%3), rf: int16(2 + i%2)}
		req := kmsg.NewPtrCreateTopicsRequest()
		req.TimeoutMillis = 30000
		rt := kmsg.NewCreateTopicsRequestTopic()
		rt.Topic, rt.NumPartitions, rt.ReplicationFactor = cr.name, cr.partitions, cr.rf
		req.Topics = append(req.Topics, rt)
		rctx, cancel := context.WithTimeout(ctx, 45*time.Second)
		resp, err := req.RequestWith(rctx, cl)
		cancel()
		if err == nil {
			err = kerr.ErrorForCode(resp.Topics[0].ErrorCode)
		}
		if ctx.Err() != nil && err != nil {
			return // cut short by stop: its fate is unknown and unused
		}
		cr.err, cr.at = err, time.Now()
		l.mu.Lock()
		l.done = append(l.done, cr)
		l.mu.Unlock()
		if err == nil {
			select {
			case l.ch <- struct{}{}:
			default:
			}
		}
	}
}

// successes counts the creations answered NONE, and those after t0.
func (l *createLoop) successes(t0 time.Time) (all, after int, first time.Time) {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, cr := range l.done {
		if cr.err != nil {
			continue
		}
		all++
		if cr.at.After(t0) {
			if after == 0 {
				first = cr.at
			}
			after++
		}
	}
	return all, after, first
}

func (l *createLoop) waitSuccesses(t *testing.T, t0 time.Time, n int, timeout time.Duration, what string) {
	t.Helper()
	deadline := time.After(timeout)
	for {
		if _, after, _ := l.successes(t0); after >= n {
			return
		}
		select {
		case <-l.ch:
		case <-time.After(100 * time.Millisecond):
		case <-deadline:
			_, after, _ := l.successes(t0)
			t.Fatalf("%s: %d of %d topics created within %v", what, after, n, timeout)
		}
	}
}

// TestKillControllerDuringTopicCreationAndFailover kills -9 the active
// controller (DescribeCluster's ControllerID, which every node sets to
// the Raft leader) while a loop creates topics and while the controller
// also leads a partition an acks=all producer writes to. Another voter
// takes over (the time is measured), the partition fails over, no topic
// whose CreateTopics answered NONE is lost or incomplete, topics keep
// being created, and the killed node restarts and rejoins: it serves the
// same topics and its replica catches up.
func TestKillControllerDuringTopicCreationAndFailover(t *testing.T) {
	c := harness.StartCluster(t, 3, "auto.leader.rebalance.enable=false")
	ctrl := waitController(t, c, opTimeout)
	var others []int32
	for id := int32(1); id <= 3; id++ {
		if id != ctrl {
			others = append(others, id)
		}
	}
	const topic = "ctrl-failover"
	createAssignedTopic(t, c, topic, [][]int32{{ctrl, others[0], others[1]}}, minISR2())
	acks := harness.StartAckStream(t, c, harness.StreamConfig{Topic: topic, Records: streamRecords, Pace: time.Millisecond})

	loop := &createLoop{ch: make(chan struct{}, 1)}
	ctx, stopLoop := context.WithCancel(context.Background())
	loopDone := make(chan struct{})
	go func() { defer close(loopDone); loop.run(ctx, c.Client(kgo.RetryTimeout(45*time.Second))) }()
	defer func() { stopLoop(); <-loopDone }()
	start := time.Now()
	loop.waitSuccesses(t, start, 10, 2*time.Minute, "topics created before the kill")
	acks.WaitAcks(t, streamRecords/4, 2*time.Minute, "acks before the kill")

	victim := c.Node(ctrl)
	atKill := acks.Count()
	killed := time.Now()
	victim.Kill()
	next := waitController(t, c, opTimeout, ctrl)
	tookOver := time.Since(killed)
	leader := c.WaitPartition(topic, 0, opTimeout, "a new leader", func(st harness.PartitionState) bool {
		return st.Leader > 0 && st.Leader != ctrl
	})
	failedOver := time.Since(killed)
	acks.WaitAcks(t, atKill+1, 2*time.Minute, "the first acknowledgement after the kill")
	firstAck := time.Since(killed)
	loop.waitSuccesses(t, killed, 10, 2*time.Minute, "topics created after the kill")
	_, _, firstCreate := loop.successes(killed)
	t.Logf("controller %d killed: node %d controls after %v; %s-0 led by %d after %v; first acknowledgement %v, first topic created %v after the kill",
		ctrl, next, tookOver.Round(10*time.Millisecond), topic, leader.Leader, failedOver.Round(10*time.Millisecond),
		firstAck.Round(10*time.Millisecond), firstCreate.Sub(killed).Round(10*time.Millisecond))

	victim.Restart()
	rejoined := time.Now()
	loop.waitSuccesses(t, rejoined, 5, 2*time.Minute, "topics created after the restart")
	stopLoop()
	<-loopDone
	<-acks.Done()
	acks.Finish()

	c.WaitFullISR(topic, 0, 2*time.Minute)
	acks.RequireNoFailures(t, "the producer")
	if n := harness.CheckExactlyOnce(t, c.Bootstrap(), topic, 0, 0, acks.AckLog); n != streamRecords {
		t.Fatalf("%d records stored, want %d", n, streamRecords)
	}
	waitSameLogs(t, c, topic, 0)
	checkCreatedTopics(t, c, loop)
	if _, brokers, err := describeClusterOn(victim); err != nil || len(brokers) != 3 {
		t.Fatalf("the restarted node lists brokers %v (%v), want all 3", brokers, err)
	}
	nodeFigures(t, c)
}

// checkCreatedTopics checks, on every node, that each topic the loop was
// told it created exists with all its partitions, each with the replicas
// asked for and a leader, and that a topic whose creation failed is
// either absent or just as complete (never half created).
func checkCreatedTopics(t *testing.T, c *harness.Cluster, loop *createLoop) {
	t.Helper()
	loop.mu.Lock()
	done := slices.Clone(loop.done)
	loop.mu.Unlock()
	codes := map[string]int{}
	for _, cr := range done {
		var ke *kerr.Error
		switch {
		case cr.err == nil:
			codes["NONE"]++
		case errors.As(cr.err, &ke):
			codes[ke.Message]++
		default:
			codes["client: "+cr.err.Error()]++
		}
	}
	for _, b := range c.Nodes {
		var got map[string][]kmsg.MetadataResponseTopicPartition
		complete := func(cr creation) string {
			parts, ok := got[cr.name]
			if !ok {
				return "missing"
			}
			if int32(len(parts)) != cr.partitions {
				return fmt.Sprintf("%d partitions, want %d", len(parts), cr.partitions)
			}
			for _, p := range parts {
				if len(p.Replicas) != int(cr.rf) || p.Leader < 0 || len(p.ISR) == 0 {
					return fmt.Sprintf("partition %d: replicas %v, leader %d, ISR %v", p.Partition, p.Replicas, p.Leader, p.ISR)
				}
			}
			return ""
		}
		// A node's image may lag the controller's for a moment.
		harness.WaitFor(t, opTimeout, fmt.Sprintf("node %s to show every created topic complete", b.Addr), func() bool {
			got = topicsOn(t, b)
			for _, cr := range done {
				if cr.err == nil && complete(cr) != "" {
					return false
				}
			}
			return true
		})
		for _, cr := range done {
			if _, exists := got[cr.name]; exists && cr.err != nil {
				if why := complete(cr); why != "" {
					t.Fatalf("node %s: %s, whose creation failed (%v), exists half created: %s", b.Addr, cr.name, cr.err, why)
				}
			}
		}
	}
	t.Logf("%d CreateTopics answered: %v", len(done), codes)
}
