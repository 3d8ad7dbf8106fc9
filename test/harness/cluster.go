package harness

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
)

// Cluster is several weir processes forming one cluster: node i+1 is
// Nodes[i], every node a broker and a controller (a Raft voter).
type Cluster struct {
	t     testing.TB
	Nodes []*Broker
}

// clusterDefaults make failure detection fast enough for tests; a test
// may override any of them.
var clusterDefaults = []string{
	"broker.heartbeat.interval.ms=200",
	"broker.session.timeout.ms=2000",
	"replica.fetch.backoff.ms=100",
	"offsets.topic.num.partitions=3",
	"group.initial.rebalance.delay.ms=0",
}

// StartCluster starts n nodes on loopback ports with fresh data dirs and
// waits until every one serves. Extra overrides apply to every node.
func StartCluster(t testing.TB, n int, overrides ...string) *Cluster {
	t.Helper()
	return startCluster(t, n, nil, overrides)
}

// startCluster is StartCluster with, if perNode is set, extra overrides
// for node i+1 given its client listener's address (cluster_proxied.go).
func startCluster(t testing.TB, n int, perNode func(i int, clientAddr string) []string, overrides []string) *Cluster {
	t.Helper()
	c := newCluster(t, n, perNode, overrides)
	c.RestartAll()
	return c
}

// StartClusterDisk is StartCluster with node id's partition logs on disk,
// a directory the test made (a small tmpfs from MountTmpfs, to be filled
// up), and its Raft log in a temp dir of its own (metadata.log.dir), so
// that filling disk leaves the node's metadata alone. The node's Dir is
// disk.
func StartClusterDisk(t testing.TB, n int, id int32, disk string, overrides ...string) *Cluster {
	t.Helper()
	c := newCluster(t, n, func(i int, _ string) []string {
		if int32(i+1) != id {
			return nil
		}
		return []string{"log.dirs=" + disk, "metadata.log.dir=" + t.TempDir()}
	}, overrides)
	c.Node(id).Dir = disk
	c.RestartAll()
	return c
}

// newCluster describes the nodes of startCluster without starting them.
func newCluster(t testing.TB, n int, perNode func(i int, clientAddr string) []string, overrides []string) *Cluster {
	t.Helper()
	ports := freePorts(t, 2*n)
	var voters []string
	for i := 0; i < n; i++ {
		voters = append(voters, fmt.Sprintf("%d@127.0.0.1:%d", i+1, ports[2*i+1]))
	}
	c := &Cluster{t: t}
	for i := 0; i < n; i++ {
		b := &Broker{t: t, Dir: t.TempDir(), nodeID: int32(i + 1), voter: true, voterAddr: fmt.Sprintf("127.0.0.1:%d", ports[2*i+1])}
		b.Overrides = append([]string{
			"node.id=" + strconv.Itoa(i+1),
			"process.roles=broker,controller",
			"log.dirs=" + b.Dir,
			fmt.Sprintf("listeners=PLAINTEXT://127.0.0.1:%d,CONTROLLER://127.0.0.1:%d", ports[2*i], ports[2*i+1]),
			"controller.quorum.voters=" + strings.Join(voters, ","),
		}, clusterDefaults...)
		if perNode != nil {
			b.Overrides = append(b.Overrides, perNode(i, fmt.Sprintf("127.0.0.1:%d", ports[2*i]))...)
		}
		b.Overrides = append(b.Overrides, overrides...)
		c.Nodes = append(c.Nodes, b)
	}
	for _, b := range c.Nodes {
		t.Cleanup(b.Kill)
	}
	return c
}

// freePorts picks n distinct free loopback ports below the kernel's
// ephemeral range (ip_local_port_range starts at 32768), so that no
// outgoing connection can take one between the pick and the broker's
// bind. Each test process draws from its own stripe to keep parallel
// test packages apart.
func freePorts(t testing.TB, n int) []int {
	t.Helper()
	const lo, hi = 10000, 32000
	stripe := 100
	base := lo + (os.Getpid()%((hi-lo)/stripe))*stripe
	var out []int
	for tries := 0; len(out) < n; tries++ {
		if tries > 10000 {
			t.Fatalf("no %d free ports found", n)
		}
		var p int
		if tries < stripe {
			p = base + (tries+rand.IntN(stripe))%stripe
		} else {
			p = lo + rand.IntN(hi-lo)
		}
		if slices.Contains(out, p) || !portFree(p) {
			continue
		}
		out = append(out, p)
	}
	return out
}

