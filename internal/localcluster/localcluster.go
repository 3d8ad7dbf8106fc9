// Package localcluster runs a cluster of weir processes on this machine:
// one data directory and two loopback ports (client and controller) per
// node, every node a broker and a controller. It is the machinery behind
// `weir cluster up` and `weir verify`: start, stop cleanly, and the faults
// a checker needs (kill -9, SIGSTOP/SIGCONT, restart).
package localcluster

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

// Config describes a local cluster.
type Config struct {
	Nodes int
	// Dir holds node-<id>/ data directories (created if missing).
	Dir string
	// Host is the address every listener binds and advertises
	// (default 127.0.0.1).
	Host string
	// BasePort: node i's client listener is BasePort+i-1 and its
	// controller listener BasePort+100+i-1. 0 picks free ports.
	BasePort int
	// Binary is the weir executable (default: this process's own).
	Binary string
	// Overrides are passed to every node (key=value).
	Overrides []string
	// Proxied puts a fault-injecting TCP proxy of this process in front of
	// each node's client and controller listeners, advertised in their
	// place, so that every connection to a node (from clients, other
	// brokers and controllers) crosses it; Cluster.Network cuts and heals
	// links between nodes, and between this process's clients and a node.
	Proxied bool
	// Output receives every node's log lines, prefixed "[node N] ";
	// nil discards them.
	Output io.Writer
	Logger *slog.Logger
}

// Node is one weir process of the cluster.
type Node struct {
	ID  int32
	Dir string
	// ClientAddr and CtrlAddr are where clients and peers reach the node:
	// its proxies when the cluster is proxied, else its listeners.
	ClientAddr string
	CtrlAddr   string
	// ListenAddr and ListenCtrlAddr are the addresses the node binds. In
	// a proxied cluster they change at every restart (nothing but the
	// proxies knows them), so that a port taken by another process while
	// the node was down cannot keep it down; read them with Listeners.
	ListenAddr     string
	ListenCtrlAddr string
	// Overrides apply to this node only, after Config.Overrides (set them
	// before Start or Restart).
	Overrides []string

	c       *Cluster
	mu      sync.Mutex
	cmd     *exec.Cmd
	done    chan struct{}
	started chan struct{}
	paused  bool
}

// Cluster is a running local cluster.
type Cluster struct {
	cfg   Config
	Nodes []*Node
	outMu sync.Mutex
	net   *Network // nil unless cfg.Proxied
}

// New lays out the cluster (dirs and ports) without starting anything.
func New(cfg Config) (*Cluster, error) {
	if cfg.Nodes < 1 {
		return nil, fmt.Errorf("local cluster: at least one node, not %d", cfg.Nodes)
	}
	if cfg.Host == "" {
		cfg.Host = "127.0.0.1"
	}
	if cfg.Binary == "" {
		exe, err := os.Executable()
		if err != nil {
			return nil, fmt.Errorf("local cluster: find the weir binary: %w", err)
		}
		cfg.Binary = exe
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	ports, err := choosePorts(cfg)
	if err != nil {
		return nil, err
	}
	c := &Cluster{cfg: cfg}
	for i := 0; i < cfg.Nodes; i++ {
		id := int32(i + 1)
		dir := filepath.Join(cfg.Dir, fmt.Sprintf("node-%d", id))
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return nil, fmt.Errorf("local cluster: %w", err)
		}
		client := net.JoinHostPort(cfg.Host, strconv.Itoa(ports[2*i]))
		ctrl := net.JoinHostPort(cfg.Host, strconv.Itoa(ports[2*i+1]))
		c.Nodes = append(c.Nodes, &Node{
			ID: id, Dir: dir,
			ClientAddr: client, CtrlAddr: ctrl,
			ListenAddr: client, ListenCtrlAddr: ctrl,
			c: c,
		})
	}
	if cfg.Proxied {
		nw, err := newNetwork(c, cfg.Logger)
		if err != nil {
			return nil, err
		}
		c.net = nw
	}
	return c, nil
}

// Network is the proxies of a proxied cluster (nil otherwise).
func (c *Cluster) Network() *Network { return c.net }

// Close stops the proxies of a proxied cluster; call it once every node
// has stopped.
func (c *Cluster) Close() {
	if c.net != nil {
		c.net.Close()
	}
}

