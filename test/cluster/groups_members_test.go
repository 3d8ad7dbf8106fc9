package cluster

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/weir-project/weir/test/harness"
)

// The group members and the commit monitor of groups_test.go: franz-go
// members in this process, a confluent-kafka member in its own, all
// reporting to one groupLog.

// groupEvent is one thing a group test saw, in the order it was seen.
type groupEvent struct {
	kind   string // "consume", "commit" (acknowledged), "assign", "sample" (OffsetFetch)
	member string
	p      int32
	offset int64 // consume: the record's; commit, sample: the committed offset
	at     time.Time
}

// groupLog collects the events of a group test under one lock, so that
// their order is the order they happened in.
type groupLog struct {
	mu     sync.Mutex
	events []groupEvent
	errs   map[string]int // error kinds seen by members and the monitor, counted
}

func newGroupLog() *groupLog { return &groupLog{errs: map[string]int{}} }

func (l *groupLog) add(e groupEvent) {
	l.mu.Lock()
	defer l.mu.Unlock()
	e.at = time.Now()
	l.events = append(l.events, e)
}

func (l *groupLog) fail(what string, err error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.errs[fmt.Sprintf("%s: %v", what, err)]++
}

func (l *groupLog) snapshot() []groupEvent {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]groupEvent(nil), l.events...)
}

// since returns, per partition, the last event of kind at or after t0.
func (l *groupLog) since(kind string, t0 time.Time) map[int32]groupEvent {
	out := map[int32]groupEvent{}
	for _, e := range l.snapshot() {
		if e.kind == kind && !e.at.Before(t0) {
			out[e.p] = e
		}
	}
	return out
}

// startFranzMember runs one franz-go group member: an eager (range)
// balancer, so that every rebalance hands every partition out anew from
// its committed offset; records consumed, then their offsets committed
// synchronously before the next poll, with rebalances held off between.
func startFranzMember(t *testing.T, c *harness.Cluster, name, group, topic string, log *groupLog) {
	t.Helper()
	cl := c.Client(
		kgo.ClientID(name),
		kgo.ConsumerGroup(group),
		kgo.ConsumeTopics(topic),
		kgo.Balancers(kgo.RangeBalancer()),
		kgo.DisableAutoCommit(),
		kgo.BlockRebalanceOnPoll(),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
		kgo.FetchMaxWait(200*time.Millisecond),
		kgo.SessionTimeout(20*time.Second),
		kgo.HeartbeatInterval(500*time.Millisecond),
		kgo.OnPartitionsAssigned(func(_ context.Context, _ *kgo.Client, m map[string][]int32) {
			for _, p := range m[topic] {
				log.add(groupEvent{kind: "assign", member: name, p: p})
			}
		}),
	)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		for ctx.Err() == nil {
			fs := cl.PollFetches(ctx)
			if ctx.Err() != nil {
				cl.AllowRebalance()
				return
			}
			fs.EachError(func(_ string, p int32, err error) { log.fail(name+" fetch", err) })
			next := map[int32]kgo.EpochOffset{}
			fs.EachRecord(func(r *kgo.Record) {
				log.add(groupEvent{kind: "consume", member: name, p: r.Partition, offset: r.Offset})
				next[r.Partition] = kgo.EpochOffset{Epoch: r.LeaderEpoch, Offset: r.Offset + 1}
			})
			if len(next) > 0 {
				cctx, ccancel := context.WithTimeout(context.Background(), time.Minute)
				cl.CommitOffsetsSync(cctx, map[string]map[int32]kgo.EpochOffset{topic: next},
					func(_ *kgo.Client, req *kmsg.OffsetCommitRequest, resp *kmsg.OffsetCommitResponse, err error) {
						if err != nil {
							log.fail(name+" commit", err)
							return
						}
						for _, rt := range resp.Topics {
							for _, rp := range rt.Partitions {
								if err := kerr.ErrorForCode(rp.ErrorCode); err != nil {
									log.fail(name+" commit", err)
									continue
								}
								log.add(groupEvent{kind: "commit", member: name, p: rp.Partition, offset: next[rp.Partition].Offset})
							}
						}
					})
				ccancel()
			}
			cl.AllowRebalance()
		}
	}()
	t.Cleanup(func() { cancel(); <-done })
}