var portsMu sync.Mutex
var portsTaken = map[int]bool{}

// portFree reports whether p can be bound now and was not handed out
// before in this process.
func portFree(p int) bool {
	portsMu.Lock()
	defer portsMu.Unlock()
	if portsTaken[p] {
		return false
	}
	ln, err := net.Listen("tcp", "127.0.0.1:"+strconv.Itoa(p))
	if err != nil {
		return false
	}
	ln.Close()
	portsTaken[p] = true
	return true
}

// RestartAll starts every node that is not running (again) on its ports
// and data dir: all launched first, since none serves before a quorum of
// them is up.
func (c *Cluster) RestartAll() {
	c.t.Helper()
	for _, b := range c.Nodes {
		b.launch()
	}
	for _, b := range c.Nodes {
		b.awaitStarted()
	}
}

// Node returns node id (1-based).
func (c *Cluster) Node(id int32) *Broker { return c.Nodes[id-1] }

// Bootstrap is every node's client address, comma-separated.
func (c *Cluster) Bootstrap() []string {
	var out []string
	for _, b := range c.Nodes {
		out = append(out, b.Addr)
	}
	return out
}

// Client returns a franz-go client seeded with every node, closed when the
// test ends; idempotent writes as in Broker.Client.
func (c *Cluster) Client(opts ...kgo.Opt) *kgo.Client {
	c.t.Helper()
	all := append([]kgo.Opt{kgo.SeedBrokers(c.Bootstrap()...), kgo.RetryTimeout(60 * time.Second)}, opts...)
	cl, err := kgo.NewClient(all...)
	if err != nil && strings.Contains(err.Error(), "idempotency requires acks=all") {
		cl, err = kgo.NewClient(append(all, kgo.DisableIdempotentWrite())...)
	}
	if err != nil {
		c.t.Fatal(err)
	}
	c.t.Cleanup(cl.Close)
	return cl
}

// PartitionState is one partition as the metadata says.
type PartitionState struct {
	Leader      int32
	LeaderEpoch int32
	Replicas    []int32
	ISR         []int32
	Err         error
}

// Partition asks the live nodes, in turn, for a partition's state; the
// first answer from a node that knows the topic wins.
func (c *Cluster) Partition(topic string, p int32) (PartitionState, error) {
	var lastErr error
	for _, b := range c.Nodes {
		if !b.Running() || b.paused() {
			continue
		}
		st, err := partitionFrom(b.Addr, topic, p)
		if err == nil {
			return st, nil
		}
		lastErr = err
	}
	return PartitionState{}, fmt.Errorf("no node answered for %s-%d: %w", topic, p, lastErr)
}

// Partition is one partition as this node's own Metadata answers it (a
// node's view may trail the controller's for a moment).
func (b *Broker) Partition(topic string, p int32) (PartitionState, error) {
	return partitionFrom(b.Addr, topic, p)
}

func partitionFrom(addr, topic string, p int32) (PartitionState, error) {
	parts, err := topicMetadataOf(addr, topic)
	if err != nil {
		return PartitionState{}, err
	}
	for _, mp := range parts {
		if mp.Partition == p {
			return PartitionState{Leader: mp.Leader, LeaderEpoch: mp.LeaderEpoch, Replicas: mp.Replicas, ISR: mp.ISR, Err: kerr.ErrorForCode(mp.ErrorCode)}, nil
		}
	}
	return PartitionState{}, fmt.Errorf("%s-%d not in the metadata of %s", topic, p, addr)
}

// WaitPartition waits until a partition's state satisfies cond as every
// running node sees it (a node's metadata may trail the controller's for
// a moment), and returns the first node's view.
func (c *Cluster) WaitPartition(topic string, p int32, timeout time.Duration, what string, cond func(PartitionState) bool) PartitionState {
	c.t.Helper()
	var st PartitionState
	WaitFor(c.t, timeout, fmt.Sprintf("%s-%d: %s", topic, p, what), func() bool {
		first := true
		for _, b := range c.Nodes {
			if !b.Running() || b.paused() {
				continue
			}
			got, err := partitionFrom(b.Addr, topic, p)
			if err != nil || !cond(got) {
				return false
			}
			if first {
				st, first = got, false
			}
		}
		return !first
	})
	return st
}

