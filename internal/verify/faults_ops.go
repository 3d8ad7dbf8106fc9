package verify

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/weir-project/weir/internal/localcluster"
)

// The operator's faults: what a cluster goes through on a good day, a
// rolling restart and a partition reassignment, done under the workload.
// Nothing breaks in them, and that is the point: leaderships move by
// hand-over rather than by failure, and a hand-over that answers a client
// before its write is safe, or a move that drops the replica holding the
// tail, loses acknowledged records as surely as a crash.

// gracefulStop bounds a restart fault's SIGTERM: past
// controlled.shutdown.timeout.ms (60 s), and a node that needs longer
// hangs in its shutdown.
const gracefulStop = 90 * time.Second

// restartFault stops the drawn leader or follower cleanly (SIGTERM: a
// controlled shutdown hands its leaderships over and answers the
// requests it holds first), and starts it again at the heal, as one step
// of a rolling restart.
//
// One restart in three (drawn) composes the clean stop with a crash: the
// partition's leader after the stop is killed (kill -9) as the node
// returns (see heal). So the controller elects while the returning node
// may still hold only the log and the log start it stopped with; with
// --min-insync at the replication factor it left as an eligible leader
// replica (KIP-966). An election of it, or an ISR that takes it in,
// before it holds every acknowledged record and the log start of every
// answered DeleteRecords, loses records or brings deleted ones back. The
// leader restarts once another leads.
type restartFault struct {
	n    *nemesis
	d    draws
	node *localcluster.Node
	at   tp
	// leader is the partition's leader after the stop, to be killed as
	// the node returns (nil: a plain restart).
	leader *localcluster.Node
}

func (f *restartFault) start(ctx context.Context) (int32, string, error) {
	id, p, what, err := f.n.targetPart(ctx, f.d)
	if err != nil {
		return 0, "", err
	}
	f.at = tp{f.n.main.Name, p}
	if f.node, err = f.n.running(id); err != nil {
		return 0, "", err
	}
	began := time.Now()
	if err := f.node.Stop(gracefulStop); err != nil {
		// The nemesis heals only faults that started: restart it here.
		return 0, "", errors.Join(err, restart(ctx, f.node))
	}
	detail := fmt.Sprintf("SIGTERM of the %s (stopped in %v)", what, time.Since(began).Round(time.Millisecond))
	if (f.d.pick>>8)%3 == 0 {
		detail += "; " + f.markLeader(ctx, id)
	}
	return id, detail, nil
}

// markLeader holds the partition's leader after the stop, to be killed
// at the heal, and says which it is. A partition left without another
// leader, or whose leader is in another fault, gets a plain restart.
func (f *restartFault) markLeader(ctx context.Context, stopped int32) string {
	name := fmt.Sprintf("%s-%d", f.at.topic, f.at.p)
	st, err := f.waitLeaderOtherThan(ctx, stopped)
	if err != nil {
		return fmt.Sprintf("no other leader of %s to kill at the heal (%v)", name, err)
	}
	node, err := f.n.running(st.Leader)
	if err != nil {
		return fmt.Sprintf("its leader, node %d, not to be killed at the heal: %v", st.Leader, err)
	}
	f.leader = node
	return fmt.Sprintf("node %d, the leader of %s (ISR %s), to be killed as it returns", st.Leader, name, joinIDs(st.ISR))
}

// leaderOf is the partition's state in the newest view the nodes give.
func (f *restartFault) leaderOf(ctx context.Context) (partState, bool) {
	return partition(f.n.e.obs.views(ctx, f.n.e.ids, []string{f.at.topic}), f.at)
}

// waitLeaderOtherThan waits up to 30 s for the partition to be led by a
// node other than id.
func (f *restartFault) waitLeaderOtherThan(ctx context.Context, id int32) (partState, error) {
	var st partState
	err := waitFor(ctx, 30*time.Second, func() bool {
		var ok bool
		st, ok = f.leaderOf(ctx)
		return ok && st.Leader >= 0 && st.Leader != id
	})
	return st, err
}