// choosePorts returns client and controller ports, node by node.
func choosePorts(cfg Config) ([]int, error) {
	out := make([]int, 0, 2*cfg.Nodes)
	if cfg.BasePort > 0 {
		for i := 0; i < cfg.Nodes; i++ {
			out = append(out, cfg.BasePort+i, cfg.BasePort+100+i)
		}
		return out, nil
	}
	// Free ports below the kernel's ephemeral range: a node's port is
	// free while the node is down (killed, restarting), and an outgoing
	// connection given that port by the kernel meanwhile would keep the
	// node from binding it again. Each is held until all are chosen, so
	// none is handed out twice.
	lo, hi := 10000, ephemeralLow()
	var lns []net.Listener
	defer func() {
		for _, ln := range lns {
			ln.Close()
		}
	}()
	for tries := 0; len(out) < 2*cfg.Nodes; tries++ {
		if tries > 10000 {
			return nil, fmt.Errorf("local cluster: no %d free ports in %d-%d", 2*cfg.Nodes, lo, hi)
		}
		ln, err := net.Listen("tcp", net.JoinHostPort(cfg.Host, strconv.Itoa(lo+rand.IntN(hi-lo))))
		if err != nil {
			continue
		}
		lns = append(lns, ln)
		out = append(out, ln.Addr().(*net.TCPAddr).Port)
	}
	return out, nil
}

// ephemeralLow is the first port of the kernel's ephemeral range.
func ephemeralLow() int {
	const fallback = 32768
	b, err := os.ReadFile("/proc/sys/net/ipv4/ip_local_port_range")
	if err != nil {
		return fallback
	}
	f := strings.Fields(string(b))
	if len(f) == 0 {
		return fallback
	}
	n, err := strconv.Atoi(f[0])
	if err != nil || n <= 11000 {
		return fallback
	}
	return n
}

// Bootstrap is every node's client address, comma-separated.
func (c *Cluster) Bootstrap() string {
	var out []string
	for _, n := range c.Nodes {
		out = append(out, n.ClientAddr)
	}
	return strings.Join(out, ",")
}

// voters is controller.quorum.voters for the cluster.
func (c *Cluster) voters() string {
	var out []string
	for _, n := range c.Nodes {
		out = append(out, fmt.Sprintf("%d@%s", n.ID, n.CtrlAddr))
	}
	return strings.Join(out, ",")
}

// Start launches every node and waits until each one serves or ctx ends.
func (c *Cluster) Start(ctx context.Context) error {
	for _, n := range c.Nodes {
		if err := n.launch(); err != nil {
			c.Kill()
			return err
		}
	}
	for _, n := range c.Nodes {
		err := n.WaitStarted(ctx)
		if err != nil && c.net != nil && ctx.Err() == nil {
			// Exited early: most likely a port taken between its pick
			// and the bind. A proxied node can take other ports.
			err = n.Restart(ctx)
		}
		if err != nil {
			c.Kill()
			return err
		}
	}
	return nil
}

// Stop sends SIGTERM to every node (a clean, controlled shutdown) and
// waits up to timeout for each, then kills what is left.
func (c *Cluster) Stop(timeout time.Duration) {
	var wg sync.WaitGroup
	for _, n := range c.Nodes {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_ = n.Stop(timeout) // Stop kills what does not stop in time
		}()
	}
	wg.Wait()
}

// Kill sends SIGKILL to every node and waits.
func (c *Cluster) Kill() {
	for _, n := range c.Nodes {
		n.Kill()
	}
}

// Node returns node id.
func (c *Cluster) Node(id int32) *Node { return c.Nodes[id-1] }

// Listeners are the addresses the node binds now (client, controller).
func (n *Node) Listeners() (client, ctrl string) {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.ListenAddr, n.ListenCtrlAddr
}

// freshPorts gives a proxied node new listener ports before a launch.
func (n *Node) freshPorts() error {
	ports, err := choosePorts(Config{Nodes: 1, Host: n.c.cfg.Host})
	if err != nil {
		return err
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	n.ListenAddr = net.JoinHostPort(n.c.cfg.Host, strconv.Itoa(ports[0]))
	n.ListenCtrlAddr = net.JoinHostPort(n.c.cfg.Host, strconv.Itoa(ports[1]))
	return nil
}

// args is the serve command line of a node.
func (n *Node) args() []string {
	listen, listenCtrl := n.Listeners()
	args := []string{"serve",
		"--override", "node.id=" + strconv.Itoa(int(n.ID)),
		"--override", "process.roles=broker,controller",
		"--override", "log.dirs=" + n.Dir,
		"--override", fmt.Sprintf("listeners=PLAINTEXT://%s,CONTROLLER://%s", listen, listenCtrl),
		"--override", "controller.quorum.voters=" + n.c.voters(),
	}
	if n.ClientAddr != listen {
		args = append(args, "--override", "advertised.listeners=PLAINTEXT://"+n.ClientAddr)
	}
	for _, o := range append(slices.Clip(n.c.cfg.Overrides), n.Overrides...) {
		args = append(args, "--override", o)
	}
	return args
}

// launch starts the process.
func (n *Node) launch() error {
	cmd := exec.Command(n.c.cfg.Binary, n.args()...)
	stderr, err := cmd.StderrPipe()
	if err != nil {
		return fmt.Errorf("node %d: %w", n.ID, err)
	}
	cmd.Stdout = io.Discard
	// Its own process group: a terminal's Ctrl-C reaches the parent only,
	// which then stops the nodes in order.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("start node %d: %w", n.ID, err)
	}
	done, started := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(done)
		sc := bufio.NewScanner(stderr)
		sc.Buffer(make([]byte, 64<<10), 1<<20)
		once := false
		for sc.Scan() {
			line := sc.Text()
			if !once && strings.Contains(line, "weir started") {
				close(started)
				once = true
			}
			n.c.emit(n.ID, line)
		}
		cmd.Wait()
	}()
	n.mu.Lock()
	n.cmd, n.done, n.started, n.paused = cmd, done, started, false
	n.mu.Unlock()
	return nil
}

