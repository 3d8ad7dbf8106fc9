package group

import (
	"context"
	"log/slog"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/weir-project/weir/internal/waitclock"
)

// SyncRequest is a SyncGroup, version-independent.
type SyncRequest struct {
	Group        string
	MemberID     string
	InstanceID   string
	Generation   int32
	ProtocolType string // "" = not checked (before v5)
	Protocol     string // "" = not checked (before v5)
	// Assignments is the leader's assignment per member id (empty for
	// followers).
	Assignments map[string][]byte
}

// SyncResult answers a SyncGroup.
type SyncResult struct {
	Err          *kerr.Error
	ProtocolType string
	Protocol     string
	Assignment   []byte
}

// Sync handles a SyncGroup: followers wait for the leader's assignment,
// the leader for it to be written. The wait is told to ctx's wait clock
// (remote time, as Kafka counts a SyncGroup held for the group).
func (c *Coordinator) Sync(ctx context.Context, req SyncRequest) SyncResult {
	ch := make(chan SyncResult, 1)
	c.sync(req, func(r SyncResult) { ch <- r })
	defer waitclock.Start(ctx)()
	select {
	case r := <-ch:
		return r
	case <-ctx.Done():
		return SyncResult{Err: kerr.RebalanceInProgress}
	}
}

// sync is Sync with a callback (called once, under the group's lock).
func (c *Coordinator) sync(req SyncRequest, cb func(SyncResult)) {
	fail := func(err *kerr.Error) { cb(SyncResult{Err: err}) }
	g, err := c.lockGroup(req.Group, false)
	if err != nil {
		fail(asKerr(err))
		return
	}
	if g == nil {
		fail(kerr.UnknownMemberID)
		return
	}
	defer g.mu.Unlock()
	if g.staticFenced(req.MemberID, req.InstanceID) {
		fail(kerr.FencedInstanceID)
		return
	}
	m := g.members[req.MemberID]
	switch {
	case m == nil:
		fail(kerr.UnknownMemberID)
		return
	case req.Generation != g.generation:
		fail(kerr.IllegalGeneration)
		return
	case req.ProtocolType != "" && req.ProtocolType != g.protocolType,
		req.Protocol != "" && req.Protocol != g.protocol:
		fail(kerr.InconsistentGroupProtocol)
		return
	}
	switch g.state {
	case PreparingRebalance:
		fail(kerr.RebalanceInProgress)
	case CompletingRebalance:
		c.removePendingSync(g, m.id)
		if m.syncCB != nil {
			// A second SyncGroup while the first still waits (for the
			// leader, or for the assignment to commit): answer the
			// first so that nothing leaks.
			m.syncCB(SyncResult{Err: kerr.RebalanceInProgress})
		}
		m.syncCB = cb
		c.scheduleHeartbeat(g, m)
		if m.id == g.leader {
			c.completeSync(g, req.Assignments)
		}
	case Stable:
		c.removePendingSync(g, m.id)
		c.scheduleHeartbeat(g, m)
		cb(SyncResult{ProtocolType: g.protocolType, Protocol: g.protocol, Assignment: m.assignment})
	default:
		fail(kerr.UnknownMemberID)
	}
}

// completeSync stores the leader's assignment and, once it is committed,
// hands every waiting member its part; the group is then Stable. Until
// then the group stays CompletingRebalance (heartbeats go on, members'
// SyncGroups wait), as in Kafka. If the write fails the members are told
// to rejoin. A completion finding the group moved on (a member left or
// rejoined, the partition was resigned) does nothing: the waiting
// members have been answered already.
func (c *Coordinator) completeSync(g *group, assignments map[string][]byte) {
	gen := g.generation
	if g.syncStoreGen == gen {
		return // the leader synced again while its first assignment is stored
	}
	failed := func(err error) {
		c.log.Warn("store group assignment", slog.String("group", g.id), slog.Int("generation", int(gen)), slog.Any("err", err))
		c.propagateAssignmentError(g, storeError(err))
		c.prepareRebalance(g)
	}
	g.syncStoreGen = gen
	w, err := c.storeGroup(g, assignments, func(err error) {
		if g.syncStoreGen == gen {
			g.syncStoreGen = 0
		}
		if g.state != CompletingRebalance || g.generation != gen {
			return
		}
		if err != nil {
			failed(err)
			return
		}
		c.setAssignment(g, assignments)
	})
	if err != nil {
		g.syncStoreGen = 0
		failed(err)
		return
	}
	c.waitAsync(g, w)
}

