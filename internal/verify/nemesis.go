package verify

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"

	"github.com/weir-project/weir/internal/localcluster"
)

// The nemesis injects faults on a seeded schedule: every Interval a fault
// starts, lasts FaultDuration and heals. By default one is in force at a
// time, and the cluster is given the rest of the interval, and then as
// long as it needs (bounded), to become healthy again (every node up,
// every partition with its full ISR) before the next one. With Overlap
// above one, faults start every Interval whatever the cluster's state,
// up to Overlap in force at once, so one strikes while the cluster is
// still recovering from another: a kill while a follower truncates, a
// partition during a leader's hand-over. Kinds come in a seeded shuffle
// per round, so each asked-for kind appears once per round; every choice
// (role, target partition, variant, garbage) is drawn from the seed
// before the cluster is looked at, so a seed always makes the same draws.
//
// Two faults never act on one node's process at once (a node held by
// one is passed over by the next one's choice of target), and a fault
// that loses what a node had not fsynced (power, cascade, lose) starts
// only on a healthy cluster, so never beside another such loss: two
// nodes losing their page caches together may lose acknowledged records
// in Kafka too, which promises nothing against that without fsync.

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

	mu      sync.Mutex
	cond    *sync.Cond       // broadcast when a fault heals
	inForce map[int]string   // the faults in force by number, for the progress line
	held    map[int32]string // the nodes a fault in force acts on, and its kind
	lossy   bool             // a fault that loses unflushed writes is in force
	broken  bool             // a heal failed: no more faults
	// heldParts are the partitions a move or a cascade in force works
	// on: a second move of one would change the target the first waits
	// for.
	heldParts map[tp]bool
	// claiming collects what the fault being started holds; only the
	// loop that starts faults touches it.
	claiming claims
	starting string // the kind of the fault being started
	// health stands in for waitHealthy in unit tests (nil: waitHealthy).
	health func(ctx context.Context, timeout time.Duration) (time.Duration, error)
}

func (n *nemesis) current() string {
	n.mu.Lock()
	defer n.mu.Unlock()
	var ks []int
	for k := range n.inForce {
		ks = append(ks, k)
	}
	slices.Sort(ks)
	var out []string
	for _, k := range ks {
		out = append(out, n.inForce[k])
	}
	return strings.Join(out, " | ")
}

func (n *nemesis) set(k int, s string) {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.inForce == nil {
		n.inForce = map[int]string{}
	}
	if s == "" {
		delete(n.inForce, k)
	} else {
		n.inForce[k] = s
	}
}

