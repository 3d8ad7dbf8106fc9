package group

import (
	"slices"
	"time"
)

// This file holds the state of a KIP-848 ("consumer" protocol) group: the
// group epoch, the subscription metadata it was computed from, the target
// assignment and its epoch, and per member its subscription and current
// assignment. It mirrors Kafka's ConsumerGroup and ConsumerGroupMember.

// TopicID is a topic's 16-byte id.
type TopicID = [16]byte

// partSet is a set of partitions per topic id. Slices are sorted and
// duplicate-free; no topic maps to an empty slice.
type partSet map[TopicID][]int32

func (s partSet) clone() partSet {
	out := make(partSet, len(s))
	for id, ps := range s {
		out[id] = slices.Clone(ps)
	}
	return out
}

func (s partSet) has(id TopicID, p int32) bool {
	_, ok := slices.BinarySearch(s[id], p)
	return ok
}

func (s partSet) add(id TopicID, p int32) {
	ps := s[id]
	i, ok := slices.BinarySearch(ps, p)
	if !ok {
		s[id] = slices.Insert(ps, i, p)
	}
}

func (s partSet) remove(id TopicID, p int32) {
	ps := s[id]
	if i, ok := slices.BinarySearch(ps, p); ok {
		ps = slices.Delete(ps, i, i+1)
		if len(ps) == 0 {
			delete(s, id)
		} else {
			s[id] = ps
		}
	}
}

func (s partSet) count() int {
	n := 0
	for _, ps := range s {
		n += len(ps)
	}
	return n
}

func (s partSet) equal(o partSet) bool {
	if len(s) != len(o) {
		return false
	}
	for id, ps := range s {
		if !slices.Equal(ps, o[id]) {
			return false
		}
	}
	return true
}

// normalize sorts, dedupes and drops empty topics, for sets built from
// untrusted input.
func (s partSet) normalize() partSet {
	for id, ps := range s {
		ps = slices.Clone(ps)
		slices.Sort(ps)
		ps = slices.Compact(ps)
		if len(ps) == 0 {
			delete(s, id)
		} else {
			s[id] = ps
		}
	}
	return s
}

// memberState is a consumer group member's reconciliation state, with
// Kafka's MemberState byte values (persisted).
type memberState int8

const (
	memberStable     memberState = 0 // owns exactly its share of the current epoch
	memberUnrevoked  memberState = 1 // must release partitions before it moves on
	memberUnreleased memberState = 2 // waits for partitions others still own
	memberUnknown    memberState = 127
)

func (s memberState) String() string {
	switch s {
	case memberStable:
		return "stable"
	case memberUnrevoked:
		return "unrevoked_partitions"
	case memberUnreleased:
		return "unreleased_partitions"
	default:
		return "unknown"
	}
}

// Epochs a member sends to leave (KIP-848).
const (
	leaveEpoch       = -1 // leave for good
	staticLeaveEpoch = -2 // a static member that will come back
)

// memberSub is what a member tells about itself in its heartbeats; it is
// the ConsumerGroupMemberMetadata record.
type memberSub struct {
	instanceID       string // "" = dynamic member
	rackID           string
	clientID         string
	clientHost       string
	topics           []string // sorted, unique
	regex            string   // "" = none
	assignor         string   // "" = the group's default
	rebalanceTimeout time.Duration
}

func (a memberSub) equal(b memberSub) bool {
	return a.instanceID == b.instanceID && a.rackID == b.rackID && a.clientID == b.clientID &&
		a.clientHost == b.clientHost && slices.Equal(a.topics, b.topics) && a.regex == b.regex &&
		a.assignor == b.assignor && a.rebalanceTimeout == b.rebalanceTimeout
}

// tidp names one partition by topic id.
type tidp struct {
	id TopicID
	p  int32
}

// memberAssignment is a member's current assignment: the
// ConsumerGroupCurrentMemberAssignment record.
type memberAssignment struct {
	epoch     int32
	prevEpoch int32
	state     memberState
	assigned  partSet
	pending   partSet // assigned before, to be revoked
	// since is the epoch at which each partition of assigned and pending
	// was given to the member (KIP-1251): a commit carrying an older
	// epoch is still valid for partitions it owned since then.
	since map[tidp]int32
}

