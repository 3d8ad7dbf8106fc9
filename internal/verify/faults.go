package verify

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"time"

	"github.com/weir-project/weir/internal/localcluster"
)

// restart starts a stopped node again (localcluster retries on fresh
// ports): a node that cannot come back is itself a finding, reported by
// the heal's error.
func restart(ctx context.Context, node *localcluster.Node) error {
	rctx, cancel := context.WithTimeout(ctx, 3*time.Minute)
	defer cancel()
	if err := node.Restart(rctx); err != nil {
		return fmt.Errorf("node %d did not restart: %w", node.ID, err)
	}
	return nil
}

// killFault is kill -9 and, at the heal, a restart: of the drawn leader
// or follower, or of the active controller; a torn one also appends
// garbage to the stopped node's active segments before the restart, and
// a power one takes away what the node had not fsynced, a wipe one
// everything its log dir held.
type killFault struct {
	n          *nemesis
	d          draws
	torn       bool
	power      bool
	wipe       bool
	controller bool
	node       *localcluster.Node
}

func (f *killFault) start(ctx context.Context) (int32, string, error) {
	var id int32
	var what string
	if f.controller {
		id = f.n.activeController(ctx)
		if id < 0 {
			return 0, "", errors.New("no active controller to kill")
		}
		what = "active controller"
	} else {
		var err error
		if id, what, err = f.n.target(ctx, f.d); err != nil {
			return 0, "", err
		}
	}
	var err error
	if f.node, err = f.n.running(id); err != nil {
		return 0, "", err
	}
	f.node.Kill()
	detail := "kill -9 of the " + what
	if !f.torn && !f.power && !f.wipe {
		return id, detail, nil
	}
	damage := func(dir string, topics []string, rng *rand.Rand) (string, error) {
		return tear([]string{dir}, topics, rng)
	}
	switch {
	case f.power:
		damage = loseUnflushed
	case f.wipe:
		damage = wipeLogDir
	}
	done, err := f.n.damage(f.node, f.d, damage)
	if err != nil {
		return id, detail, err
	}
	return id, detail + "; " + done, nil
}

// damage does to killed node's log dir what fn does (tear, loseUnflushed),
// to every workload topic and __consumer_offsets, with the draws' seed.
func (n *nemesis) damage(node *localcluster.Node, d draws, fn func(dir string, topics []string, rng *rand.Rand) (string, error)) (string, error) {
	dir := node.Dir
	if node.ID == n.e.diskNode && n.e.disk != nil {
		dir = filepath.Join(n.e.disk.Dir, "logs")
	}
	return fn(dir, append(names(n.topics), "__consumer_offsets"), rand.New(rand.NewPCG(d.seed, 1)))
}

func (f *killFault) heal(ctx context.Context) (string, error) {
	return "restarted", restart(ctx, f.node)
}

// pauseFault is SIGSTOP of the drawn leader or follower, SIGCONT at the heal.
type pauseFault struct {
	n    *nemesis
	d    draws
	node *localcluster.Node
}

func (f *pauseFault) start(ctx context.Context) (int32, string, error) {
	id, what, err := f.target(ctx)
	if err != nil {
		return 0, "", err
	}
	if f.node, err = f.n.running(id); err != nil {
		return 0, "", err
	}
	if err := f.node.Pause(); err != nil {
		return 0, "", fmt.Errorf("pause node %d: %w", id, err)
	}
	return id, "SIGSTOP of the " + what, nil
}

// target is, one time in three, the active controller (when it is free):
// resumed, it finds every broker's session silent, and it may hold Raft
// entries of its term that no other node has (weir verify seed 218 found
// two bugs there). Otherwise a leader or a follower of the drawn
// partition.
func (f *pauseFault) target(ctx context.Context) (int32, string, error) {
	if f.d.pick%3 == 0 {
		id := f.n.activeController(ctx)
		if id > 0 && !f.n.isHeld(id) {
			return id, "active controller", nil
		}
	}
	return f.n.target(ctx, f.d)
}

func (f *pauseFault) heal(context.Context) (string, error) {
	return "SIGCONT", f.node.Resume()
}

// diskFault fills the disk-full node's tmpfs, and frees it at the heal.
type diskFault struct{ n *nemesis }