func (c *Cluster) emit(id int32, line string) {
	if c.cfg.Output == nil {
		return
	}
	c.outMu.Lock()
	defer c.outMu.Unlock()
	fmt.Fprintf(c.cfg.Output, "[node %d] %s\n", id, line)
}

// WaitStarted waits until the node logs that it serves.
func (n *Node) WaitStarted(ctx context.Context) error {
	n.mu.Lock()
	done, started := n.done, n.started
	n.mu.Unlock()
	select {
	case <-started:
		return nil
	case <-done:
		return fmt.Errorf("node %d exited before it started (see its log)", n.ID)
	case <-ctx.Done():
		return fmt.Errorf("node %d did not start: %w", n.ID, ctx.Err())
	}
}

// Running reports whether the process is alive.
func (n *Node) Running() bool {
	n.mu.Lock()
	done := n.done
	n.mu.Unlock()
	if done == nil {
		return false
	}
	select {
	case <-done:
		return false
	default:
		return true
	}
}

// PID is the process id (0 if not started).
func (n *Node) PID() int {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.cmd == nil || n.cmd.Process == nil {
		return 0
	}
	return n.cmd.Process.Pid
}

// signal sends sig and, if wait, waits up to timeout for the exit (then
// SIGQUIT, and SIGKILL if that does not end it). It reports whether the
// process exited by itself in time.
func (n *Node) signal(sig syscall.Signal, wait bool, timeout time.Duration) bool {
	n.mu.Lock()
	cmd, done, paused := n.cmd, n.done, n.paused
	n.mu.Unlock()
	if cmd == nil || !n.Running() {
		return true
	}
	if paused && sig == syscall.SIGTERM {
		// A stopped process cannot handle SIGTERM until continued.
		_ = cmd.Process.Signal(syscall.SIGCONT)
	}
	_ = cmd.Process.Signal(sig)
	if !wait {
		return true
	}
	select {
	case <-done:
		return true
	case <-time.After(timeout):
	}
	// Stuck: SIGQUIT makes the Go runtime write every goroutine's stack
	// to stderr (the node's log) and exit, which tells where it hung.
	_ = cmd.Process.Signal(syscall.SIGQUIT)
	select {
	case <-done:
	case <-time.After(quitGrace):
		_ = cmd.Process.Kill()
		<-done
	}
	return false
}

// quitGrace is how long a stuck node may take to dump its goroutines
// after SIGQUIT before it is killed.
const quitGrace = 5 * time.Second

// Stop shuts the node down cleanly (SIGTERM), killing it after timeout;
// a node that had to be killed is an error.
func (n *Node) Stop(timeout time.Duration) error {
	if !n.signal(syscall.SIGTERM, true, timeout) {
		return fmt.Errorf("node %d did not stop within %v of SIGTERM; killed with SIGQUIT (its goroutines are in its log)", n.ID, timeout)
	}
	return nil
}

// Kill sends SIGKILL and waits for the exit.
func (n *Node) Kill() { n.signal(syscall.SIGKILL, true, time.Minute) }

// Pause stops the process (SIGSTOP).
func (n *Node) Pause() error {
	if !n.Running() {
		return errors.New("not running")
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	n.paused = true
	return n.cmd.Process.Signal(syscall.SIGSTOP)
}

// Resume continues a paused process (SIGCONT).
func (n *Node) Resume() error {
	if !n.Running() {
		return errors.New("not running")
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	n.paused = false
	return n.cmd.Process.Signal(syscall.SIGCONT)
}

// Restart starts a stopped node again on the same data dir and waits
// until it serves. An unproxied node binds the same ports; a proxied one
// binds fresh ones behind its unchanged proxies, and is tried up to three
// times (a port can still be taken between its pick and the bind).
func (n *Node) Restart(ctx context.Context) error {
	if n.Running() {
		return fmt.Errorf("node %d is still running", n.ID)
	}
	tries := 1
	if n.c.net != nil {
		tries = 3
	}
	var err error
	for range tries {
		if n.c.net != nil {
			if err = n.freshPorts(); err != nil {
				return err
			}
		}
		if err = n.launch(); err != nil {
			return err
		}
		if err = n.WaitStarted(ctx); err == nil || ctx.Err() != nil {
			return err
		}
		n.Kill()
	}
	return err
}
