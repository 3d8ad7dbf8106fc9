package replication

import (
	"bytes"
	"context"
	"crypto/md5"
	"fmt"
	"log/slog"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/weir-project/weir/internal/replica"
	"github.com/weir-project/weir/internal/storage"
	"github.com/weir-project/weir/internal/storage/recordbatch"
)

// topicID is a test topic's id, derived from its name.
func topicID(topic string) [16]byte {
	return md5.Sum([]byte(topic))
}

// waitFor polls cond until it holds, failing the test after a generous
// timeout: a condition that should hold in milliseconds gets seconds.
func waitFor(t testing.TB, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(time.Millisecond)
	}
}

// logRecorder is a slog handler keeping messages, for tests that check
// what was logged (one line per state change), each line led by its
// level.
type logRecorder struct {
	mu    *sync.Mutex
	lines *[]string
	attrs []slog.Attr
}

func newLogRecorder() *logRecorder {
	return &logRecorder{mu: &sync.Mutex{}, lines: new([]string)}
}

func (h *logRecorder) Enabled(context.Context, slog.Level) bool { return true }
func (h *logRecorder) Handle(_ context.Context, r slog.Record) error {
	var b strings.Builder
	b.WriteString(r.Level.String() + " ")
	b.WriteString(r.Message)
	for _, a := range h.attrs {
		fmt.Fprintf(&b, " %s=%v", a.Key, a.Value)
	}
	r.Attrs(func(a slog.Attr) bool {
		fmt.Fprintf(&b, " %s=%v", a.Key, a.Value)
		return true
	})
	h.mu.Lock()
	*h.lines = append(*h.lines, b.String())
	h.mu.Unlock()
	return nil
}
func (h *logRecorder) WithAttrs(as []slog.Attr) slog.Handler {
	return &logRecorder{mu: h.mu, lines: h.lines, attrs: append(slices.Clone(h.attrs), as...)}
}
func (h *logRecorder) WithGroup(string) slog.Handler { return h }

// count returns how many lines contain every one of subs.
func (h *logRecorder) count(subs ...string) int {
	h.mu.Lock()
	defer h.mu.Unlock()
	n := 0
	for _, l := range *h.lines {
		all := true
		for _, s := range subs {
			all = all && strings.Contains(l, s)
		}
		if all {
			n++
		}
	}
	return n
}

// checkDistinctKeys fails the test if a line names an attribute twice
// (the partition's own leader_epoch and the leader's answer, once): a
// reader, or a tool, cannot tell which value is which.
func (h *logRecorder) checkDistinctKeys(t *testing.T) {
	t.Helper()
	h.mu.Lock()
	defer h.mu.Unlock()
	for _, l := range *h.lines {
		seen := map[string]bool{}
		for _, f := range strings.Fields(l) {
			k, _, ok := strings.Cut(f, "=")
			if !ok {
				continue
			}
			if seen[k] {
				t.Fatalf("log line names %s twice: %s", k, l)
			}
			seen[k] = true
		}
	}
}

// node is one broker of a test cluster: a log per partition, its replica
// and the broker's replication manager.
type node struct {
	id    int32
	dirs  map[storage.TopicPartition]string
	logs  map[storage.TopicPartition]*storage.Log
	parts map[storage.TopicPartition]*replica.Partition
	m     *Manager
	alive bool
}

// cluster is a few brokers on an InmemNetwork, all replicas of the same
// partitions, with the test acting as the controller: it elects leaders
// and applies the metadata to every live replica and manager.
type cluster struct {
	t        testing.TB
	net      *InmemNetwork
	cfg      Config
	logCfg   storage.Config
	logs     *logRecorder
	nodes    map[int32]*node
	ids      []int32
	isr      []int32 // nil: every replica
	tps      []storage.TopicPartition
	leader   int32
	epoch    int32
	produced int // distinct record values
}

// newCluster starts brokers ids, replicas of partitions tps, with no
// leader yet.
func newCluster(t testing.TB, ids []int32, tps []storage.TopicPartition, cfg Config) *cluster {
	t.Helper()
	return newClusterWithLogs(t, ids, tps, cfg, storage.DefaultConfig())
}