// setAssignment makes g Stable with the given (committed) assignment and
// answers the members waiting in SyncGroup.
func (c *Coordinator) setAssignment(g *group, assignments map[string][]byte) {
	for _, m := range g.members {
		m.assignment = assignments[m.id]
		if m.assignment == nil {
			m.assignment = []byte{}
		}
	}
	g.transition(Stable, c.clock.Now())
	for _, m := range g.members {
		if m.syncCB != nil {
			cb := m.syncCB
			m.syncCB = nil
			cb(SyncResult{ProtocolType: g.protocolType, Protocol: g.protocol, Assignment: m.assignment})
		}
	}
}

// schedulePendingSync starts waiting for every member of the new
// generation to sync. One that heartbeats but never syncs would otherwise
// stay in the group with no assignment (or, as the leader, hold the
// group in CompletingRebalance); Kafka removes such members when the
// rebalance timeout passes.
func (c *Coordinator) schedulePendingSync(g *group) {
	c.stopPendingSync(g)
	for _, id := range g.order {
		g.pendingSync[id] = true
	}
	seq := g.syncSeq
	g.syncTimer = c.clock.AfterFunc(g.maxRebalanceTimeout(), func() { c.onPendingSyncExpired(g, seq) })
}

// stopPendingSync forgets the pending syncs (the group is rebalancing
// again, or going away).
func (c *Coordinator) stopPendingSync(g *group) {
	if g.syncTimer != nil {
		g.syncTimer.Stop()
		g.syncTimer = nil
	}
	g.syncSeq++
	clear(g.pendingSync)
}

// removePendingSync records that member id synced.
func (c *Coordinator) removePendingSync(g *group, id string) {
	delete(g.pendingSync, id)
	if len(g.pendingSync) == 0 {
		c.stopPendingSync(g)
	}
}

// onPendingSyncExpired removes the members that did not sync within the
// rebalance timeout, and rebalances the group without them.
func (c *Coordinator) onPendingSyncExpired(g *group, seq uint64) {
	g.mu.Lock()
	defer c.unlockMaybeForget(g)
	if g.syncSeq != seq || (g.state != CompletingRebalance && g.state != Stable) || len(g.pendingSync) == 0 {
		return
	}
	for _, id := range append([]string(nil), g.order...) {
		if !g.pendingSync[id] {
			continue
		}
		m := g.members[id]
		c.log.Info("member removed from group", slog.String("group", g.id), slog.String("member", id), slog.String("reason", "no SyncGroup within the rebalance timeout"))
		if m.joinCB != nil {
			m.joinCB(JoinResult{Err: kerr.UnknownMemberID, MemberID: id, Generation: -1})
			m.joinCB = nil
		}
		g.removeMember(id)
	}
	c.prepareRebalance(g)
}

// propagateAssignmentError answers every waiting SyncGroup with err and
// clears the assignments (the group is leaving CompletingRebalance).
func (c *Coordinator) propagateAssignmentError(g *group, err *kerr.Error) {
	for _, m := range g.members {
		m.assignment = nil
		if m.syncCB != nil {
			cb := m.syncCB
			m.syncCB = nil
			cb(SyncResult{Err: err})
		}
	}
}

// HeartbeatRequest is a Heartbeat, version-independent.
type HeartbeatRequest struct {
	Group      string
	MemberID   string
	InstanceID string
	Generation int32
}

