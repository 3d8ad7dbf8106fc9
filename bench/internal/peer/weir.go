package peer

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"time"

	"github.com/weir-project/weir/bench/internal/proc"
)

// weirReady is the line weir logs once it serves clients, with its bound
// listeners.
var weirReady = regexp.MustCompile(`weir started.*listener\.PLAINTEXT=(\S+)`)

// weirDefaults are the overrides every weir the suite starts gets: a
// deleted topic's files go at once, so rounds do not pile up on disk.
var weirDefaults = []string{"log.segment.delete.delay.ms=0"}

// WeirNode is one `weir serve` process that can be killed and restarted
// on the same dir and ports (the recovery case).
type WeirNode struct {
	Bin, Dir  string
	Overrides []string
	Addr      string
	Proc      *proc.Proc
}

func (n *WeirNode) args() []string {
	var args []string
	for _, o := range append(append([]string{"log.dirs=" + n.Dir}, weirDefaults...), n.Overrides...) {
		args = append(args, "--override", o)
	}
	return append([]string{"serve"}, args...)
}

// Start launches the node and waits until it serves.
func (n *WeirNode) Start() error {
	p, m, err := proc.Start("weir", n.Bin, n.args(), weirReady, startTimeout)
	if err != nil {
		return err
	}
	n.Proc, n.Addr = p, m[1]
	return nil
}

// StartWeir starts a single-node weir on fixed free loopback ports (so a
// restart finds the same address) with a fresh data dir under tmp.
func StartWeir(bin, tmp string, overrides ...string) (*Broker, *WeirNode, error) {
	dir, err := os.MkdirTemp(tmp, "weir-")
	if err != nil {
		return nil, nil, fmt.Errorf("weir data dir: %w", err)
	}
	ports, err := proc.FreePorts(2)
	if err != nil {
		return nil, nil, err
	}
	n := &WeirNode{Bin: bin, Dir: dir, Overrides: append([]string{
		fmt.Sprintf("listeners=PLAINTEXT://127.0.0.1:%d,CONTROLLER://127.0.0.1:%d", ports[0], ports[1]),
	}, overrides...)}
	if err := n.Start(); err != nil {
		os.RemoveAll(dir)
		return nil, nil, err
	}
	return &Broker{Name: Weir, Addrs: []string{n.Addr}, Dir: dir, Procs: []*proc.Proc{n.Proc}}, n, nil
}

// StartWeirCluster starts n weir nodes, each broker and controller, as
// `weir cluster up` or test/harness do: the same voters on every node,
// their own dirs and ports. It returns once every node serves.
func StartWeirCluster(bin, tmp string, n int, overrides ...string) (*Broker, error) {
	dir, err := os.MkdirTemp(tmp, "weir-cluster-")
	if err != nil {
		return nil, fmt.Errorf("weir cluster dir: %w", err)
	}
	ports, err := proc.FreePorts(2 * n)
	if err != nil {
		return nil, err
	}
	var voters []string
	for i := range n {
		voters = append(voters, fmt.Sprintf("%d@127.0.0.1:%d", i+1, ports[2*i+1]))
	}
	b := &Broker{Name: WeirCluster, Dir: dir}
	for i := range n {
		node := &WeirNode{Bin: bin, Dir: filepath.Join(dir, fmt.Sprintf("node-%d", i+1)), Overrides: append([]string{
			fmt.Sprintf("node.id=%d", i+1),
			"process.roles=broker,controller",
			fmt.Sprintf("listeners=PLAINTEXT://127.0.0.1:%d,CONTROLLER://127.0.0.1:%d", ports[2*i], ports[2*i+1]),
			"controller.quorum.voters=" + strings.Join(voters, ","),
		}, overrides...)}
		p, err := proc.Launch(fmt.Sprintf("weir node %d", i+1), bin, node.args(), weirReady)
		if err != nil {
			b.Stop()
			return nil, err
		}
		b.Procs = append(b.Procs, p)
	}
	// None serves before the quorum exists, so all were launched first.
	deadline := time.Now().Add(startTimeout)
	for _, p := range b.Procs {
		m, err := p.WaitReady(time.Until(deadline))
		if err != nil {
			b.Stop()
			return nil, err
		}
		b.Addrs = append(b.Addrs, m[1])
	}
	return b, nil
}
