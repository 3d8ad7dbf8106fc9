package group

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/weir-project/weir/internal/waitclock"
)

// JoinRequest is a JoinGroup, version-independent.
type JoinRequest struct {
	Group            string
	MemberID         string // "" = a new member
	InstanceID       string // "" = dynamic membership
	ClientID         string
	ClientHost       string
	SessionTimeout   time.Duration
	RebalanceTimeout time.Duration
	ProtocolType     string
	Protocols        []Protocol
	// RequireKnownMemberID: JoinGroup v4+, where a new dynamic member is
	// first given its id with MEMBER_ID_REQUIRED and must join again.
	RequireKnownMemberID bool
}

// JoinMember is one member as the leader sees it in its JoinGroup answer.
type JoinMember struct {
	MemberID   string
	InstanceID string
	Metadata   []byte // subscription for the selected protocol
}

// JoinResult answers a JoinGroup.
type JoinResult struct {
	Err          *kerr.Error // nil = success
	MemberID     string
	Generation   int32
	ProtocolType string
	Protocol     string
	Leader       string
	Members      []JoinMember // the leader's only
	// SkipAssignment: the leader of a stable group rejoined without a
	// change (a restarted static leader); it must not reassign (KIP-814).
	SkipAssignment bool
}

// Join handles a JoinGroup: it returns when the rebalance it takes part
// in completes, or when ctx ends (the connection went away). Its wait for
// the rest of the group is told to ctx's wait clock: Kafka counts a
// JoinGroup held until the group is ready (its DelayedJoin) as remote
// time.
func (c *Coordinator) Join(ctx context.Context, req JoinRequest) JoinResult {
	ch := make(chan JoinResult, 1)
	c.join(ctx, req, func(r JoinResult) { ch <- r })
	defer waitclock.Start(ctx)()
	select {
	case r := <-ch:
		return r
	case <-ctx.Done():
		return JoinResult{Err: kerr.RebalanceInProgress, MemberID: req.MemberID, Generation: -1}
	}
}

// join is Join with a callback, which is called exactly once, possibly
// before join returns, always with the group's lock held: it must not
// block. ctx is the request's, for its wait clock.
func (c *Coordinator) join(ctx context.Context, req JoinRequest, cb func(JoinResult)) {
	fail := func(err *kerr.Error) {
		cb(JoinResult{Err: err, MemberID: req.MemberID, Generation: -1})
	}
	if req.Group == "" {
		fail(kerr.InvalidGroupID)
		return
	}
	if req.SessionTimeout < c.cfg.MinSessionTimeout || req.SessionTimeout > c.cfg.MaxSessionTimeout {
		fail(kerr.InvalidSessionTimeout)
		return
	}
	for {
		// Waiting for a consumer group's state to settle: converting it
		// writes records computed from it.
		g, err := c.lockGroupIdle(ctx, req.Group, req.MemberID == "", false, true)
		if err != nil {
			fail(asKerr(err))
			return
		}
		if g == nil {
			fail(kerr.UnknownMemberID)
			return
		}
		if g.consumer == nil {
			c.joinLocked(g, req, cb)
			c.unlockMaybeForget(g)
			return
		}
		kerrErr := c.consumerToClassic(ctx, g)
		c.unlockMaybeForget(g)
		if kerrErr != nil {
			fail(kerrErr)
			return
		}
		// Converted: look again, the group may have changed meanwhile.
	}
}

// joinLocked is join on the classic group g, locked.
func (c *Coordinator) joinLocked(g *group, req JoinRequest, cb func(JoinResult)) {
	if !g.supportsProtocols(req.ProtocolType, req.Protocols) {
		cb(JoinResult{Err: kerr.InconsistentGroupProtocol, MemberID: req.MemberID, Generation: -1})
		return
	}
	if req.MemberID == "" {
		c.joinNewMember(g, req, cb)
	} else {
		c.joinKnownMember(g, req, cb)
	}
}

func (c *Coordinator) joinNewMember(g *group, req JoinRequest, cb func(JoinResult)) {
	id := req.ClientID + "-" + newUUID()
	switch {
	case req.InstanceID != "" && g.static[req.InstanceID] != "":
		c.replaceStaticMember(g, g.static[req.InstanceID], id, req, cb)
	case req.InstanceID == "" && req.RequireKnownMemberID:
		// KIP-394: the member is remembered only briefly, so a client
		// that never comes back does not hold up rebalances.
		g.pending[id] = c.clock.AfterFunc(req.SessionTimeout, func() { c.expirePending(g, id) })
		cb(JoinResult{Err: kerr.MemberIDRequired, MemberID: id, Generation: -1})
	default:
		c.addMemberAndRebalance(g, id, req, cb)
	}
}