// Heartbeat keeps a member's session alive. REBALANCE_IN_PROGRESS tells
// the member to rejoin.
func (c *Coordinator) Heartbeat(req HeartbeatRequest) error {
	g, err := c.lockGroup(req.Group, false)
	if err != nil {
		return err
	}
	if g == nil {
		return kerr.UnknownMemberID
	}
	defer g.mu.Unlock()
	if g.staticFenced(req.MemberID, req.InstanceID) {
		return kerr.FencedInstanceID
	}
	m := g.members[req.MemberID]
	switch {
	case m == nil:
		return kerr.UnknownMemberID
	case req.Generation != g.generation:
		return kerr.IllegalGeneration
	}
	switch g.state {
	case CompletingRebalance, Stable:
		c.scheduleHeartbeat(g, m)
		return nil
	case PreparingRebalance:
		c.scheduleHeartbeat(g, m)
		return kerr.RebalanceInProgress
	default:
		return kerr.UnknownMemberID
	}
}

// LeavingMember is one member of a LeaveGroup (v3+ may name several; a
// static member may be named by instance id alone).
type LeavingMember struct {
	MemberID   string
	InstanceID string
}

// Leave removes members from the group, which rebalances. It returns one
// error per member (nil = left) and the group-level error.
func (c *Coordinator) Leave(groupID string, members []LeavingMember) ([]error, error) {
	errs := make([]error, len(members))
	g, err := c.lockGroup(groupID, false)
	if err != nil {
		return errs, err
	}
	if g == nil {
		for i := range errs {
			errs[i] = kerr.UnknownMemberID
		}
		return errs, nil
	}
	defer c.unlockMaybeForget(g)
	for i, lm := range members {
		errs[i] = c.leaveOne(g, lm)
	}
	return errs, nil
}

func (c *Coordinator) leaveOne(g *group, lm LeavingMember) error {
	id := lm.MemberID
	if lm.InstanceID != "" {
		owner, ok := g.static[lm.InstanceID]
		switch {
		case !ok:
			return kerr.UnknownMemberID
		case id != "" && owner != id:
			return kerr.FencedInstanceID
		}
		id = owner
	} else if t, ok := g.pending[id]; ok {
		t.Stop()
		delete(g.pending, id)
		c.tryCompleteJoin(g)
		return nil
	}
	m := g.members[id]
	if m == nil {
		return kerr.UnknownMemberID
	}
	c.removeMemberAndUpdate(g, m, "left the group")
	return nil
}

// scheduleHeartbeat (re)starts m's session timer.
func (c *Coordinator) scheduleHeartbeat(g *group, m *member) {
	if m.hbTimer != nil {
		m.hbTimer.Stop()
	}
	m.hbSeq++
	seq := m.hbSeq
	m.hbTimer = c.clock.AfterFunc(m.sessionTimeout, func() { c.onSessionExpired(g, m, seq) })
}

// onSessionExpired removes a member that stopped heartbeating, unless it
// is waiting in JoinGroup or SyncGroup (its request is its heartbeat).
func (c *Coordinator) onSessionExpired(g *group, m *member, seq uint64) {
	g.mu.Lock()
	defer c.unlockMaybeForget(g)
	if g.state == Dead || m.hbSeq != seq || g.members[m.id] != m {
		return
	}
	if m.joinCB != nil || m.syncCB != nil {
		c.scheduleHeartbeat(g, m)
		return
	}
	c.removeMemberAndUpdate(g, m, "session timeout")
}

// removeMemberAndUpdate removes m and rebalances the group.
func (c *Coordinator) removeMemberAndUpdate(g *group, m *member, reason string) {
	c.log.Info("member removed from group", slog.String("group", g.id), slog.String("member", m.id), slog.String("reason", reason))
	if m.joinCB != nil {
		m.joinCB(JoinResult{Err: kerr.UnknownMemberID, MemberID: m.id, Generation: -1})
		m.joinCB = nil
	}
	if m.syncCB != nil {
		m.syncCB(SyncResult{Err: kerr.UnknownMemberID})
		m.syncCB = nil
	}
	g.removeMember(m.id)
	switch g.state {
	case Stable, CompletingRebalance:
		c.prepareRebalance(g)
	case PreparingRebalance:
		c.tryCompleteJoin(g)
	}
}