// pyMember is a confluent-kafka member (testdata/group_member.py) in its
// own process, reporting its events on stdout with its own timestamps.
type pyMember struct {
	cmd    *exec.Cmd
	done   chan struct{}
	stderr strings.Builder
}

// startPyMember starts a confluent-kafka member, or returns nil if the
// Python client is not installed.
func startPyMember(t *testing.T, c *harness.Cluster, name, group, topic string, log *groupLog) *pyMember {
	t.Helper()
	if err := exec.Command(python, "-c", "import confluent_kafka").Run(); err != nil {
		t.Logf("no confluent-kafka member: %s cannot import confluent_kafka (%v)", python, err)
		return nil
	}
	spec, _ := json.Marshal(map[string]any{"bootstrap": strings.Join(c.Bootstrap(), ","), "topic": topic,
		"group": group, "name": name, "session_ms": 6000})
	m := &pyMember{cmd: exec.Command(python, "testdata/group_member.py", string(spec)), done: make(chan struct{})}
	out, err := m.cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	m.cmd.Stderr = &m.stderr
	if err := m.cmd.Start(); err != nil {
		t.Fatalf("start %s: %v", name, err)
	}
	go func() {
		defer close(m.done)
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			var ev struct {
				K string  `json:"k"`
				P int32   `json:"p"`
				O int64   `json:"o"`
				E string  `json:"e"`
				T float64 `json:"t"`
			}
			if err := json.Unmarshal(sc.Bytes(), &ev); err != nil {
				log.fail(name+" output", fmt.Errorf("%q: %w", sc.Text(), err))
				continue
			}
			if ev.K == "error" {
				log.fail(name, errors.New(ev.E))
				continue
			}
			at := time.UnixMicro(int64(ev.T * 1e6))
			log.mu.Lock()
			log.events = append(log.events, groupEvent{kind: ev.K, member: name, p: ev.P, offset: ev.O, at: at})
			log.mu.Unlock()
		}
		m.cmd.Wait()
	}()
	t.Cleanup(m.kill)
	return m
}

// kill sends SIGKILL (by PID) and waits until its output is all read.
func (m *pyMember) kill() {
	m.cmd.Process.Signal(syscall.SIGKILL)
	<-m.done
}

// monitorCommits samples the group's committed offsets every 50 ms until
// the returned stop is called: FindCoordinator on a running node, then
// OffsetFetch straight to the coordinator it names, so that the samples
// follow a failover at once instead of waiting on a client's cache.
func monitorCommits(t *testing.T, c *harness.Cluster, group, topic string, partitions int32, log *groupLog) (stop func()) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		for i := 0; ctx.Err() == nil; i++ {
			start := time.Now()
			offs, err := fetchCommitted(ctx, c, c.Nodes[i%len(c.Nodes)], group, topic, partitions)
			if err != nil {
				if ctx.Err() == nil {
					log.fail("offset fetch", err)
				}
			} else {
				log.mu.Lock()
				for p, o := range offs {
					// Stamped with the request's start: it must reflect
					// every commit acknowledged before then.
					log.events = append(log.events, groupEvent{kind: "sample", p: p, offset: o, at: start})
				}
				log.mu.Unlock()
			}
			select {
			case <-ctx.Done():
			case <-time.After(50 * time.Millisecond):
			}
		}
	}()
	stop = func() { cancel(); <-done }
	t.Cleanup(stop)
	return stop
}

// fetchCommitted asks via for group's coordinator, then the coordinator
// for the offsets committed on partitions 0..partitions-1 of topic (those
// without one are left out).
func fetchCommitted(ctx context.Context, c *harness.Cluster, via *harness.Broker, group, topic string, partitions int32) (map[int32]int64, error) {
	if !via.Running() {
		return nil, fmt.Errorf("node %s is down", via.Addr)
	}
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	fc := kmsg.NewPtrFindCoordinatorRequest()
	fc.CoordinatorKey, fc.CoordinatorKeys = group, []string{group} // v0-3, v4+
	resp, err := requestOn(ctx, via, fc)
	if err != nil {
		return nil, err
	}
	r := resp.(*kmsg.FindCoordinatorResponse)
	id, code := r.NodeID, r.ErrorCode
	if len(r.Coordinators) == 1 {
		id, code = r.Coordinators[0].NodeID, r.Coordinators[0].ErrorCode
	}
	if err := kerr.ErrorForCode(code); err != nil {
		return nil, fmt.Errorf("find coordinator: %w", err)
	}
	if id < 1 || int(id) > len(c.Nodes) {
		return nil, fmt.Errorf("find coordinator: node %d", id)
	}
	return fetchCommittedOn(ctx, c.Node(id), id, group, topic, partitions)
}