func (a memberAssignment) clone() memberAssignment {
	a.assigned, a.pending = a.assigned.clone(), a.pending.clone()
	since := make(map[tidp]int32, len(a.since))
	for k, v := range a.since {
		since[k] = v
	}
	a.since = since
	return a
}

func (a memberAssignment) equal(b memberAssignment) bool {
	if a.epoch != b.epoch || a.prevEpoch != b.prevEpoch || a.state != b.state ||
		!a.assigned.equal(b.assigned) || !a.pending.equal(b.pending) || len(a.since) != len(b.since) {
		return false
	}
	for k, v := range a.since {
		if w, ok := b.since[k]; !ok || w != v {
			return false
		}
	}
	return true
}

func newMemberAssignment() memberAssignment {
	return memberAssignment{state: memberStable, assigned: partSet{}, pending: partSet{}, since: map[tidp]int32{}}
}

// cmember is one member of a consumer group.
type cmember struct {
	id  string
	sub memberSub
	memberAssignment

	sessionTimer Timer
	sessionSeq   uint64
	revokeTimer  Timer
	revokeSeq    uint64
}

// reconciledTo: the member owns exactly its target of that epoch.
func (m *cmember) reconciledTo(epoch int32) bool {
	return m.state == memberStable && m.epoch == epoch
}

func (m *cmember) stopTimers() {
	if m.sessionTimer != nil {
		m.sessionTimer.Stop()
	}
	if m.revokeTimer != nil {
		m.revokeTimer.Stop()
	}
	m.sessionSeq++
	m.revokeSeq++
}

// topicMeta is what the group knows of a subscribed topic (the
// ConsumerGroupPartitionMetadata record).
type topicMeta struct {
	name       string
	id         TopicID
	partitions int32
}

// consumerGroup is the KIP-848 part of a group.
type consumerGroup struct {
	epoch       int32
	members     map[string]*cmember
	static      map[string]string    // instance id -> member id
	topics      map[string]topicMeta // subscription metadata by topic name
	targetEpoch int32
	target      map[string]partSet // member id -> target assignment
}

func newConsumerGroup() *consumerGroup {
	return &consumerGroup{
		members: map[string]*cmember{}, static: map[string]string{},
		topics: map[string]topicMeta{}, target: map[string]partSet{},
	}
}

// Consumer group states, named as ConsumerGroupDescribe names them.
const (
	cgEmpty       = "Empty"
	cgAssigning   = "Assigning"
	cgReconciling = "Reconciling"
	cgStable      = "Stable"
)

func (cg *consumerGroup) state() string {
	switch {
	case len(cg.members) == 0:
		return cgEmpty
	case cg.targetEpoch != cg.epoch:
		return cgAssigning
	}
	for _, m := range cg.members {
		if !m.reconciledTo(cg.targetEpoch) {
			return cgReconciling
		}
	}
	return cgStable
}

// partitionOwners maps every partition some member owns (assigned or
// still pending revocation) to that member's id: Kafka's
// currentPartitionEpoch, which keeps a partition from being handed to a
// second member before the first one released it.
func (cg *consumerGroup) partitionOwners() map[tidp]string {
	out := map[tidp]string{}
	for id, m := range cg.members {
		for _, s := range []partSet{m.assigned, m.pending} {
			for t, ps := range s {
				for _, p := range ps {
					out[tidp{t, p}] = id
				}
			}
		}
	}
	return out
}

// subscribedNames is the union of the members' explicit topic names.
func (cg *consumerGroup) subscribedNames() map[string]bool {
	out := map[string]bool{}
	for _, m := range cg.members {
		for _, t := range m.sub.topics {
			out[t] = true
		}
	}
	return out
}

// sortedMemberIDs lists members in a stable order.
func (cg *consumerGroup) sortedMemberIDs() []string {
	ids := make([]string, 0, len(cg.members))
	for id := range cg.members {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	return ids
}