func (c *Coordinator) joinKnownMember(g *group, req JoinRequest, cb func(JoinResult)) {
	if t, ok := g.pending[req.MemberID]; ok {
		t.Stop()
		delete(g.pending, req.MemberID)
		c.addMemberAndRebalance(g, req.MemberID, req, cb)
		return
	}
	if g.staticFenced(req.MemberID, req.InstanceID) {
		cb(JoinResult{Err: kerr.FencedInstanceID, MemberID: req.MemberID, Generation: -1})
		return
	}
	m := g.members[req.MemberID]
	if m == nil {
		cb(JoinResult{Err: kerr.UnknownMemberID, MemberID: req.MemberID, Generation: -1})
		return
	}
	switch g.state {
	case PreparingRebalance:
		c.updateMemberAndRebalance(g, m, req, cb)
	case CompletingRebalance:
		if m.protocolsEqual(req.Protocols) {
			// It lost the answer to its join: give it again.
			cb(c.currentResult(g, m))
			return
		}
		c.updateMemberAndRebalance(g, m, req, cb)
	case Stable:
		if m.id == g.leader || !m.protocolsEqual(req.Protocols) {
			c.updateMemberAndRebalance(g, m, req, cb)
			return
		}
		// A follower rejoining unchanged: nothing to rebalance, it can
		// sync for the current generation.
		c.scheduleHeartbeat(g, m)
		cb(c.currentResult(g, m))
	default:
		cb(JoinResult{Err: kerr.UnknownMemberID, MemberID: req.MemberID, Generation: -1})
	}
}

// replaceStaticMember: a static member rejoined with a new member id (it
// restarted). The old id is fenced and the member keeps its place and
// assignment; a stable group is not rebalanced unless that would change
// the selected protocol (KIP-345).
func (c *Coordinator) replaceStaticMember(g *group, oldID, newID string, req JoinRequest, cb func(JoinResult)) {
	m := g.members[oldID]
	if m.joinCB != nil {
		m.joinCB(JoinResult{Err: kerr.FencedInstanceID, MemberID: oldID, Generation: -1})
		m.joinCB = nil
	}
	if m.syncCB != nil {
		m.syncCB(SyncResult{Err: kerr.FencedInstanceID})
		m.syncCB = nil
	}
	old := *m
	g.replaceStaticMember(oldID, newID)
	c.updateMember(m, req)
	c.scheduleHeartbeat(g, m)
	switch g.state {
	case Stable:
		if g.selectProtocol() != g.protocol {
			m.joinCB = cb
			c.prepareRebalance(g)
			return
		}
		// As Kafka does, the replacement is in force at once (the old
		// instance is fenced) and answered once it is committed.
		gen := g.generation
		undo := func(err error) {
			// Undo, so that the old instance is not fenced by a change
			// that never became durable, unless the group moved on.
			if g.state != Dead && g.generation == gen && g.members[newID] == m && g.static[m.instanceID] == newID {
				g.replaceStaticMember(newID, oldID)
				m.clientID, m.clientHost, m.protocols = old.clientID, old.clientHost, old.protocols
				m.sessionTimeout, m.rebalanceTimeout = old.sessionTimeout, old.rebalanceTimeout
				c.scheduleHeartbeat(g, m)
			}
			cb(JoinResult{Err: storeError(err), MemberID: req.MemberID, Generation: -1})
		}
		w, err := c.storeGroup(g, nil, func(err error) {
			switch {
			case err != nil:
				c.log.Warn("store static member replacement", slog.String("group", g.id), slog.Any("err", err))
				undo(err)
			case g.state == Dead:
				cb(JoinResult{Err: kerr.NotCoordinator, MemberID: req.MemberID, Generation: -1})
			case g.members[newID] != m && g.static[m.instanceID] != "":
				// A later instance took the place over meanwhile.
				cb(JoinResult{Err: kerr.FencedInstanceID, MemberID: newID, Generation: -1})
			case g.members[newID] != m:
				cb(JoinResult{Err: kerr.UnknownMemberID, MemberID: newID, Generation: -1})
			case g.state == PreparingRebalance && m.joinCB == nil:
				// A rebalance started meanwhile: take part in it.
				m.joinCB = cb
				c.tryCompleteJoin(g)
			default:
				r := c.currentResult(g, m)
				r.SkipAssignment = m.id == g.leader && g.state == Stable
				cb(r)
			}
		})
		if err != nil {
			undo(err)
			return
		}
		c.waitAsync(g, w)
	case CompletingRebalance:
		// The leader may have assigned to the old id: start over.
		m.joinCB = cb
		c.prepareRebalance(g)
	default:
		m.joinCB = cb
		c.tryCompleteJoin(g)
	}
}

