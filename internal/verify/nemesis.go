package verify

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"

	"github.com/weir-project/weir/internal/localcluster"
)

// The nemesis injects one fault at a time on a seeded schedule: every
// Interval a fault starts, lasts FaultDuration, heals, and the cluster is
// given the rest of the interval, and then as long as it needs (bounded),
// to become healthy again (every node up, every partition with its full
// ISR) before the next one. Kinds come in a seeded shuffle per round, so
// each asked-for kind appears once per round; every choice (role, target
// partition, variant, garbage) is drawn from the seed before the cluster
// is looked at, so a seed always makes the same draws.

// fault is one planned fault.
type fault interface {
	// start applies the fault; it returns the node hit and what it did.
	start(ctx context.Context) (node int32, detail string, err error)
	// heal undoes it.
	heal(ctx context.Context) (detail string, err error)
}

type nemesis struct {
	e      *env
	adm    *kadm.Client // through the proxies, like the workload's clients
	o      Options
	rec    *Recorder
	st     *stats
	rng    *rand.Rand
	main   TopicInfo
	topics []TopicInfo
	kinds  []string
	logf   func(string, ...any)

	mu  sync.Mutex
	now string // the fault in force, for the progress line
}

func (n *nemesis) current() string {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.now
}

func (n *nemesis) set(s string) {
	n.mu.Lock()
	n.now = s
	n.mu.Unlock()
}

// healthTopics are the partitions that must have a full ISR for the
// cluster to count as healthy.
func (n *nemesis) healthTopics() map[string]int32 {
	out := map[string]int32{}
	for _, t := range n.topics {
		out[t.Name] = t.Partitions
	}
	return out
}

// waitHealthy waits until every node answers and agrees that every
// partition has its leader and full ISR, or until timeout.
func (n *nemesis) waitHealthy(ctx context.Context, timeout time.Duration) (time.Duration, error) {
	start := time.Now()
	deadline := start.Add(timeout)
	why := ""
	for {
		vs := n.e.obs.views(ctx, n.e.ids, names(n.topics))
		ok, reason := healthy(vs, len(n.e.ids), n.healthTopics())
		if ok {
			return time.Since(start), nil
		}
		why = reason
		if time.Now().After(deadline) || ctx.Err() != nil {
			return time.Since(start), fmt.Errorf("not healthy after %v: %s", timeout.Round(time.Second), why)
		}
		select {
		case <-ctx.Done():
		case <-time.After(250 * time.Millisecond):
		}
	}
}

// run injects faults until there is no room for another before until,
// and at least one round: every kind asked for strikes once, however
// slowly the cluster recovers (the run is longer then).
func (n *nemesis) run(ctx context.Context, until time.Time) {
	if len(n.kinds) == 0 {
		return
	}
	sleep(ctx, min(5*time.Second, n.o.Interval/2)) // warm up
	var round []string
	for i := 0; ctx.Err() == nil && (time.Until(until) >= n.o.Interval || i < len(n.kinds)); i++ {
		if len(round) == 0 {
			round = slices.Clone(n.kinds)
			n.rng.Shuffle(len(round), func(a, b int) { round[a], round[b] = round[b], round[a] })
		}
		kind := round[0]
		round = round[1:]
		began := time.Now()
		f := n.plan(kind)
		node, detail, err := f.start(ctx)
		if err != nil {
			n.rec.Add(Op{F: FFault, Type: TInfo, Proc: "nemesis", Fault: kind, Err: "start: " + err.Error()})
			n.logf("fault %s: %v", kind, err)
			sleep(ctx, time.Until(began.Add(n.o.Interval)))
			continue
		}
		n.rec.Add(Op{F: FFault, Type: TStart, Proc: "nemesis", Fault: kind, Node: node, Detail: detail})
		n.set(fmt.Sprintf("%s node %d: %s", kind, node, detail))
		sleep(ctx, n.o.FaultDuration)
		// Heal even when ctx is done: the final read needs the cluster whole.
		hctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		hdetail, err := f.heal(hctx)
		cancel()
		end := Op{F: FFault, Type: TEnd, Proc: "nemesis", Fault: kind, Node: node, Detail: hdetail}
		if err != nil {
			end.Err = "heal: " + err.Error()
			n.logf("heal %s: %v; no more faults", kind, err)
			n.rec.Add(end)
			n.set("")
			// A fault that did not heal leaves the cluster broken: more
			// faults would only break it further, and prove nothing.
			return
		}
		n.rec.Add(end)
		if ctx.Err() != nil {
			n.set("")
			return
		}
		n.set("recovering from " + kind)
		sleep(ctx, time.Until(began.Add(n.o.Interval)))
		if took, err := n.waitHealthy(ctx, 60*time.Second); err != nil {
			n.rec.Add(Op{F: FFault, Type: TInfo, Proc: "nemesis", Fault: kind, Err: "after heal: " + err.Error()})
			n.logf("after %s: %v", kind, err)
		} else if took > time.Second {
			n.logf("after %s: healthy %v after the interval", kind, took.Round(100*time.Millisecond))
		}
		n.set("")
	}
}

