package metadata

import (
	"context"
	"fmt"
	"sync"
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
// Concurrent calls share a barrier; a call that arrives while one is in
// flight waits for the next, so each caller's barrier was appended after
// it asked. With heartbeats every broker.heartbeat.interval.ms that is at
// most one entry per heartbeat, far fewer when brokers beat together.
func (c *Controller) VerifyLeader(ctx context.Context) error {
	if err := c.checkLeader(); err != nil {
		return err
	}
	r := c.checks.join(c.runChecks)
	select {
	case <-r.done:
		return r.err
	case <-ctx.Done():
		return ctx.Err()
	}
}

// leaderChecks is VerifyLeader's queue: the round new callers wait for,
// and whether a goroutine runs rounds.
type leaderChecks struct {
	mu      sync.Mutex
	next    *checkRound
	running bool
}

type checkRound struct {
	done chan struct{}
	err  error // set before done is closed
}

// join returns the round that starts next, starting run if no goroutine
// runs rounds.
func (q *leaderChecks) join(run func()) *checkRound {
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.next == nil {
		q.next = &checkRound{done: make(chan struct{})}
	}
	if !q.running {
		q.running = true
		go run()
	}
	return q.next
}

// take hands over the next round, or ends the runner when none waits.
func (q *leaderChecks) take() *checkRound {
	q.mu.Lock()
	defer q.mu.Unlock()
	r := q.next
	q.next = nil
	if r == nil {
		q.running = false
	}
	return r
}

// checkTimeout bounds one barrier. A leader that cannot reach a quorum
// fails it sooner, when it steps down after its lease.
const checkTimeout = 10 * time.Second

// runChecks commits one barrier per round until no caller waits. Once
// the controller is closed, await fails every round at once.
func (c *Controller) runChecks() {
	for r := c.checks.take(); r != nil; r = c.checks.take() {
		ctx, cancel := context.WithTimeout(context.Background(), checkTimeout)
		if err := c.await(ctx, func() raft.Future { return c.raft.Barrier(checkTimeout) }); err != nil {
			r.err = fmt.Errorf("commit a barrier: %w", err)
		}
		cancel()
		close(r.done)
	}
}