// WaitFullISR waits until the partition has a leader and all its replicas
// in sync.
func (c *Cluster) WaitFullISR(topic string, p int32, timeout time.Duration) PartitionState {
	c.t.Helper()
	return c.WaitPartition(topic, p, timeout, "a leader and a full ISR", func(st PartitionState) bool {
		return st.Leader >= 0 && len(st.Replicas) > 0 && len(st.ISR) == len(st.Replicas)
	})
}

// Leader is the partition's current leader node (waiting for one).
func (c *Cluster) Leader(topic string, p int32, timeout time.Duration) *Broker {
	c.t.Helper()
	st := c.WaitPartition(topic, p, timeout, "a leader", func(st PartitionState) bool { return st.Leader > 0 })
	return c.Node(st.Leader)
}

// Running reports whether the node's process is alive (possibly paused).
func (b *Broker) Running() bool {
	b.mu.Lock()
	cmd, done := b.cmd, b.done
	b.mu.Unlock()
	if cmd == nil {
		return false
	}
	select {
	case <-done:
		return false
	default:
		return true
	}
}

// Pause stops the process with SIGSTOP (it keeps its sockets: peers see a
// node that accepts nothing and answers nothing) and returns once every
// thread of it has stopped: SIGSTOP takes effect thread by thread, and a
// thread still running could serve one more fetch.
func (b *Broker) Pause() {
	b.t.Helper()
	b.sendOnly(syscall.SIGSTOP)
	b.mu.Lock()
	b.stopped = true
	b.mu.Unlock()
	pid := b.PID()
	WaitFor(b.t, time.Minute, fmt.Sprintf("every thread of pid %d to stop", pid), func() bool { return allThreadsStopped(pid) })
}

// allThreadsStopped reports whether every thread of process pid is in
// the stopped state ('T' in /proc/<pid>/task/<tid>/stat).
func allThreadsStopped(pid int) bool {
	dir := fmt.Sprintf("/proc/%d/task", pid)
	tasks, err := os.ReadDir(dir)
	if err != nil {
		return false
	}
	for _, task := range tasks {
		stat, err := os.ReadFile(filepath.Join(dir, task.Name(), "stat"))
		if err != nil {
			return false // a thread just exited: look again
		}
		// pid (comm) state ...: comm may hold spaces; the state follows
		// the last parenthesis.
		i := bytes.LastIndexByte(stat, ')')
		if i < 0 || i+2 >= len(stat) || stat[i+2] != 'T' {
			return false
		}
	}
	return true
}

// Resume continues a paused process (SIGCONT).
func (b *Broker) Resume() {
	b.sendOnly(syscall.SIGCONT)
	b.mu.Lock()
	b.stopped = false
	b.mu.Unlock()
}

// paused reports whether the node is stopped by Pause.
func (b *Broker) paused() bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.stopped
}

func (b *Broker) sendOnly(sig syscall.Signal) {
	b.t.Helper()
	b.mu.Lock()
	cmd := b.cmd
	b.mu.Unlock()
	if cmd == nil || cmd.Process == nil {
		b.t.Fatalf("signal %v: no process", sig)
	}
	if err := cmd.Process.Signal(sig); err != nil {
		b.t.Fatalf("signal %v to pid %d: %v", sig, cmd.Process.Pid, err)
	}
}

// AddBrokerOnly starts one more node, a broker only (process.roles=broker):
// it votes in no election and follows the metadata log as a Raft
// non-voter. Its id is the next after the nodes so far.
func (c *Cluster) AddBrokerOnly(overrides ...string) *Broker {
	c.t.Helper()
	id := len(c.Nodes) + 1
	port := freePorts(c.t, 1)[0]
	var voters []string
	for _, b := range c.Nodes {
		if b.voter {
			voters = append(voters, fmt.Sprintf("%d@%s", b.nodeID, b.voterAddr))
		}
	}
	b := &Broker{t: c.t, Dir: c.t.TempDir(), nodeID: int32(id)}
	b.Overrides = append([]string{
		"node.id=" + strconv.Itoa(id),
		"process.roles=broker",
		"log.dirs=" + b.Dir,
		fmt.Sprintf("listeners=PLAINTEXT://127.0.0.1:%d", port),
		"controller.quorum.voters=" + strings.Join(voters, ","),
	}, clusterDefaults...)
	b.Overrides = append(b.Overrides, overrides...)
	b.brokerOnly = true
	c.Nodes = append(c.Nodes, b)
	b.launch()
	c.t.Cleanup(b.Kill)
	b.awaitStarted()
	return b
}