func sleep(ctx context.Context, d time.Duration) {
	if d <= 0 {
		return
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
	case <-t.C:
	}
}

func names(ts []TopicInfo) []string {
	var out []string
	for _, t := range ts {
		out = append(out, t.Name)
	}
	return out
}

// draws are the seeded choices of one fault, drawn before anything is
// looked at so that the sequence of draws depends on the seed alone.
type draws struct {
	follower bool  // a follower rather than the leader
	part     int32 // which partition of the main topic picks the node
	pick     int   // which follower, or variant
	seed     uint64
}

func (n *nemesis) draw() draws {
	return draws{follower: n.rng.IntN(2) == 1, part: n.rng.Int32N(n.main.Partitions), pick: n.rng.IntN(1 << 16), seed: n.rng.Uint64()}
}

// target finds the node a fault hits: the leader of the drawn partition,
// or one of its followers.
func (n *nemesis) target(ctx context.Context, d draws) (int32, string, error) {
	vs := n.e.obs.views(ctx, n.e.ids, []string{n.main.Name})
	st, ok := partition(vs, tp{n.main.Name, d.part})
	if !ok || st.Leader < 0 {
		return 0, "", fmt.Errorf("%s-%d has no leader to aim at", n.main.Name, d.part)
	}
	if !d.follower {
		return st.Leader, fmt.Sprintf("leader of %s-%d", n.main.Name, d.part), nil
	}
	var fs []int32
	for _, r := range st.Replicas {
		if r != st.Leader {
			fs = append(fs, r)
		}
	}
	if len(fs) == 0 {
		return st.Leader, fmt.Sprintf("leader of %s-%d (no follower)", n.main.Name, d.part), nil
	}
	return fs[d.pick%len(fs)], fmt.Sprintf("follower of %s-%d", n.main.Name, d.part), nil
}

// running is node id's process, or an error if it does not run.
func (n *nemesis) running(id int32) (*localcluster.Node, error) {
	node := n.e.node(id)
	if node == nil || !node.Running() {
		return nil, fmt.Errorf("node %d is not running", id)
	}
	return node, nil
}

// plan makes the fault of a kind from fresh draws.
func (n *nemesis) plan(kind string) fault {
	d := n.draw()
	switch kind {
	case FaultKill:
		return &killFault{n: n, d: d}
	case FaultPause:
		return &pauseFault{n: n, d: d}
	case FaultPartition:
		return &partitionFault{n: n, d: d}
	case FaultTorn:
		return &killFault{n: n, d: d, torn: true}
	case FaultPower:
		return &killFault{n: n, d: d, power: true}
	case FaultDiskFull:
		return &diskFault{n: n}
	case FaultController:
		return &killFault{n: n, d: d, controller: true}
	case FaultCascade:
		return &cascadeFault{n: n, d: d}
	case FaultRestart:
		return &restartFault{n: n, d: d}
	case FaultMove:
		return &moveFault{n: n, d: d}
	case FaultLose:
		return &loseFault{n: n, d: d}
	}
	panic("verify: no fault " + kind)
}

// available filters the asked-for kinds down to those this environment
// can apply, saying why for each one it drops.
func available(e *env, kinds []string) (ok []string, skipped []string) {
	for _, k := range kinds {
		switch {
		case e.lc == nil:
			skipped = append(skipped, k+": needs a cluster this run started (not --brokers)")
		case k == FaultDiskFull && e.disk == nil:
			// startLocal said why already.
		default:
			ok = append(ok, k)
		}
	}
	return ok, skipped
}

func joinIDs(ids []int32) string {
	var s []string
	for _, id := range ids {
		s = append(s, fmt.Sprint(id))
	}
	return strings.Join(s, ",")
}