func (c *Coordinator) updateMember(m *member, req JoinRequest) {
	m.clientID, m.clientHost = req.ClientID, req.ClientHost
	m.sessionTimeout, m.rebalanceTimeout = req.SessionTimeout, req.RebalanceTimeout
	m.protocolType = req.ProtocolType
	m.protocols = append([]Protocol(nil), req.Protocols...)
}

func (c *Coordinator) addMemberAndRebalance(g *group, id string, req JoinRequest, cb func(JoinResult)) {
	m := &member{id: id, instanceID: req.InstanceID, isNew: true, joinCB: cb}
	c.updateMember(m, req)
	g.addMember(m)
	if g.initialDelay {
		g.newMemberAdded = true
	}
	c.scheduleHeartbeat(g, m)
	c.maybePrepareRebalance(g)
}

func (c *Coordinator) updateMemberAndRebalance(g *group, m *member, req JoinRequest, cb func(JoinResult)) {
	c.updateMember(m, req)
	if m.joinCB != nil {
		// A second join while the first still waits: the first
		// connection is gone or gave up; answer it so nothing leaks.
		m.joinCB(JoinResult{Err: kerr.RebalanceInProgress, MemberID: m.id, Generation: -1})
	}
	m.joinCB = cb
	c.scheduleHeartbeat(g, m)
	c.maybePrepareRebalance(g)
}

func (c *Coordinator) maybePrepareRebalance(g *group) {
	switch g.state {
	case Empty, Stable, CompletingRebalance:
		c.prepareRebalance(g)
	case PreparingRebalance:
		c.tryCompleteJoin(g)
	}
}

// prepareRebalance starts a rebalance: members must rejoin within the
// rebalance timeout. The first rebalance of an empty group waits
// group.initial.rebalance.delay.ms (extended while members keep
// arriving, up to the rebalance timeout) so that a starting fleet of
// consumers lands in one generation.
func (c *Coordinator) prepareRebalance(g *group) {
	if g.state == CompletingRebalance {
		c.propagateAssignmentError(g, kerr.RebalanceInProgress)
	}
	c.stopPendingSync(g)
	wasEmpty := g.state == Empty
	g.transition(PreparingRebalance, c.clock.Now())
	rt := g.maxRebalanceTimeout()
	if wasEmpty && c.cfg.InitialRebalanceDelay > 0 {
		g.initialDelay, g.newMemberAdded = true, false
		delay := min(c.cfg.InitialRebalanceDelay, rt)
		g.initialRemaining = max(rt-c.cfg.InitialRebalanceDelay, 0)
		c.scheduleRebalance(g, delay)
		return
	}
	g.initialDelay = false
	c.scheduleRebalance(g, rt)
	c.tryCompleteJoin(g)
}

func (c *Coordinator) scheduleRebalance(g *group, d time.Duration) {
	if g.rebalanceTimer != nil {
		g.rebalanceTimer.Stop()
	}
	g.rebalanceSeq++
	seq := g.rebalanceSeq
	g.rebalanceTimer = c.clock.AfterFunc(d, func() { c.onRebalanceTimeout(g, seq) })
}

func (c *Coordinator) onRebalanceTimeout(g *group, seq uint64) {
	g.mu.Lock()
	defer c.unlockMaybeForget(g)
	if g.rebalanceSeq != seq || g.state != PreparingRebalance {
		return
	}
	if g.initialDelay && g.newMemberAdded && g.initialRemaining > 0 {
		g.newMemberAdded = false
		d := min(c.cfg.InitialRebalanceDelay, g.initialRemaining)
		g.initialRemaining = max(g.initialRemaining-c.cfg.InitialRebalanceDelay, 0)
		c.scheduleRebalance(g, d)
		return
	}
	c.completeJoin(g)
}

// tryCompleteJoin ends the join phase early once every member rejoined.
func (c *Coordinator) tryCompleteJoin(g *group) {
	if g.state == PreparingRebalance && !g.initialDelay && g.allJoined() {
		c.completeJoin(g)
	}
}