// fetchCommittedOn asks node id (b) for the offsets group committed on
// partitions 0..partitions-1 of topic (those without one are left out).
// An error code in the answer is the error (kerr's, wrapped).
func fetchCommittedOn(ctx context.Context, b *harness.Broker, id int32, group, topic string, partitions int32) (map[int32]int64, error) {
	of := kmsg.NewPtrOffsetFetchRequest()
	of.Group = group // v0-7; v8+ name groups in Groups
	rt := kmsg.NewOffsetFetchRequestTopic()
	rt.Topic = topic
	for p := range partitions {
		rt.Partitions = append(rt.Partitions, p)
	}
	of.Topics = append(of.Topics, rt)
	rg := kmsg.NewOffsetFetchRequestGroup()
	rg.Group = group
	rgt := kmsg.NewOffsetFetchRequestGroupTopic()
	rgt.Topic, rgt.Partitions = topic, rt.Partitions
	rg.Topics = append(rg.Topics, rgt)
	of.Groups = append(of.Groups, rg)
	resp, err := requestOn(ctx, b, of)
	if err != nil {
		return nil, fmt.Errorf("offset fetch from node %d: %w", id, err)
	}
	fr := resp.(*kmsg.OffsetFetchResponse)
	if len(fr.Groups) == 1 { // v8+
		g := fr.Groups[0]
		fr.ErrorCode, fr.Topics = g.ErrorCode, nil
		for _, gt := range g.Topics {
			ft := kmsg.NewOffsetFetchResponseTopic()
			ft.Topic = gt.Topic
			for _, gp := range gt.Partitions {
				fp := kmsg.NewOffsetFetchResponseTopicPartition()
				fp.Partition, fp.Offset, fp.ErrorCode = gp.Partition, gp.Offset, gp.ErrorCode
				ft.Partitions = append(ft.Partitions, fp)
			}
			fr.Topics = append(fr.Topics, ft)
		}
	}
	if err := kerr.ErrorForCode(fr.ErrorCode); err != nil {
		return nil, fmt.Errorf("offset fetch from node %d: %w", id, err)
	}
	out := map[int32]int64{}
	for _, t := range fr.Topics {
		for _, p := range t.Partitions {
			if err := kerr.ErrorForCode(p.ErrorCode); err != nil {
				return nil, fmt.Errorf("offset fetch from node %d: partition %d: %w", id, p.Partition, err)
			}
			if p.Offset >= 0 {
				out[p.Partition] = p.Offset
			}
		}
	}
	return out, nil
}

// requestOn sends one request straight to node b, with no retry.
func requestOn(ctx context.Context, b *harness.Broker, req kmsg.Request) (kmsg.Response, error) {
	cl, err := kgo.NewClient(kgo.SeedBrokers(b.Addr), kgo.RequestRetries(0), kgo.DialTimeout(2*time.Second))
	if err != nil {
		return nil, err
	}
	defer cl.Close()
	return cl.SeedBrokers()[0].Request(ctx, req)
}

// groupCoordinator asks the cluster which node coordinates group,
// waiting for an answer other than except.
func groupCoordinator(t *testing.T, c *harness.Cluster, group string, except int32) int32 {
	t.Helper()
	var id int32 = -1
	harness.WaitFor(t, opTimeout, fmt.Sprintf("a coordinator for %s other than %d", group, except), func() bool {
		req := kmsg.NewPtrFindCoordinatorRequest()
		req.CoordinatorKey = group
		resp, err := req.RequestWith(harness.Ctx(t, 10*time.Second), c.Client())
		if err != nil || resp.ErrorCode != 0 {
			return false
		}
		id = resp.NodeID
		return id > 0 && id != except
	})
	return id
}
