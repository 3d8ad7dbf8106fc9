package metadata

import (
	"context"
	"fmt"
	"time"

	"github.com/hashicorp/raft"
)

// VerifyLeader confirms that this node still leads the quorum and that
// its image holds every command committed before the call: it commits a
// Raft barrier appended after the call began. An answer a controller
// gives from its image alone (a heartbeat's "unfenced") must not come
// from a leader deposed while it was stopped or cut off, which counts
// itself leader until its lease runs out, nor from one that has not yet
// applied its predecessors' commands: either may not know that the
// broker asking was fenced.
//
// Not raft.VerifyLeader: it counts any heartbeat answer that arrives
// after the call, including one a follower sent before it, such as the
// answers waiting in the socket of a leader resumed after SIGSTOP (and
// it makes the lease check believe them too). A barrier's entry did not
// exist before the call, so no earlier answer acknowledges it.
//
// Concurrent calls share a barrier (package coalesce); a call that
// arrives while one is in flight waits for the next, so each caller's
// barrier was appended after it asked. With heartbeats every broker.heartbeat.interval.ms that is at
// most one entry per heartbeat, far fewer when brokers beat together.
func (c *Controller) VerifyLeader(ctx context.Context) error {
	if err := c.checkLeader(); err != nil {
		return err
	}
	_, err := c.checks.Do(ctx)
	return err
}

// checkTimeout bounds one barrier. A leader that cannot reach a quorum
// fails it sooner, when it steps down after its lease.
const checkTimeout = 10 * time.Second

// commitBarrier commits one barrier: VerifyLeader's round (c.checks).
// Once the controller is closed, await fails at once.
func (c *Controller) commitBarrier() error {
	ctx, cancel := context.WithTimeout(context.Background(), checkTimeout)
	defer cancel()
	if err := c.await(ctx, func() raft.Future { return c.raft.Barrier(checkTimeout) }); err != nil {
		return fmt.Errorf("commit a barrier: %w", err)
	}
	return nil
}
