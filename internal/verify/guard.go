package verify

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"
)

// The guard watches the nodes' memory and descriptors while faults are
// injected: it keeps the peaks for the report, and past maxNodeRSS it
// kills the cluster and ends the run, so that a broker gone wrong under
// a fault cannot take the machine down with it.

// maxNodeRSS is the safety limit on one node's resident memory.
const maxNodeRSS = 2 << 30

// NodeResources are one node's peaks over the run.
type NodeResources struct {
	Node    int32 `json:"node"`
	PeakRSS int64 `json:"peakRSS"` // bytes
	PeakFDs int   `json:"peakFDs"`
}

type guard struct {
	mu    sync.Mutex
	peaks map[int32]*NodeResources
}

// run samples every node twice a second until ctx ends; it calls trip
// once if a node passes the limit.
func (g *guard) run(ctx context.Context, e *env, trip func(error)) {
	g.mu.Lock()
	g.peaks = map[int32]*NodeResources{}
	g.mu.Unlock()
	if e.lc == nil {
		return
	}
	tick := time.NewTicker(500 * time.Millisecond)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		for _, n := range e.lc.Nodes {
			pid := n.PID()
			if pid == 0 || !n.Running() {
				continue
			}
			rss, err := rssOf(pid)
			if err != nil {
				continue
			}
			fds, _ := fdsOf(pid)
			g.mu.Lock()
			p := g.peaks[n.ID]
			if p == nil {
				p = &NodeResources{Node: n.ID}
				g.peaks[n.ID] = p
			}
			p.PeakRSS, p.PeakFDs = max(p.PeakRSS, rss), max(p.PeakFDs, fds)
			g.mu.Unlock()
			if rss > maxNodeRSS {
				e.lc.Kill()
				trip(fmt.Errorf("node %d passed the safety limit of %d MiB resident (%d MiB): cluster killed", n.ID, maxNodeRSS>>20, rss>>20))
				return
			}
		}
	}
}

// ops are the peaks as history operations.
func (g *guard) ops() []Op {
	g.mu.Lock()
	defer g.mu.Unlock()
	var out []Op
	for _, id := range sortedKeys(g.peaks) {
		p := g.peaks[id]
		out = append(out, Op{F: FResources, Type: TInfo, Proc: "verify", Node: id, RSS: p.PeakRSS, FDs: p.PeakFDs})
	}
	return out
}

func rssOf(pid int) (int64, error) {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, err
	}
	sc := bufio.NewScanner(bytes.NewReader(data))
	for sc.Scan() {
		if rest, ok := strings.CutPrefix(sc.Text(), "VmRSS:"); ok {
			f := strings.Fields(rest)
			if len(f) == 2 {
				kb, err := strconv.ParseInt(f[0], 10, 64)
				return kb << 10, err
			}
		}
	}
	return 0, fmt.Errorf("pid %d: no VmRSS", pid)
}

func fdsOf(pid int) (int, error) {
	ents, err := os.ReadDir(fmt.Sprintf("/proc/%d/fd", pid))
	return len(ents), err
}
