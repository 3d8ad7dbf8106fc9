package metadata

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/hashicorp/raft"

	"github.com/weir-project/weir/internal/waitclock"
)

// leaderPoll is how often WaitLeader re-checks Raft state; raft offers no
// blocking "leader known" call for followers.
const leaderPoll = 10 * time.Millisecond

// watchLeadership records the cluster id as soon as this node leads a
// cluster that has none yet, so a fresh cluster gets its id without anyone
// having to ask, and aborts the topic creations earlier leaders left
// pending (see sweepPending): on taking over, when asked, and every
// sweepInterval.
func (c *Controller) watchLeadership(ctx context.Context) {
	defer c.bg.Done()
	tick := time.NewTicker(sweepInterval)
	defer tick.Stop()
	sweep := func(full bool) {
		if err := c.sweepPending(ctx, full); err != nil && ctx.Err() == nil {
			c.log.Warn("abort pending topic creations", "err", err)
		}
	}
	for {
		select {
		case <-ctx.Done():
			return
		case leader := <-c.raft.LeaderCh():
			if !leader {
				continue
			}
			if err := c.ensureClusterID(ctx); err != nil && ctx.Err() == nil {
				c.log.Warn("record cluster id", "err", err)
			}
			if err := c.ensureStaticDefaults(ctx); err != nil && ctx.Err() == nil {
				c.log.Warn("record static defaults", "err", err)
			}
			sweep(true)
		case <-c.sweep:
			sweep(true) // the orphan may not have applied yet
		case <-tick.C:
			sweep(false)
		}
	}
}

// ensureClusterID proposes the bootstrap command if the image has no
// cluster id after this leader has applied everything before it.
func (c *Controller) ensureClusterID(ctx context.Context) error {
	if err := c.await(ctx, func() raft.Future { return c.raft.Barrier(timeoutOf(ctx)) }); err != nil {
		return fmt.Errorf("barrier: %w", err)
	}
	if c.Image().ClusterID() != "" {
		return nil
	}
	id := c.cfg.ClusterID
	if id == "" {
		u, err := newUUID()
		if err != nil {
			return err
		}
		id = FormatUUID(u)
	}
	_, err := c.propose(ctx, cmdBootstrap, bootstrapCmd{ClusterID: id, MinISR: c.cfg.DefaultMinISR})
	return err
}

// ensureStaticDefaults records this controller's static
// min.insync.replicas when it leads and the image holds another (after
// ensureClusterID's barrier, so the image is the committed one).
func (c *Controller) ensureStaticDefaults(ctx context.Context) error {
	im := c.Image()
	if c.cfg.DefaultMinISR < 1 || im.ClusterID() == "" || im.defaultMinISR == c.cfg.DefaultMinISR {
		return nil
	}
	c.log.Info("min.insync.replicas default changed", "from", im.defaultMinISR, "to", c.cfg.DefaultMinISR)
	_, err := c.propose(ctx, cmdStaticDefaults, staticDefaultsCmd{MinISR: c.cfg.DefaultMinISR})
	return err
}

// WaitLeader returns once a Raft leader exists, this node's state machine
// has caught up with it, and the cluster id is recorded.
func (c *Controller) WaitLeader(ctx context.Context) error {
	t := time.NewTicker(leaderPoll)
	defer t.Stop()
	for {
		if c.raft.State() == raft.Leader {
			err := c.ensureClusterID(ctx)
			if err == nil {
				return nil
			}
			if !errors.Is(err, ErrNotController) {
				return fmt.Errorf("wait for metadata leader: %w", err)
			}
		} else if _, _, ok := c.Leader(); ok {
			commit := c.raft.CommitIndex()
			if commit > 0 && c.raft.AppliedIndex() >= commit && c.fsmCaughtUp(commit) && c.Image().ClusterID() != "" {
				return nil
			}
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("wait for metadata leader: %w", ctx.Err())
		case <-c.closed:
			return ErrClosed
		case <-t.C:
		}
	}
}

// fsmCaughtUp reports whether the state machine holds every command up to
// index. raft's AppliedIndex counts entries handed to the FSM goroutine,
// not applied yet, so a follower must look for itself: no command may lie
// between the image's index (the last command applied) and index. The
// entries in between are usually none or a few no-ops and configuration
// changes, which the FSM never sees.
func (c *Controller) fsmCaughtUp(index uint64) bool {
	for i := index; i > c.Image().Index(); i-- {
		var l raft.Log
		switch err := c.store.GetLog(i, &l); {
		case errors.Is(err, raft.ErrLogNotFound):
			continue // compacted: in the snapshot the FSM restored
		case err != nil:
			return false
		case l.Type == raft.LogCommand:
			return false
		}
	}
	return true
}

// CommitIndex is the index of the last metadata entry this node knows to
// be committed. Only the active controller's is current: a follower learns
// of a commit with the leader's next message.
func (c *Controller) CommitIndex() uint64 { return c.raft.CommitIndex() }

// CaughtUpTo reports whether this node's image holds every command up to
// index (a commit index, the active controller's): the entries are in the
// local log and none of them is a command still to apply. Entries missing
// from the local log count as not caught up.
func (c *Controller) CaughtUpTo(index uint64) bool {
	if c.Image().Index() >= index {
		return true
	}
	// The store's last index, not raft's: raft raises its own after the
	// store returns, and LogGrown wakes waiters in between.
	last, err := c.store.LastIndex()
	return err == nil && last >= index && c.fsmCaughtUp(index)
}

