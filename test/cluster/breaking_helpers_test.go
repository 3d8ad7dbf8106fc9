package cluster

// Helpers of the tests that break a cluster on purpose (pause_test.go,
// quorum_test.go, shutdown_test.go): a producer stream that runs until
// told to stop and times its acknowledgements, the active controller as
// the nodes agree on it, topics with a chosen replica assignment, and
// checks of the brokers' logs.

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/weir-project/weir/test/harness"
)

// ackStream is an idempotent acks=all franz-go producer writing "0", "1",
// ... to partition 0 of a topic, one record every pace, until stopped. It
// records every answer in an ackLog and the time of every
// acknowledgement, so that a test can measure how long the producer
// stalled. Unlike franzProducer it does not end after a fixed count, so a
// slow machine cannot make it finish before the fault is over.
type ackStream struct {
	t    *testing.T
	cl   *kgo.Client
	acks *ackLog
	stop chan struct{}
	done chan struct{}
	sent int // records handed to the client; read after done

	mu    sync.Mutex
	ackAt []time.Time // in acknowledgement order
}

// startAckStream starts the stream; extra client options come last.
func startAckStream(t *testing.T, c *harness.Cluster, topic string, pace time.Duration, opts ...kgo.Opt) *ackStream {
	t.Helper()
	all := append([]kgo.Opt{
		kgo.DefaultProduceTopic(topic),
		kgo.RecordPartitioner(kgo.ManualPartitioner()),
		kgo.RequiredAcks(kgo.AllISRAcks()),
		kgo.ProducerLinger(2 * time.Millisecond),
		kgo.RecordDeliveryTimeout(3 * time.Minute),
		kgo.RetryTimeout(3 * time.Minute),
	}, opts...)
	// The client's own log, kept if the test fails: a stalled stream is
	// told apart from a stalled broker by it.
	clientLog := &lockedBuffer{}
	all = append(all, kgo.WithLogger(kgo.BasicLogger(clientLog, kgo.LogLevelInfo, nil)))
	s := &ackStream{t: t, cl: c.Client(all...), acks: newAckLog(), stop: make(chan struct{}), done: make(chan struct{})}
	t.Cleanup(func() {
		if t.Failed() {
			keepLog(t, "producer", clientLog.String())
		}
	})
	ctx := harness.Ctx(t, 10*time.Minute)
	go func() {
		defer close(s.done)
		tick := time.NewTicker(pace)
		defer tick.Stop()
		for i := 0; ; i++ {
			select {
			case <-s.stop:
				s.sent = i
				return
			case <-tick.C:
			}
			s.cl.Produce(ctx, &kgo.Record{Value: []byte(strconv.Itoa(i))}, func(r *kgo.Record, err error) {
				if err != nil {
					s.acks.fail(fmt.Sprintf("%s: %v", r.Value, err))
					return
				}
				// franz-go calls back in order within a partition.
				s.mu.Lock()
				s.ackAt = append(s.ackAt, time.Now())
				s.mu.Unlock()
				s.acks.ack(string(r.Value), r.Offset)
			})
		}
	}()
	t.Cleanup(func() {
		select {
		case <-s.stop:
		default:
			close(s.stop)
		}
		<-s.done
	})
	return s
}

// waitAcks waits until n records are acknowledged in all, failing the
// test at once if one fails instead.
func (s *ackStream) waitAcks(n int, timeout time.Duration, what string) {
	s.t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		s.acks.mu.Lock()
		got, failed := len(s.acks.offset), slices.Clone(s.acks.failed)
		s.acks.mu.Unlock()
		switch {
		case len(failed) > 0:
			s.t.Fatalf("%s: %d records failed (%d acknowledged), first: %s", what, len(failed), got, failed[0])
		case got >= n:
			return
		case time.Now().After(deadline):
			s.t.Fatalf("%s: %d of %d records acknowledged within %v", what, got, n, timeout)
		}
		select {
		case <-s.acks.ch:
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// waitMore waits for n acknowledgements more than there are now.
func (s *ackStream) waitMore(n int, timeout time.Duration, what string) {
	s.t.Helper()
	s.waitAcks(s.acks.count()+n, timeout, what)
}

// finish stops producing, waits for every answer, fails the test if any
// record failed, and returns how many records were sent.
func (s *ackStream) finish() int {
	s.t.Helper()
	close(s.stop)
	<-s.done
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	if err := s.cl.Flush(ctx); err != nil {
		s.t.Fatalf("flush the stream: %v (%d of %d acknowledged)", err, s.acks.count(), s.sent)
	}
	s.acks.mu.Lock()
	defer s.acks.mu.Unlock()
	if n := len(s.acks.failed); n > 0 {
		s.t.Fatalf("%d of %d records failed, first: %s", n, s.sent, s.acks.failed[0])
	}
	if len(s.acks.offset) != s.sent {
		s.t.Fatalf("%d of %d records acknowledged", len(s.acks.offset), s.sent)
	}
	return s.sent
}

// longestGap is the longest time between consecutive acknowledgements
// that arrived in [from, to], counting from `from` to the first of them
// too, and when that gap ended.
func (s *ackStream) longestGap(from, to time.Time) (gap time.Duration, endedAt time.Time) {
	s.mu.Lock()
	defer s.mu.Unlock()
	prev := from
	for _, at := range s.ackAt {
		if at.Before(from) {
			continue
		}
		if at.After(to) {
			break
		}
		if d := at.Sub(prev); d > gap {
			gap, endedAt = d, at
		}
		prev = at
	}
	return gap, endedAt
}

// acksBetween counts the acknowledgements that arrived in [from, to].
func (s *ackStream) acksBetween(from, to time.Time) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := 0
	for _, at := range s.ackAt {
		if !at.Before(from) && !at.After(to) {
			n++
		}
	}
	return n
}

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
// assignment[p] (the first is the preferred leader) and waits until every
// partition is led by its preferred replica with a full ISR.
func createAssignedTopic(t *testing.T, c *harness.Cluster, topic string, assignment [][]int32, configs map[string]*string) {
	t.Helper()
	req := kmsg.NewPtrCreateTopicsRequest()
	req.TimeoutMillis = int32(opTimeout / time.Millisecond)
	rt := kmsg.NewCreateTopicsRequestTopic()
	rt.Topic, rt.NumPartitions, rt.ReplicationFactor = topic, -1, -1
	for p, replicas := range assignment {
		a := kmsg.NewCreateTopicsRequestTopicReplicaAssignment()
		a.Partition, a.Replicas = int32(p), replicas
		rt.ReplicaAssignment = append(rt.ReplicaAssignment, a)
	}
	for k, v := range configs {
		cfg := kmsg.NewCreateTopicsRequestTopicConfig()
		cfg.Name, cfg.Value = k, v
		rt.Configs = append(rt.Configs, cfg)
	}
	req.Topics = append(req.Topics, rt)
	resp, err := req.RequestWith(harness.Ctx(t, opTimeout), c.Client())
	if err == nil && len(resp.Topics) != 1 {
		err = fmt.Errorf("%d topics in the answer", len(resp.Topics))
	}
	if err == nil {
		err = kerr.ErrorForCode(resp.Topics[0].ErrorCode)
	}
	if err != nil {
		t.Fatalf("create topic %s with assignment %v: %v", topic, assignment, err)
	}
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
			for _, bad := range []string{"WARNING: DATA RACE", "panic:", "fatal error:"} {
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

// lockedBuffer is a bytes.Buffer safe for concurrent writers.
type lockedBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *lockedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
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