func (f *restartFault) heal(ctx context.Context) (string, error) {
	if f.leader == nil {
		return "restarted", restart(ctx, f.node)
	}
	// When the leader dies is drawn: just before the node starts, so
	// that the node registers while the controller still counts the
	// dead leader, and fetches from whoever is elected; or the moment it
	// serves again (registered, unfenced, its fetchers just started),
	// when it may have caught up or not.
	before := (f.d.pick>>10)%2 == 0
	when := "as it served"
	if before {
		when = "just before it started"
	} else if err := restart(ctx, f.node); err != nil {
		return "", err
	}
	name := fmt.Sprintf("%s-%d", f.at.topic, f.at.p)
	// Another fault may have moved the leadership meanwhile (--overlap).
	st, ok := f.leaderOf(ctx)
	leads := ok && st.Leader == f.leader.ID
	if leads {
		f.leader.Kill()
	}
	if before {
		if err := restart(ctx, f.node); err != nil {
			if leads {
				err = errors.Join(err, restart(ctx, f.leader))
			}
			return "", err
		}
	}
	if !leads {
		return fmt.Sprintf("restarted; node %d no longer leads %s (leader %d), not killed", f.leader.ID, name, st.Leader), nil
	}
	elected := ""
	if st, err := f.waitLeaderOtherThan(ctx, f.leader.ID); err != nil {
		// Under --overlap the other replicas may be in faults of their
		// own; the restart below ends the wait.
		elected = fmt.Sprintf("no other leader within 30 s (%v)", err)
	} else {
		elected = fmt.Sprintf("node %d elected (ISR %s)", st.Leader, joinIDs(st.ISR))
	}
	if err := restart(ctx, f.leader); err != nil {
		return "", err
	}
	return fmt.Sprintf("restarted; node %d, the leader of %s, killed -9 %s; %s; node %d restarted",
		f.leader.ID, name, when, elected, f.leader.ID), nil
}

// moveFault reassigns the drawn partition (AlterPartitionReassignments)
// and, once the move is done, elects its preferred leader (ElectLeaders).
// With more nodes than replicas, one replica, the leader or a follower as
// drawn, is replaced by a node outside the set: the new one copies the
// log from the leader and joins the ISR before the old one leaves. With
// as many nodes as replicas the set cannot change, so a follower is moved
// to the front, and the election moves the leadership to it. One move in
// three (drawn) kills the leader as soon as the move starts.
type moveFault struct {
	n      *nemesis
	d      draws
	at     tp
	target []int32
	killed *localcluster.Node // the leader, in a move that kills it
}

func (f *moveFault) start(ctx context.Context) (int32, string, error) {
	var err error
	if f.at, err = f.n.claimPart(f.d.part); err != nil {
		return 0, "", err
	}
	st, ok := partition(f.n.e.obs.views(ctx, f.n.e.ids, []string{f.at.topic}), f.at)
	if !ok || st.Leader < 0 || len(st.Order) < 2 {
		return 0, "", fmt.Errorf("%s-%d has no leader with followers", f.at.topic, f.at.p)
	}
	f.target = moveTarget(st.Order, st.Leader, f.n.e.ids, f.d)
	kill := (f.d.pick>>8)%3 == 0
	if kill {
		// Before the move starts: a fault that cannot start leaves
		// nothing to heal.
		if f.killed, err = f.n.running(st.Leader); err != nil {
			return 0, "", err
		}
	}
	var req kadm.AlterPartitionAssignmentsReq
	req.Assign(f.at.topic, f.at.p, f.target)
	// A retriable answer (REQUEST_TIMED_OUT while no controller can be
	// elected, under --overlap) is retried, as an operator would.
	for try := 0; ; try++ {
		var resp kadm.AlterPartitionAssignmentsResponses
		resp, err = f.n.adm.AlterPartitionAssignments(ctx, req)
		if err == nil {
			err = resp.Error()
		}
		if err == nil || !kerr.IsRetriable(err) || try == 5 || ctx.Err() != nil {
			break
		}
		sleep(ctx, time.Second)
	}
	if err != nil {
		return 0, "", fmt.Errorf("reassign %s-%d to %v: %w", f.at.topic, f.at.p, f.target, err)
	}
	detail := fmt.Sprintf("%s-%d reassigned from %s (leader %d) to %s",
		f.at.topic, f.at.p, joinIDs(st.Order), st.Leader, joinIDs(f.target))
	if kill {
		// One move in three loses its leader while the new replicas
		// copy from it: the move must go on under another leader, and
		// the new replicas truncate to that leader's log.
		f.killed.Kill()
		detail += "; the leader killed (kill -9) at once"
	}
	return st.Leader, detail, nil
}