func (f *diskFault) start(context.Context) (int32, string, error) {
	if err := f.n.claim(f.n.e.diskNode); err != nil {
		return 0, "", err
	}
	size, err := f.n.e.disk.Fill()
	if err != nil {
		return 0, "", err
	}
	return f.n.e.diskNode, fmt.Sprintf("log dir full (%d MiB of ballast)", size>>20), nil
}

func (f *diskFault) heal(context.Context) (string, error) {
	return "ballast removed", f.n.e.disk.Free()
}

// loseFault is --unsafe's demonstration, built so that loss is certain,
// not likely. The drawn partition's leader is cut from its followers on
// the data path (connections reset: nothing in flight reaches them; Raft
// and heartbeats still pass, so nobody is fenced and the ISR stays whole
// in every view, replica.lag.time.max.ms being long in --unsafe). The
// leader acknowledges acks=1 sends that only it has, and that no consumer
// can read: its high watermark cannot pass what its followers lack. It is
// killed; the followers, reconnected, elect one of themselves; new sends
// land past every offset acknowledged before; the old leader restarts
// and truncates to the new leader's log. Its acknowledged tail is gone,
// and later offsets are read.
type loseFault struct {
	n      *nemesis
	d      draws
	leader *localcluster.Node
	part   int32
	maxAck int64
	killed float64
}

// loseAcks is how many acknowledged sends only the cut-off leader holds.
const loseAcks = 20

func (f *loseFault) start(ctx context.Context) (int32, string, error) {
	f.part = f.d.part
	vs := f.n.e.obs.views(ctx, f.n.e.ids, []string{f.n.main.Name})
	st, ok := partition(vs, tp{f.n.main.Name, f.part})
	if !ok || st.Leader < 0 || len(st.Replicas) < 2 {
		return 0, "", fmt.Errorf("%s-%d has no leader with followers", f.n.main.Name, f.part)
	}
	p := f.part
	if err := f.n.claim(st.Leader); err != nil {
		return 0, "", err
	}
	f.leader = f.n.e.node(st.Leader)
	var cut []int32
	for _, r := range st.Replicas {
		if r != st.Leader {
			f.n.e.nw.CutData(st.Leader, r, localcluster.Reset)
			cut = append(cut, r)
		}
	}
	since := f.n.rec.Now()
	if err := waitFor(ctx, time.Minute, func() bool {
		n, _ := f.n.st.acksSince(p, since)
		return n >= loseAcks
	}); err != nil {
		f.n.e.nw.Heal()
		return 0, "", fmt.Errorf("%d acks=1 sends to the cut-off leader of %s-%d: %w", loseAcks, f.n.main.Name, p, err)
	}
	f.leader.Kill()
	f.killed = f.n.rec.Now()
	n, maxAck := f.n.st.acksSince(p, since)
	f.maxAck = maxAck
	return st.Leader, fmt.Sprintf("leader of %s-%d cut from followers %s, acknowledged %d sends alone (offsets up to %d), then kill -9",
		f.n.main.Name, p, joinIDs(cut), n, maxAck), nil
}

func (f *loseFault) heal(ctx context.Context) (string, error) {
	f.n.e.nw.Heal()
	p := f.part
	// A send invoked after the kill, acknowledged past every offset the
	// old leader acknowledged: the final read will read past the loss.
	err := waitFor(ctx, 60*time.Second, func() bool {
		_, maxAck := f.n.st.acksSince(p, f.killed)
		return maxAck > f.maxAck
	})
	if err != nil {
		return "", fmt.Errorf("the new leader of %s-%d took no send past offset %d: %w", f.n.main.Name, p, f.maxAck, err)
	}
	if err := restart(ctx, f.leader); err != nil {
		return "", err
	}
	return fmt.Sprintf("network healed; new leader wrote past offset %d; old leader restarted", f.maxAck), nil
}

// waitFor polls cond every 50 ms until it holds or timeout passes.
func waitFor(ctx context.Context, timeout time.Duration, cond func() bool) error {
	deadline := time.Now().Add(timeout)
	for !cond() {
		if time.Now().After(deadline) {
			return fmt.Errorf("not within %v", timeout)
		}
		if ctx.Err() != nil {
			return ctx.Err()
		}
		sleep(ctx, 50*time.Millisecond)
	}
	return nil
}