// timeoutOf converts ctx's deadline into the enqueue timeout raft wants
// (0 = none).
func timeoutOf(ctx context.Context) time.Duration {
	if d, ok := ctx.Deadline(); ok {
		if left := time.Until(d); left > 0 {
			return left
		}
		return time.Nanosecond
	}
	return 0
}

// await starts one raft operation with start and waits for its outcome
// or ctx. On ctx expiry the operation may still complete later; the
// caller reports the outcome as unknown. Once Close has begun, nothing
// new starts (ErrClosed).
func (c *Controller) await(ctx context.Context, start func() raft.Future) error {
	c.futMu.Lock()
	select {
	case <-c.closed:
		c.futMu.Unlock()
		return fmt.Errorf("%w: controller stopping", ErrClosed)
	default:
	}
	c.futures.Add(1)
	c.futMu.Unlock()
	f := start()
	done := make(chan error, 1)
	go func() {
		defer c.futures.Done()
		done <- f.Error()
	}()
	// The quorum's answer is the request's remote time (a controller's
	// CreateTopics waits for it as a forwarding broker waits for the
	// controller).
	defer waitclock.Start(ctx)()
	select {
	case err := <-done:
		return mapRaftErr(err)
	case <-ctx.Done():
		return ctx.Err()
	}
}

// futuresGrace bounds Close's wait for the raft operations in flight.
// With raft running each ends soon: applied, or failed when a leader
// that lost its quorum steps down after its lease.
const futuresGrace = 5 * time.Second

// drainFutures waits, before raft shuts down, for the operations await
// started (their callers may have given up already). A future raft has
// committed but not yet applied is answered only while its state
// machine goroutine runs; shut down first, raft drops it unanswered.
func (c *Controller) drainFutures() {
	done := make(chan struct{})
	go func() {
		c.futures.Wait()
		close(done)
	}()
	select {
	case <-done:
	case <-time.After(futuresGrace):
		c.log.Warn("raft operations still in flight at close; shutting raft down anyway", "grace", futuresGrace)
	}
}

// mapRaftErr turns raft's errors into ours.
func mapRaftErr(err error) error {
	switch {
	case err == nil:
		return nil
	case errors.Is(err, raft.ErrNotLeader), errors.Is(err, raft.ErrLeadershipLost),
		errors.Is(err, raft.ErrLeadershipTransferInProgress), errors.Is(err, raft.ErrAbortedByRestore):
		return fmt.Errorf("%w: %v", ErrNotController, err)
	case errors.Is(err, raft.ErrRaftShutdown):
		return fmt.Errorf("%w: %v", ErrClosed, err)
	case errors.Is(err, raft.ErrEnqueueTimeout):
		return fmt.Errorf("%w: %v", context.DeadlineExceeded, err)
	default:
		return err
	}
}

// checkLeader fails fast when this node cannot accept changes.
func (c *Controller) checkLeader() error {
	select {
	case <-c.closed:
		return ErrClosed
	default:
	}
	if c.raft.State() != raft.Leader {
		if id, addr, ok := c.Leader(); ok {
			return fmt.Errorf("%w: the controller is node %d at %s", ErrNotController, id, addr)
		}
		return fmt.Errorf("%w: no controller elected yet", ErrNotController)
	}
	return nil
}

// propose replicates one command and returns the state machine's result,
// including its rejection of the command.
func (c *Controller) propose(ctx context.Context, t cmdType, payload any) (applyResult, error) {
	if err := c.checkLeader(); err != nil {
		return applyResult{}, err
	}
	data, err := encodeCommand(t, payload)
	if err != nil {
		return applyResult{}, err
	}
	var f raft.ApplyFuture
	if err := c.await(ctx, func() raft.Future {
		f = c.raft.Apply(data, timeoutOf(ctx))
		return f
	}); err != nil {
		return applyResult{}, fmt.Errorf("replicate %s: %w", t, err)
	}
	res, ok := f.Response().(applyResult)
	if !ok {
		return applyResult{}, fmt.Errorf("replicate %s: unexpected state machine response %T", t, f.Response())
	}
	select {
	case c.push <- struct{}{}:
	default: // one is asked for already
	}
	return res, res.err
}

// pushCommits tells the followers of each command committed as soon as
// it is. Raft's followers learn the commit index from the leader's next
// AppendEntries, which without new entries comes only after the commit
// timeout (50-100 ms): that long, every other broker would go on
// answering from metadata the controller has already replaced, a new
// leader refusing the clients sent to it among them. A barrier is such an
// entry, carrying the commit index at once. Commands committed while one
// is out share the next; there is no barrier without a command, so an
// idle cluster sends nothing more (a commit timeout of 5 ms instead cost
// a 3-node cluster 12% of a core at idle, against 3%).
func (c *Controller) pushCommits(ctx context.Context) {
	defer c.bg.Done()
	for {
		select {
		case <-ctx.Done():
			return
		case <-c.push:
		}
		if c.raft.State() != raft.Leader {
			continue
		}
		// Followers learn of the command when the barrier is sent;
		// waiting for it to apply keeps one barrier out at a time.
		if err := c.await(ctx, func() raft.Future { return c.raft.Barrier(pushTimeout) }); err != nil && ctx.Err() == nil {
			c.log.Debug("push the commit index to followers", "err", err)
		}
	}
}

// pushTimeout bounds a commit push's wait to be enqueued.
const pushTimeout = 5 * time.Second

// TransferLeadership hands Raft leadership to another voter and waits up
// to timeout for it: a controller stopping on purpose spares the quorum
// an election timeout.
func (c *Controller) TransferLeadership(timeout time.Duration) error {
	if err := c.checkLeader(); err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	return c.await(ctx, c.raft.LeadershipTransfer)
}