// moveTarget is the drawn new replica list for a partition whose replicas
// are order, led by leader, in a cluster of ids.
func moveTarget(order []int32, leader int32, ids []int32, d draws) []int32 {
	var outside []int32
	for _, id := range ids {
		if !slices.Contains(order, id) {
			outside = append(outside, id)
		}
	}
	target := slices.Clone(order)
	var followers []int
	for i, r := range order {
		if r != leader {
			followers = append(followers, i)
		}
	}
	if len(outside) == 0 {
		// Bring a drawn follower to the front, the rest in their order.
		i := followers[d.pick%len(followers)]
		return append([]int32{order[i]}, slices.Delete(target, i, i+1)...)
	}
	victim := slices.Index(order, leader)
	if d.follower || victim < 0 {
		victim = followers[d.pick%len(followers)]
	}
	target[victim] = outside[(d.pick/len(order))%len(outside)]
	return target
}

// heal restarts a killed leader, waits for the move to finish (every
// node shows the new replica list and no reassignment is left), then
// elects the preferred leader and waits until it leads. A move that never
// ends is a finding.
func (f *moveFault) heal(ctx context.Context) (string, error) {
	done := ""
	if f.killed != nil {
		if err := restart(ctx, f.killed); err != nil {
			return "", err
		}
		done = "old leader restarted; "
	}
	set := kadm.TopicsSet{}
	set.Add(f.at.topic, f.at.p)
	name := fmt.Sprintf("%s-%d", f.at.topic, f.at.p)
	var why string
	err := waitFor(ctx, 90*time.Second, func() bool {
		moving, err := f.n.adm.ListPartitionReassignments(ctx, set)
		if err != nil {
			why = err.Error()
			return false
		}
		if r, ok := moving[f.at.topic][f.at.p]; ok {
			why = fmt.Sprintf("still moving: adding %v, removing %v", r.AddingReplicas, r.RemovingReplicas)
			return false
		}
		vs := f.n.e.obs.views(ctx, f.n.e.ids, []string{f.at.topic})
		if len(vs) < len(f.n.e.ids) {
			why = fmt.Sprintf("%d of %d nodes answer", len(vs), len(f.n.e.ids))
			return false
		}
		for _, v := range vs {
			if st := v.parts[f.at]; !slices.Equal(st.Order, f.target) || !slices.Contains(st.ISR, f.target[0]) {
				why = fmt.Sprintf("node %d shows replicas %v, ISR %v", v.node, st.Order, st.ISR)
				return false
			}
		}
		return true
	})
	if err != nil {
		return "", fmt.Errorf("the move of %s to %v did not finish: %s: %w", name, f.target, why, err)
	}
	want := f.target[0]
	err = waitFor(ctx, 60*time.Second, func() bool {
		res, err := f.n.adm.ElectLeaders(ctx, kadm.ElectPreferredReplica, set)
		if err == nil {
			err = res[f.at.topic][f.at.p].Err
		}
		if err != nil && !errors.Is(err, kerr.ElectionNotNeeded) {
			why = "ElectLeaders: " + err.Error()
			return false
		}
		st, ok := partition(f.n.e.obs.views(ctx, f.n.e.ids, []string{f.at.topic}), f.at)
		why = fmt.Sprintf("leader %d", st.Leader)
		return ok && st.Leader == want
	})
	if err != nil {
		return "", fmt.Errorf("preferred leader %d of %s not elected: %s: %w", want, name, why, err)
	}
	return fmt.Sprintf("%smove done; preferred leader %d elected", done, want), nil
}
