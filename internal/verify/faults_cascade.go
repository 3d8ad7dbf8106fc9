package verify

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/weir-project/weir/internal/localcluster"
)

// cascadeNodes is the fewest nodes the cascade fault needs: with RF 3,
// the quorum (every node votes) must outlive two killed followers, or the
// ISR could not shrink without them.
const cascadeNodes = 5

// cascadeFault takes the drawn partition's replicas down one by one, as
// a rack losing power in stages: each follower is killed (kill -9) once
// the leader has shrunk the ISR without the one before it, then the
// leader, the ISR's last member, loses power (what it had not fsynced is
// gone, and the machine restarts). The last follower to leave left an ISR
// already below min.insync.replicas, so it holds every committed record
// (an eligible leader replica, KIP-966); the leader, back after a reboot,
// must not lead with what is left of its log, or acknowledged records are
// lost. At the heal every node killed restarts, all at once.
type cascadeFault struct {
	n      *nemesis
	d      draws
	killed []*localcluster.Node
}

func (f *cascadeFault) start(ctx context.Context) (int32, string, error) {
	at, err := f.n.claimPart(f.d.part)
	if err != nil {
		return 0, "", err
	}
	state := func() (partState, bool) {
		return partition(f.n.e.obs.views(ctx, f.n.e.ids, []string{at.topic}), at)
	}
	st, ok := state()
	if !ok || st.Leader < 0 {
		return 0, "", fmt.Errorf("%s-%d has no leader to aim at", at.topic, at.p)
	}
	var fs []int32
	for _, r := range st.Replicas {
		if r != st.Leader {
			fs = append(fs, r)
		}
	}
	if len(fs) == 0 {
		return 0, "", fmt.Errorf("%s-%d has no follower", at.topic, at.p)
	}
	// Which follower goes first is drawn.
	k := f.d.pick % len(fs)
	fs = append(fs[k:], fs[:k]...)
	for _, id := range fs {
		node, err := f.n.running(id)
		if err != nil {
			return 0, "", f.undo(ctx, err)
		}
		node.Kill()
		f.killed = append(f.killed, node)
		if err := waitFor(ctx, time.Minute, func() bool {
			st, ok := state()
			return ok && st.Leader >= 0 && !slices.Contains(st.ISR, id)
		}); err != nil {
			return 0, "", f.undo(ctx, fmt.Errorf("the ISR of %s-%d still holds killed node %d: %w", at.topic, at.p, id, err))
		}
	}
	st, _ = state()
	leader, err := f.n.running(st.Leader)
	if err != nil {
		return 0, "", f.undo(ctx, fmt.Errorf("leader of %s-%d: %w", at.topic, at.p, err))
	}
	leader.Kill()
	f.killed = append(f.killed, leader)
	lost, err := f.n.damage(leader, f.d, loseUnflushed)
	detail := fmt.Sprintf("followers %s of %s-%d killed one by one as the ISR shrank, then the leader, alone in it (ISR %s)",
		joinIDs(fs), at.topic, at.p, joinIDs(st.ISR))
	if err != nil {
		return 0, "", f.undo(ctx, err)
	}
	return st.Leader, detail + "; " + lost, nil
}

// undo restarts what a start that failed half-way killed: the nemesis
// heals only faults that started.
func (f *cascadeFault) undo(ctx context.Context, err error) error {
	if _, herr := f.heal(ctx); herr != nil {
		return errors.Join(err, herr)
	}
	return err
}

// heal restarts every node killed, all at once: none may serve before a
// quorum of them is back.
func (f *cascadeFault) heal(ctx context.Context) (string, error) {
	errs := make([]error, len(f.killed))
	var wg sync.WaitGroup
	for i, node := range f.killed {
		wg.Go(func() { errs[i] = restart(ctx, node) })
	}
	wg.Wait()
	var ids []int32
	for _, node := range f.killed {
		ids = append(ids, node.ID)
	}
	return "restarted nodes " + joinIDs(ids), errors.Join(errs...)
}