// newClusterWithLogs is newCluster with the given log settings.
func newClusterWithLogs(t testing.TB, ids []int32, tps []storage.TopicPartition, cfg Config, logCfg storage.Config) *cluster {
	t.Helper()
	c := &cluster{
		t: t, net: NewInmemNetwork(), cfg: cfg, logs: newLogRecorder(),
		logCfg: logCfg,
		nodes:  map[int32]*node{}, ids: ids, tps: tps, leader: -1, epoch: -1,
	}
	if c.cfg.Backoff == 0 {
		c.cfg.Backoff = 5 * time.Millisecond
	}
	if c.cfg.MaxWait == 0 {
		c.cfg.MaxWait = 50 * time.Millisecond
	}
	root := t.TempDir()
	for _, id := range ids {
		n := &node{id: id, dirs: map[storage.TopicPartition]string{}}
		for _, tp := range tps {
			n.dirs[tp] = filepath.Join(root, fmt.Sprintf("broker-%d", id), fmt.Sprintf("%s-%d", tp.Topic, tp.Partition))
		}
		c.nodes[id] = n
		c.start(id, -1)
	}
	t.Cleanup(func() {
		for _, id := range c.ids {
			if c.nodes[id].alive {
				c.crash(id)
			}
		}
		if t.Failed() {
			c.logs.mu.Lock()
			defer c.logs.mu.Unlock()
			for _, l := range *c.logs.lines {
				t.Log(l)
			}
		}
	})
	return c
}

// tp0 is the first partition, for single-partition tests.
func (c *cluster) tp0() storage.TopicPartition { return c.tps[0] }

// start opens broker id's logs (hw >= 0 overrides the high watermark the
// replicas start with, as a stale replication-offset-checkpoint would) and
// its manager, and applies the current metadata.
func (c *cluster) start(id int32, hw int64) {
	c.t.Helper()
	n := c.nodes[id]
	n.logs = map[storage.TopicPartition]*storage.Log{}
	n.parts = map[storage.TopicPartition]*replica.Partition{}
	quiet := slog.New(slog.DiscardHandler)
	for _, tp := range c.tps {
		log, err := storage.OpenLog(n.dirs[tp], c.logCfg, 0, 0, false, quiet)
		if err != nil {
			c.t.Fatalf("open log of broker %d: %v", id, err)
		}
		if hw >= 0 {
			log.SetHighWatermark(min(hw, log.LogEndOffset()))
		}
		p, err := replica.Open(tp, log, id, quiet)
		if err != nil {
			c.t.Fatal(err)
		}
		n.logs[tp], n.parts[tp] = log, p
		c.net.Host(id, p, topicID(tp.Topic))
	}
	cfg := c.cfg
	cfg.LocalID = id
	n.m = New(cfg, c.net, slog.New(c.logs).With("broker", id))
	n.alive = true
	// The metadata is applied before the broker is reachable, as a
	// broker catches up with the metadata log before it serves.
	if c.leader >= 0 {
		c.update(n)
	}
	c.net.SetDown(id, false)
	if c.leader >= 0 {
		c.follow(n)
	}
}

// crash stops broker id: its manager first (so nothing more is written),
// then its logs, as a process kill leaves them (no clean shutdown marker
// matters here: the logs were written through the page cache).
func (c *cluster) crash(id int32) {
	c.t.Helper()
	n := c.nodes[id]
	n.m.Close()
	c.net.SetDown(id, true)
	for _, tp := range c.tps {
		c.net.Unhost(id, tp)
		if err := n.logs[tp].Close(); err != nil {
			c.t.Fatalf("close log of broker %d: %v", id, err)
		}
	}
	n.alive = false
}

// elect makes id the leader of every partition in a new leader epoch.
func (c *cluster) elect(id int32) {
	c.t.Helper()
	c.leader, c.epoch = id, c.epoch+1
	for _, nid := range c.ids {
		if n := c.nodes[nid]; n.alive {
			c.apply(n)
		}
	}
}

// apply gives node n the current metadata, and its manager follows or
// stops following accordingly.
func (c *cluster) apply(n *node) {
	c.t.Helper()
	c.update(n)
	c.follow(n)
}

// update applies the current metadata to n's replicas: every id is a
// replica, and in the ISR unless c.isr says otherwise.
func (c *cluster) update(n *node) {
	c.t.Helper()
	for _, tp := range c.tps {
		p := n.parts[tp]
		isr := c.isr
		if isr == nil {
			isr = c.ids
		}
		s := replica.State{LeaderID: c.leader, LeaderEpoch: c.epoch, Replicas: c.ids, ISR: isr, MinISR: 1, TopicID: topicID(tp.Topic)}
		if _, err := p.Update(s); err != nil {
			c.t.Fatalf("broker %d: update: %v", n.id, err)
		}
	}
}

// follow makes n's manager follow the current leader (or not, on it).
func (c *cluster) follow(n *node) {
	for _, tp := range c.tps {
		p := n.parts[tp]
		if c.leader == n.id {
			n.m.Unfollow(tp)
		} else {
			n.m.Follow(p, topicID(tp.Topic), c.leader, c.epoch)
		}
	}
}