// lossyKind reports whether a fault of kind loses what a node had not
// fsynced.
func lossyKind(kind string) bool {
	return kind == FaultPower || kind == FaultCascade || kind == FaultLose || kind == FaultWipe
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

// healthyNow reports whether the cluster is healthy at one look.
func (n *nemesis) healthyNow(ctx context.Context) bool {
	_, err := n.awaitHealth(ctx, 0)
	return err == nil
}

// awaitHealth is waitHealthy, or the unit tests' stand-in for it.
func (n *nemesis) awaitHealth(ctx context.Context, timeout time.Duration) (time.Duration, error) {
	if n.health != nil {
		return n.health(ctx, timeout)
	}
	return n.waitHealthy(ctx, timeout)
}

// run injects faults until there is no room for another before until,
// and at least one round: every kind asked for strikes once, however
// slowly the cluster recovers (the run is longer then). It returns when
// every fault it started has healed.
func (n *nemesis) run(ctx context.Context, until time.Time) {
	if len(n.kinds) == 0 {
		return
	}
	n.cond = sync.NewCond(&n.mu)
	n.held, n.heldParts = map[int32]string{}, map[tp]bool{}
	var healing sync.WaitGroup
	defer healing.Wait()
	sleep(ctx, min(5*time.Second, n.o.Interval/2)) // warm up
	var round []string
	for i := 0; ctx.Err() == nil && !n.stopped() && (time.Until(until) >= n.o.Interval || i < len(n.kinds)); i++ {
		if len(round) == 0 {
			round = slices.Clone(n.kinds)
			n.rng.Shuffle(len(round), func(a, b int) { round[a], round[b] = round[b], round[a] })
		}
		kind := round[0]
		round = round[1:]
		f := n.plan(kind)
		if !n.room(ctx, kind) {
			return
		}
		began := time.Now()
		// --overlap: a fault may start while the last ones still heal or
		// the cluster still recovers from them; see below.
		unsettled := n.o.Overlap > 1 && (n.inForceCount() > 0 || !n.healthyNow(ctx))
		n.claiming, n.starting = claims{}, kind
		node, detail, err := f.start(ctx)
		held := n.claiming
		if err != nil {
			others := unsettled || n.inForceCount() > 0
			n.release(held, lossyKind(kind))
			if errors.Is(err, errHeld) || others {
				// --overlap: its node is in another fault, or the
				// faults in force, or those just healed, left it
				// nothing to act on (no leader, no controller, no
				// quorum for a move). Not an error of the run.
				n.rec.Add(Op{F: FFault, Type: TInfo, Proc: "nemesis", Fault: kind, Detail: "skipped: " + err.Error()})
			} else {
				n.rec.Add(Op{F: FFault, Type: TInfo, Proc: "nemesis", Fault: kind, Err: "start: " + err.Error()})
				n.logf("fault %s: %v", kind, err)
			}
			sleep(ctx, time.Until(began.Add(n.o.Interval)))
			continue
		}
		n.rec.Add(Op{F: FFault, Type: TStart, Proc: "nemesis", Fault: kind, Node: node, Detail: detail})
		n.set(i, fmt.Sprintf("%s node %d: %s", kind, node, detail))
		healing.Add(1)
		go func() {
			defer healing.Done()
			n.heal(ctx, i, kind, node, f, held)
		}()
		if n.o.Overlap > 1 {
			sleep(ctx, time.Until(began.Add(n.o.Interval)))
			continue
		}
		healing.Wait()
		if ctx.Err() != nil || n.stopped() {
			return
		}
		n.set(i, "recovering from "+kind)
		sleep(ctx, time.Until(began.Add(n.o.Interval)))
		if took, err := n.waitHealthy(ctx, 60*time.Second); err != nil {
			n.rec.Add(Op{F: FFault, Type: TInfo, Proc: "nemesis", Fault: kind, Err: "after heal: " + err.Error()})
			n.logf("after %s: %v", kind, err)
		} else if took > time.Second {
			n.logf("after %s: healthy %v after the interval", kind, took.Round(100*time.Millisecond))
		}
		n.set(i, "")
	}
}

// room waits until a fault of kind may start: fewer than Overlap in
// force, and for a fault that loses unflushed writes, none other such in
// force and a healthy cluster. It reports false if the run ends first.
func (n *nemesis) room(ctx context.Context, kind string) bool {
	n.mu.Lock()
	defer n.mu.Unlock()
	for {
		if ctx.Err() != nil || n.broken {
			return false
		}
		if len(n.held) < n.o.Nodes && len(n.inForce) < max(n.o.Overlap, 1) && (!lossyKind(kind) || !n.lossy) {
			break
		}
		n.wait(ctx)
	}
	if !lossyKind(kind) {
		return true
	}
	n.lossy = true // held from here, while the cluster is brought to health
	if n.o.Overlap <= 1 {
		return true // the loop waited for health after the last fault
	}
	// Healthy: every node back and in every ISR, so a node that lost
	// its page cache in an earlier fault has fetched back what it lost.
	// No fault in force is not enough: such a node may still be
	// catching up.
	n.mu.Unlock()
	_, err := n.awaitHealth(ctx, 90*time.Second)
	n.mu.Lock()
	if err != nil {
		n.lossy = false
		n.rec.Add(Op{F: FFault, Type: TInfo, Proc: "nemesis", Fault: kind, Err: "before a fault that loses unflushed writes: " + err.Error()})
		n.logf("before %s: %v", kind, err)
		return ctx.Err() == nil
	}
	return true
}

// wait waits, with n.mu held, for a heal, or ctx's end.
func (n *nemesis) wait(ctx context.Context) {
	stop := context.AfterFunc(ctx, func() {
		n.mu.Lock()
		n.cond.Broadcast()
		n.mu.Unlock()
	})
	n.cond.Wait()
	stop()
}

// heal ends fault number i after FaultDuration, even when ctx is done:
// the final read needs the cluster whole.
func (n *nemesis) heal(ctx context.Context, i int, kind string, node int32, f fault, held claims) {
	sleep(ctx, n.o.FaultDuration)
	hctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	hdetail, err := f.heal(hctx)
	cancel()
	end := Op{F: FFault, Type: TEnd, Proc: "nemesis", Fault: kind, Node: node, Detail: hdetail}
	if err != nil {
		end.Err = "heal: " + err.Error()
		// A fault that did not heal leaves the cluster broken: more
		// faults would only break it further, and prove nothing.
		n.logf("heal %s: %v; no more faults", kind, err)
	}
	n.rec.Add(end)
	n.set(i, "")
	n.release(held, lossyKind(kind))
	if err != nil {
		n.mu.Lock()
		n.broken = true
		n.cond.Broadcast()
		n.mu.Unlock()
	}
}

func (n *nemesis) inForceCount() int {
	n.mu.Lock()
	defer n.mu.Unlock()
	return len(n.inForce)
}

func (n *nemesis) stopped() bool {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.broken
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
	id, _, what, err := n.targetPart(ctx, d)
	return id, what, err
}

// targetPart is target, and the partition of the main topic it aimed at.
func (n *nemesis) targetPart(ctx context.Context, d draws) (int32, int32, string, error) {
	vs := n.e.obs.views(ctx, n.e.ids, []string{n.main.Name})
	// The drawn partition's, or where a fault in force holds that node
	// or left the partition without a leader (Overlap), the next
	// partition's whose node is free.
	for k := range n.main.Partitions {
		p := (d.part + k) % n.main.Partitions
		id, what, err := n.targetIn(vs, p, d)
		if err == nil && !n.isHeld(id) {
			return id, p, what, nil
		}
		if err != nil && n.inForceCount() == 0 {
			return 0, 0, "", err
		}
	}
	return 0, 0, "", fmt.Errorf("%w: no partition's drawn replica is free to act on", errHeld)
}

// activeController is the node most nodes name as the active controller
// (-1 if none answers).
func (n *nemesis) activeController(ctx context.Context) int32 {
	return controller(n.e.obs.views(ctx, n.e.ids, []string{n.main.Name}))
}

// targetIn is the drawn role's node of partition p.
func (n *nemesis) targetIn(vs []view, p int32, d draws) (int32, string, error) {
	st, ok := partition(vs, tp{n.main.Name, p})
	if !ok || st.Leader < 0 {
		return 0, "", fmt.Errorf("%s-%d has no leader to aim at", n.main.Name, p)
	}
	if !d.follower {
		return st.Leader, fmt.Sprintf("leader of %s-%d", n.main.Name, p), nil
	}
	var fs []int32
	for _, r := range st.Replicas {
		if r != st.Leader {
			fs = append(fs, r)
		}
	}
	if len(fs) == 0 {
		return st.Leader, fmt.Sprintf("leader of %s-%d (no follower)", n.main.Name, p), nil
	}
	return fs[d.pick%len(fs)], fmt.Sprintf("follower of %s-%d", n.main.Name, p), nil
}

// running is node id's process, or an error if it does not run; the
// fault being started holds it until it heals.
func (n *nemesis) running(id int32) (*localcluster.Node, error) {
	if err := n.claim(id); err != nil {
		return nil, err
	}
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
	case FaultOneWay:
		return &oneWayFault{n: n, d: d}
	case FaultSlow:
		return &slowFault{n: n, d: d}
	case FaultTorn:
		return &killFault{n: n, d: d, torn: true}
	case FaultPower:
		return &killFault{n: n, d: d, power: true}
	case FaultWipe:
		return &killFault{n: n, d: d, wipe: true}
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
