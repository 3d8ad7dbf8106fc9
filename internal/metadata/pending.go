package metadata

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/hashicorp/raft"
)

// An atomic topic creation (CreateTopic with Prepare) takes three commands:
// create_topic with Pending set, then activate_topic once Prepare
// succeeded, or abort_topic once it failed. Until one of the last two
// applies, the topic reserves its name and partitions but no reader sees
// it. A creator can die or lose the leadership in between; sweepPending,
// run by every new leader and periodically, aborts the pending topics no
// live creator is preparing, so a crash leaves nothing half-created.

// sweepInterval is how often the leader looks for orphaned pending topics
// besides when it takes over and when an abort failed.
const sweepInterval = 10 * time.Second

// createPrepared runs the three steps for cmd (which has Pending set).
func (c *Controller) createPrepared(ctx context.Context, cmd createTopicCmd, prepare func(context.Context, *Topic) error) (*Topic, error) {
	c.setPreparing(cmd.ID, true)
	defer c.setPreparing(cmd.ID, false)
	res, err := c.propose(ctx, cmdCreateTopic, cmd)
	if err != nil {
		// The command may still apply (the wait timed out, or it went
		// to a new leader): a sweep aborts it then, once we let go.
		c.setPreparing(cmd.ID, false)
		c.requestSweep()
		return nil, fmt.Errorf("create topic %q: %w", cmd.Name, err)
	}
	if err := prepare(context.WithoutCancel(ctx), res.topic); err != nil {
		c.abortPending(ctx, cmd.Name, cmd.ID)
		return nil, fmt.Errorf("create topic %q: %w", cmd.Name, err)
	}
	// However long Prepare took, the activation gets its own time.
	actx, cancel := context.WithTimeout(context.WithoutCancel(ctx), c.cfg.PendingTimeout)
	defer cancel()
	act, err := c.propose(actx, cmdActivateTopic, topicRefCmd{Name: cmd.Name, ID: cmd.ID})
	if err == nil {
		return act.topic, nil
	}
	// The activation's outcome is unknown (it may still apply). An abort
	// after it in the log settles it: refused if the activation applied,
	// and then the topic is ours.
	if c.abortPending(ctx, cmd.Name, cmd.ID) {
		if t := c.Image().TopicByID(cmd.ID); t != nil && t.Name == cmd.Name {
			return t, nil
		}
	}
	return nil, fmt.Errorf("create topic %q: activate: %w", cmd.Name, err)
}

// abortPending removes a pending topic, with its own time whatever ctx's
// deadline, and reports whether the topic's fate is now known (aborted,
// or found not pending); if not, it leaves the topic to a sweep.
func (c *Controller) abortPending(ctx context.Context, name string, id [16]byte) bool {
	actx, cancel := context.WithTimeout(context.WithoutCancel(ctx), c.cfg.PendingTimeout)
	defer cancel()
	_, err := c.propose(actx, cmdAbortTopic, topicRefCmd{Name: name, ID: id})
	if err == nil || errors.Is(err, ErrInvalidRequest) || errors.Is(err, ErrUnknownTopic) {
		return true // aborted, or not pending (any more)
	}
	c.log.Warn("abort the creation of a topic; retrying later", "topic", name, "err", err)
	c.setPreparing(id, false)
	c.requestSweep()
	return false
}

func (c *Controller) setPreparing(id [16]byte, on bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if on {
		c.preparing[id] = true
	} else {
		delete(c.preparing, id)
	}
}

// orphans lists the pending topics of the current image that no
// CreateTopic call of this process is preparing.
func (c *Controller) orphans() []*Topic {
	c.mu.Lock()
	defer c.mu.Unlock()
	var out []*Topic
	for _, t := range c.Image().TopicsWithPending() {
		if t.Pending && !c.preparing[t.ID] {
			out = append(out, t)
		}
	}
	return out
}

// isOrphan reports whether pending topic t has no creator preparing it in
// this process: a creation cut short by a failover, which a sweep aborts.
func (c *Controller) isOrphan(t *Topic) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return !c.preparing[t.ID]
}

func (c *Controller) requestSweep() {
	select {
	case c.sweep <- struct{}{}:
	default: // one is already due
	}
}

// sweepPending aborts orphaned pending topics. It waits for a barrier
// first, so that every command an earlier leader (or an earlier, timed-out
// wait of ours) proposed has applied: a creator registers its topic as
// preparing before proposing it, so a pending topic seen after that is
// either being prepared here or orphaned. full skips the cheap check for
// orphans in the current image, for a new leader whose image may lag.
func (c *Controller) sweepPending(ctx context.Context, full bool) error {
	if c.raft.State() != raft.Leader || (!full && len(c.orphans()) == 0) {
		return nil
	}
	if err := c.await(ctx, func() raft.Future { return c.raft.Barrier(timeoutOf(ctx)) }); err != nil {
		return fmt.Errorf("barrier: %w", err)
	}
	var errs []error
	for _, t := range c.orphans() {
		c.log.Warn("aborting the creation of a topic its creator left pending", "topic", t.Name)
		_, err := c.propose(ctx, cmdAbortTopic, topicRefCmd{Name: t.Name, ID: t.ID})
		if err != nil && !errors.Is(err, ErrInvalidRequest) && !errors.Is(err, ErrUnknownTopic) {
			errs = append(errs, fmt.Errorf("abort topic %q: %w", t.Name, err))
		}
	}
	return errors.Join(errs...)
}
