package group

import (
	"context"
	"fmt"

	"github.com/weir-project/weir/internal/waitclock"
)

// How a group's state reaches __consumer_offsets. As in Kafka's
// coordinator, a request appends its records under the group's lock, so
// that the log holds them in the order the group changed, then releases
// the lock while the followers replicate them, and completes (applies
// what the records say, answers the client) once they are committed. A
// completion runs under the group's lock, in the order the records were
// appended, whichever goroutine sees the commit first: two commits of
// one partition end with the later one, and a failed write is skipped
// without reordering the others.
//
// What a completion applies is what the rest of the group sees: an
// offset is fetched only once committed (pending commits are counted,
// as Kafka's pendingOffsetCommits, for OffsetFetch's RequireStable and
// so that expiry leaves them alone), a classic group stays
// CompletingRebalance until the leader's assignment is committed, a
// consumer group's records are applied when committed. Meanwhile the
// group's heartbeats, joins, syncs, commits and fetches go on.
//
// Two kinds of write hold back the changes that depend on them (without
// the lock): a consumer group's state is written from the state the
// previous write leaves (epochs, target assignment), so at most one such
// write is in flight per group (consumerWrite); and a deletion or a
// change of protocol changes what the group is, so every change waits
// for it (barrier). Both are rare next to commits and heartbeats.

// writeKind says which later changes must wait for a write.
type writeKind int

const (
	plainWrite    writeKind = iota // offsets, classic group metadata
	consumerWrite                  // consumer group state (consumer_*.go)
	barrierWrite                   // deletion, or a change between the protocols
)

// pendingWrite is one batch of a group's records, appended and not
// completed yet.
type pendingWrite struct {
	at       Appended
	complete func(err error) // under the group's lock, in log order
	waited   bool            // the wait for its commit ended, with err
	err      error
	done     chan struct{} // closed once complete has run
}

func (w *pendingWrite) completed() bool {
	select {
	case <-w.done:
		return true
	default:
		return false
	}
}

// write appends recs to g's partition (g is locked) and arranges for
// complete to be called, under g's lock and after every earlier write of
// g completed, with nil once the records are committed or with the
// reason they are not (NOT_COORDINATOR once the partition is resigned).
// If the batch is committed at once, complete runs before write returns.
// An error means the write failed at once (see AppendLeader): complete
// is never called and the caller leaves the state as it was.
// Unless the returned write has completed, the caller must hand it to
// wait or waitAsync.
func (c *Coordinator) write(g *group, recs []Record, kind writeKind, complete func(error)) (*pendingWrite, error) {
	a, err := c.plog.AppendLeader(g.partition, recs)
	if err != nil {
		return nil, err
	}
	w := &pendingWrite{at: a, complete: complete, done: make(chan struct{})}
	g.writes = append(g.writes, w)
	switch kind {
	case barrierWrite:
		g.barrier, g.consumerWrite = w, w
	case consumerWrite:
		g.consumerWrite = w
	}
	if a.Committed {
		w.waited = true
		c.completeReady(g)
	}
	return w, nil
}

// completeReady completes, in order, the writes of g at the head of the
// queue whose wait has ended. A completion may append again (a failed
// assignment restarts the rebalance): the queue is re-read every time.
func (c *Coordinator) completeReady(g *group) {
	for len(g.writes) > 0 && g.writes[0].waited {
		w := g.writes[0]
		g.writes[0] = nil
		g.writes = g.writes[1:]
		if g.barrier == w {
			g.barrier = nil
		}
		if g.consumerWrite == w {
			g.consumerWrite = nil
		}
		w.complete(w.err)
		close(w.done)
	}
}

// wait waits for w to complete: called with g locked, it releases the
// lock while the records replicate and returns with it held again, with
// w completed. Anything may have changed in g meanwhile. ctx is the
// request's, for its values only (see awaitCommit).
func (c *Coordinator) wait(ctx context.Context, g *group, w *pendingWrite) {
	if w.completed() {
		return
	}
	g.mu.Unlock()
	err := c.awaitCommit(ctx, g, w.at)
	g.mu.Lock()
	w.waited, w.err = true, err
	c.completeReady(g)
	for !w.completed() {
		// An earlier write of the group is still waiting; its waiter
		// completes this one after it.
		g.mu.Unlock()
		awaitDone(ctx, w)
		g.mu.Lock()
	}
}

// awaitDone waits for w to complete, telling ctx's wait clock: a request
// held behind an earlier write of its group waits for followers as much
// as for its own write (remote time).
func awaitDone(ctx context.Context, w *pendingWrite) {
	defer waitclock.Start(ctx)()
	<-w.done
}

// waitAsync is wait for the callers that must not block (timers, and
// requests answered through a callback): a goroutine waits instead.
func (c *Coordinator) waitAsync(g *group, w *pendingWrite) {
	if w.completed() {
		return
	}
	go func() {
		err := c.awaitCommit(context.Background(), g, w.at)
		g.mu.Lock()
		w.waited, w.err = true, err
		c.completeReady(g)
		c.unlockMaybeForget(g)
	}()
}

// awaitCommit waits, for at most offsets.commit.timeout.ms, for a batch
// of g's partition to commit. A wait cut short because the partition was
// resigned carries NOT_COORDINATOR. g.ctx and g.partition never change,
// so no lock is needed. The wait ends with g.ctx or the timeout, and
// carries req's values: the request that waits, if any, learns how long
// (the broker counts it as its remote time), but its end (a client gone)
// does not cut a commit short.
func (c *Coordinator) awaitCommit(req context.Context, g *group, a Appended) error {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(req), c.cfg.CommitTimeout)
	defer cancel()
	defer context.AfterFunc(g.ctx, cancel)()
	err := c.plog.AwaitCommit(ctx, g.partition, a)
	if err != nil && context.Cause(g.ctx) != nil {
		return fmt.Errorf("%w: %w", context.Cause(g.ctx), err)
	}
	return err
}

// lockGroupIdle is lockGroupID for the requests that change a group: it
// waits (unlocked) while a barrier write of the group is in flight, and
// with consumer also while a consumer group state write is, then looks
// the group up again (it may be gone, or another one). ctx is the
// request's, for its wait clock.
func (c *Coordinator) lockGroupIdle(ctx context.Context, id string, create, allowEmpty, consumer bool) (*group, error) {
	for {
		g, err := c.lockGroupID(id, create, allowEmpty)
		if g == nil || err != nil {
			return g, err
		}
		w := g.barrier
		if w == nil && consumer {
			w = g.consumerWrite
		}
		if w == nil {
			return g, nil
		}
		g.mu.Unlock()
		awaitDone(ctx, w)
	}
}