// batch builds one batch of n records with values unique in the test.
func (c *cluster) batch(n int) []byte {
	c.t.Helper()
	recs := make([]recordbatch.Record, n)
	for i := range recs {
		c.produced++
		recs[i] = recordbatch.Record{Value: []byte(fmt.Sprintf("value-%d", c.produced))}
	}
	b, err := recordbatch.Build(recordbatch.BuildOptions{ProducerID: -1, ProducerEpoch: -1, BaseSequence: -1, BaseTimestamp: time.Now().UnixMilli()}, recs)
	if err != nil {
		c.t.Fatal(err)
	}
	return b
}

// produce appends batches of the given sizes on the leader of tp.
func (c *cluster) produce(tp storage.TopicPartition, sizes ...int) {
	c.t.Helper()
	for _, n := range sizes {
		if _, err := c.nodes[c.leader].parts[tp].AppendAsLeader(c.batch(n), 1); err != nil {
			c.t.Fatalf("produce to broker %d: %v", c.leader, err)
		}
	}
}

// leaderPart is the leader's replica of tp.
func (c *cluster) leaderPart(tp storage.TopicPartition) *replica.Partition {
	return c.nodes[c.leader].parts[tp]
}

// waitInSync waits until every live follower has truncated for the
// current leader epoch and its log ends where the leader's does, for every
// partition. (Equal log ends alone say nothing: a follower that has not
// truncated yet may end at the same offset with different records.)
func (c *cluster) waitInSync() {
	c.t.Helper()
	for _, tp := range c.tps {
		waitFor(c.t, fmt.Sprintf("followers of %s-%d in sync with leader %d", tp.Topic, tp.Partition, c.leader), func() bool {
			leo := c.leaderPart(tp).Offsets().LogEnd
			for _, id := range c.ids {
				n := c.nodes[id]
				if !n.alive || id == c.leader {
					continue
				}
				st, ok := n.m.Status(tp)
				if !ok || st.State != Fetching || st.LeaderEpoch != c.epoch || n.parts[tp].Offsets().LogEnd != leo {
					return false
				}
			}
			return true
		})
	}
}

// batchID identifies a stored batch: where it is and what its bytes are.
type batchID struct {
	Base, Last int64
	Epoch      int32
	CRC        uint32
}

func (b batchID) String() string {
	return fmt.Sprintf("[%d-%d e%d %08x]", b.Base, b.Last, b.Epoch, b.CRC)
}

// readLog returns the log's bytes and batches from its start to its end.
func readLog(t testing.TB, log *storage.Log) ([]byte, []batchID) {
	t.Helper()
	return readLogTo(t, log, log.LogEndOffset())
}

// readLogTo reads the batches starting below end.
func readLogTo(t testing.TB, log *storage.Log, end int64) ([]byte, []batchID) {
	t.Helper()
	var all []byte
	var ids []batchID
	for off := log.LogStartOffset(); off < end; {
		r, err := log.Read(off, 1<<20, end)
		if err != nil {
			t.Fatalf("read %s at %d: %v", log.Dir(), off, err)
		}
		data, err := r.Bytes()
		if err != nil {
			t.Fatal(err)
		}
		if len(data) == 0 {
			break
		}
		err = recordbatch.Split(data, func(b []byte, h recordbatch.Header) error {
			if err := recordbatch.CheckCRC(b); err != nil {
				return err
			}
			ids = append(ids, batchID{h.BaseOffset, h.LastOffset(), h.PartitionLeaderEpoch, h.CRC})
			off = h.LastOffset() + 1
			return nil
		})
		if err != nil {
			t.Fatalf("read %s: %v", log.Dir(), err)
		}
		all = append(all, data...)
	}
	return all, ids
}

// checkIdentical fails unless every live replica of every partition holds
// byte-identical logs, and returns the batches of each partition.
func (c *cluster) checkIdentical() map[storage.TopicPartition][]batchID {
	c.t.Helper()
	out := map[storage.TopicPartition][]batchID{}
	for _, tp := range c.tps {
		want, wantIDs := readLog(c.t, c.nodes[c.leader].logs[tp])
		for _, id := range c.ids {
			n := c.nodes[id]
			if !n.alive || id == c.leader {
				continue
			}
			got, gotIDs := readLog(c.t, n.logs[tp])
			if !bytes.Equal(got, want) {
				c.t.Fatalf("%s-%d: broker %d holds %v, leader %d holds %v", tp.Topic, tp.Partition, id, gotIDs, c.leader, wantIDs)
			}
		}
		out[tp] = wantIDs
	}
	return out
}