// completeJoin ends the join phase: dynamic members that did not rejoin
// are dropped, the generation advances, a protocol is selected and every
// joined member gets its answer (the leader with everyone's metadata).
func (c *Coordinator) completeJoin(g *group) {
	if g.rebalanceTimer != nil {
		g.rebalanceTimer.Stop()
	}
	g.rebalanceSeq++
	g.initialDelay = false
	for _, id := range append([]string(nil), g.order...) {
		if m := g.members[id]; m.joinCB == nil && m.instanceID == "" {
			g.removeMember(id)
		}
	}
	if len(g.members) > 0 && !c.electJoinedLeader(g) {
		// Only static members that have not rejoined are left: wait for
		// them (or for their sessions to expire).
		c.scheduleRebalance(g, g.maxRebalanceTimeout())
		return
	}
	now := c.clock.Now()
	g.generation++
	if len(g.members) == 0 {
		g.protocol, g.leader = "", ""
		g.transition(Empty, now)
		gen := g.generation
		logErr := func(err error) {
			if err != nil {
				c.log.Warn("store empty group", "group", g.id, "generation", gen, "err", err)
			}
		}
		if w, err := c.storeGroup(g, nil, logErr); err != nil {
			logErr(err)
		} else {
			c.waitAsync(g, w)
		}
		return
	}
	g.protocol = g.selectProtocol()
	g.transition(CompletingRebalance, now)
	c.schedulePendingSync(g)
	for _, id := range g.order {
		m := g.members[id]
		if m.joinCB == nil {
			continue
		}
		cb := m.joinCB
		m.joinCB, m.isNew = nil, false
		c.scheduleHeartbeat(g, m)
		cb(c.currentResult(g, m))
	}
}

// electJoinedLeader keeps the leader if it rejoined, else picks the
// first member that did. False if none did.
func (c *Coordinator) electJoinedLeader(g *group) bool {
	if m := g.members[g.leader]; m != nil && m.joinCB != nil {
		return true
	}
	for _, id := range g.order {
		if g.members[id].joinCB != nil {
			g.leader = id
			return true
		}
	}
	return false
}

// currentResult is member m's JoinGroup answer for the current generation.
func (c *Coordinator) currentResult(g *group, m *member) JoinResult {
	r := JoinResult{
		MemberID: m.id, Generation: g.generation, ProtocolType: g.protocolType,
		Protocol: g.protocol, Leader: g.leader,
	}
	if m.id == g.leader {
		for _, id := range g.order {
			o := g.members[id]
			r.Members = append(r.Members, JoinMember{MemberID: o.id, InstanceID: o.instanceID, Metadata: o.metadataFor(g.protocol)})
		}
	}
	return r
}

// expirePending forgets a member id handed out with MEMBER_ID_REQUIRED
// whose owner never came back.
func (c *Coordinator) expirePending(g *group, id string) {
	g.mu.Lock()
	defer c.unlockMaybeForget(g)
	if _, ok := g.pending[id]; !ok || g.state == Dead {
		return
	}
	delete(g.pending, id)
	c.tryCompleteJoin(g)
}

// unlockMaybeForget unlocks g, first dropping it if it holds nothing
// worth keeping (a join that failed on a new group, an expired pending
// member): Kafka would not have created it.
func (c *Coordinator) unlockMaybeForget(g *group) {
	unused := g.state == Empty && len(g.members) == 0 && len(g.pending) == 0 &&
		len(g.offsets) == 0 && g.generation == 0 && g.consumer == nil &&
		len(g.writes) == 0 && len(g.pendingOffsets) == 0
	if unused {
		g.transition(Dead, c.clock.Now())
	}
	g.mu.Unlock()
	if unused {
		c.forget(g)
	}
}

// newUUID is a random (version 4) UUID, as Kafka appends to member ids.
func newUUID() string {
	var b [16]byte
	_, _ = rand.Read(b[:]) // crypto/rand.Read never fails (Go 1.24+)
	b[6] = b[6]&0x0f | 0x40
	b[8] = b[8]&0x3f | 0x80
	return fmt.Sprintf("%x-%x-%x-%x-%x", b[0:4], b[4:6], b[6:8], b[8:10], b[10:16])
}

// asKerr narrows an error of lockGroup to a Kafka error.
func asKerr(err error) *kerr.Error {
	if ke, ok := err.(*kerr.Error); ok {
		return ke
	}
	return kerr.UnknownServerError
}

// storeError is the code for a failed write of group state: retriable,
// so members rejoin rather than give up. As in Kafka, a lost leadership
// of the partition or a storage failure is NOT_COORDINATOR (the client
// finds the coordinator again); anything else COORDINATOR_NOT_AVAILABLE.
// The log wraps its errors, hence errors.As.
func storeError(err error) *kerr.Error {
	var ke *kerr.Error
	if errors.As(err, &ke) {
		switch ke {
		case kerr.NotCoordinator, kerr.NotLeaderForPartition, kerr.KafkaStorageError:
			return kerr.NotCoordinator
		}
	}
	return kerr.CoordinatorNotAvailable
}
