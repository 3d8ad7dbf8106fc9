package group

import (
	"context"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// State is a classic group's state, named as Kafka names it.
type State int

// The states of a classic group (Kafka's GroupState).
const (
	Empty State = iota
	PreparingRebalance
	CompletingRebalance
	Stable
	Dead
)

func (s State) String() string {
	switch s {
	case Empty:
		return "Empty"
	case PreparingRebalance:
		return "PreparingRebalance"
	case CompletingRebalance:
		return "CompletingRebalance"
	case Stable:
		return "Stable"
	default:
		return "Dead"
	}
}

// Protocol is one assignment protocol a member supports, with its
// subscription metadata (opaque to the coordinator).
type Protocol struct {
	Name     string
	Metadata []byte
}

// member is one member of a group. Callbacks are set while the member
// waits for a JoinGroup or SyncGroup answer.
type member struct {
	id               string
	instanceID       string // "" = dynamic member
	clientID         string
	clientHost       string
	sessionTimeout   time.Duration
	rebalanceTimeout time.Duration
	protocolType     string
	protocols        []Protocol
	assignment       []byte

	joinCB func(JoinResult) // awaiting a JoinGroup answer
	syncCB func(SyncResult) // awaiting a SyncGroup answer
	// isNew: joined in the current rebalance and never completed one.
	isNew bool

	hbTimer Timer
	hbSeq   uint64 // bumped at every (re)schedule; stale timers see a change
}

func (m *member) metadataFor(protocol string) []byte {
	for _, p := range m.protocols {
		if p.Name == protocol {
			return p.Metadata
		}
	}
	return nil
}

func (m *member) protocolsEqual(ps []Protocol) bool {
	if len(ps) != len(m.protocols) {
		return false
	}
	for i := range ps {
		if ps[i].Name != m.protocols[i].Name || string(ps[i].Metadata) != string(m.protocols[i].Metadata) {
			return false
		}
	}
	return true
}

// group is one group's state; mu guards all of it.
type group struct {
	mu        sync.Mutex
	id        string
	partition int32           // of __consumer_offsets
	ctx       context.Context // the partition's ownership (ownedPartition.ctx)

	state        State
	stateTime    time.Time // when the current state was entered (Kafka's currentStateTimestamp)
	protocolType string    // "" until a member joins (or for offset-only groups)
	protocol     string    // selected protocol of the current generation
	generation   int32
	leader       string

	members map[string]*member
	order   []string          // member ids in join order: leader succession, stable output
	static  map[string]string // instance id -> member id
	// pending are member ids handed out with MEMBER_ID_REQUIRED, each
	// with a timer that forgets it after the session timeout.
	pending map[string]Timer

	// The rebalance in progress: its timer, and for the initial delayed
	// join of an empty group whether members arrived during the delay and
	// how much of the rebalance timeout is left.
	rebalanceTimer   Timer
	rebalanceSeq     uint64
	initialDelay     bool
	newMemberAdded   bool
	initialRemaining time.Duration

	// pendingSync are the members given a JoinGroup answer for the
	// current generation that have not sent SyncGroup yet; syncTimer
	// removes them when the rebalance timeout passes (see sync.go).
	pendingSync map[string]bool
	syncTimer   Timer
	syncSeq     uint64

	// offsets are the committed offsets (what OffsetFetch answers);
	// pendingOffsets counts, per partition, the commits appended but not
	// yet committed (Kafka's pendingOffsetCommits).
	offsets        map[tp]Offset
	pendingOffsets map[tp]int

	// writes are the group's appended batches not completed yet, in log
	// order (write.go). barrier is one that changes what the group is
	// (its deletion, a change of protocol) and consumerWrite the consumer
	// group state write in flight: the changes that depend on them wait.
	writes        []*pendingWrite
	barrier       *pendingWrite
	consumerWrite *pendingWrite
	// syncStoreGen is the generation whose assignment is being stored (0:
	// none), so that a repeated SyncGroup of the leader waits for it.
	syncStoreGen int32

	// consumer is set when the group uses the KIP-848 consumer protocol
	// (a "consumer" group); the classic fields above are then unused.
	consumer *consumerGroup
}

func newGroup(id string, partition int32, now time.Time) *group {
	return &group{
		id: id, partition: partition, ctx: context.Background(), state: Empty, stateTime: now,
		members: map[string]*member{}, static: map[string]string{},
		pending: map[string]Timer{}, offsets: map[tp]Offset{}, pendingOffsets: map[tp]int{},
		pendingSync: map[string]bool{},
	}
}

func (g *group) transition(s State, now time.Time) {
	g.state, g.stateTime = s, now
}

func (g *group) addMember(m *member) {
	g.members[m.id] = m
	g.order = append(g.order, m.id)
	if m.instanceID != "" {
		g.static[m.instanceID] = m.id
	}
	if g.leader == "" {
		g.leader = m.id
	}
	if g.protocolType == "" {
		g.protocolType = m.protocolType
	}
}

// removeMember drops m; the leader passes to the oldest remaining member.
func (g *group) removeMember(id string) *member {
	m := g.members[id]
	if m == nil {
		return nil
	}
	if m.hbTimer != nil {
		m.hbTimer.Stop()
	}
	m.hbSeq++
	delete(g.members, id)
	delete(g.pendingSync, id)
	for i, o := range g.order {
		if o == id {
			g.order = append(g.order[:i:i], g.order[i+1:]...)
			break
		}
	}
	if m.instanceID != "" && g.static[m.instanceID] == id {
		delete(g.static, m.instanceID)
	}
	if g.leader == id {
		g.leader = ""
		if len(g.order) > 0 {
			g.leader = g.order[0]
		}
	}
	return m
}

// replaceStaticMember moves a static member to a new member id (a
// restarted instance), fencing the old id.
func (g *group) replaceStaticMember(oldID, newID string) *member {
	m := g.members[oldID]
	delete(g.members, oldID)
	m.id = newID
	g.members[newID] = m
	for i, o := range g.order {
		if o == oldID {
			g.order[i] = newID
		}
	}
	g.static[m.instanceID] = newID
	if g.pendingSync[oldID] {
		delete(g.pendingSync, oldID)
		g.pendingSync[newID] = true
	}
	if g.leader == oldID {
		g.leader = newID
	}
	return m
}

// staticFenced reports whether instanceID belongs to a member other
// than memberID (KIP-345: the older instance is fenced).
func (g *group) staticFenced(memberID, instanceID string) bool {
	if instanceID == "" {
		return false
	}
	id, ok := g.static[instanceID]
	return ok && id != memberID
}

// supportsProtocols: a joining member must share the group's protocol
// type and at least one protocol with every current member.
func (g *group) supportsProtocols(protocolType string, ps []Protocol) bool {
	if len(g.members) == 0 {
		return protocolType != "" && len(ps) > 0
	}
	if protocolType != g.protocolType {
		return false
	}
	cands := g.candidates()
	for _, p := range ps {
		if cands[p.Name] {
			return true
		}
	}
	return false
}

// candidates are the protocols every member supports.
func (g *group) candidates() map[string]bool {
	var out map[string]bool
	for _, id := range g.order {
		m := g.members[id]
		names := map[string]bool{}
		for _, p := range m.protocols {
			if out == nil || out[p.Name] {
				names[p.Name] = true
			}
		}
		out = names
	}
	return out
}

// selectProtocol picks, among the protocols all members support, the one
// most members prefer (each votes for its first supported candidate).
// Ties go to the protocol preferred earliest in join order, so the choice
// is deterministic.
func (g *group) selectProtocol() string {
	cands := g.candidates()
	votes := map[string]int{}
	var first []string
	for _, id := range g.order {
		for _, p := range g.members[id].protocols {
			if cands[p.Name] {
				if votes[p.Name] == 0 {
					first = append(first, p.Name)
				}
				votes[p.Name]++
				break
			}
		}
	}
	best := ""
	for _, name := range first {
		if best == "" || votes[name] > votes[best] {
			best = name
		}
	}
	return best
}

func (g *group) maxRebalanceTimeout() time.Duration {
	var d time.Duration
	for _, m := range g.members {
		d = max(d, m.rebalanceTimeout)
	}
	return d
}

// allJoined: every member is waiting in JoinGroup and no member id handed
// out with MEMBER_ID_REQUIRED is still expected.
func (g *group) allJoined() bool {
	if len(g.pending) > 0 {
		return false
	}
	for _, m := range g.members {
		if m.joinCB == nil {
			return false
		}
	}
	return true
}

// metadataValue is the group's persisted form (assignments as given).
func (g *group) metadataValue(now time.Time) *kmsg.GroupMetadataValue {
	return g.metadataValueWith(now, nil)
}

// metadataValueWith is metadataValue with the members' assignments taken
// from assignments (a member missing there gets an empty one) unless it
// is nil: the leader's assignment is stored before it is applied.
func (g *group) metadataValueWith(now time.Time, assignments map[string][]byte) *kmsg.GroupMetadataValue {
	v := kmsg.NewGroupMetadataValue()
	v.ProtocolType = g.protocolType
	v.Generation = g.generation
	if g.protocol != "" {
		p := g.protocol
		v.Protocol = &p
	}
	if g.leader != "" && len(g.members) > 0 {
		l := g.leader
		v.Leader = &l
	}
	v.CurrentStateTimestamp = now.UnixMilli()
	for _, id := range g.order {
		m := g.members[id]
		vm := kmsg.NewGroupMetadataValueMember()
		vm.MemberID, vm.ClientID, vm.ClientHost = m.id, m.clientID, m.clientHost
		if m.instanceID != "" {
			inst := m.instanceID
			vm.InstanceID = &inst
		}
		vm.RebalanceTimeoutMillis = int32(m.rebalanceTimeout.Milliseconds())
		vm.SessionTimeoutMillis = int32(m.sessionTimeout.Milliseconds())
		vm.Subscription = m.metadataFor(g.protocol)
		vm.Assignment = m.assignment
		if assignments != nil {
			vm.Assignment = assignments[m.id]
			if vm.Assignment == nil {
				vm.Assignment = []byte{}
			}
		}
		v.Members = append(v.Members, vm)
	}
	return &v
}

// clearMetadata forgets members and generation (a group tombstone);
// committed offsets stay, as they have their own records.
func (g *group) clearMetadata(now time.Time) {
	g.protocolType, g.protocol, g.generation, g.leader = "", "", 0, ""
	g.members, g.order, g.static = map[string]*member{}, nil, map[string]string{}
	g.pendingSync = map[string]bool{}
	g.transition(Empty, now)
}

// restore rebuilds a group from its persisted metadata: Stable with the
// persisted members if it had any, Empty otherwise.
func (g *group) restore(v *kmsg.GroupMetadataValue) {
	g.protocolType, g.generation = v.ProtocolType, v.Generation
	g.protocol, g.leader = "", ""
	if v.Protocol != nil {
		g.protocol = *v.Protocol
	}
	g.members, g.order, g.static = map[string]*member{}, nil, map[string]string{}
	for _, vm := range v.Members {
		if g.members[vm.MemberID] != nil {
			continue // a corrupt record; the first entry wins
		}
		m := &member{
			id: vm.MemberID, clientID: vm.ClientID, clientHost: vm.ClientHost,
			sessionTimeout:   time.Duration(vm.SessionTimeoutMillis) * time.Millisecond,
			rebalanceTimeout: time.Duration(vm.RebalanceTimeoutMillis) * time.Millisecond,
			protocolType:     v.ProtocolType,
			protocols:        []Protocol{{Name: g.protocol, Metadata: vm.Subscription}},
			assignment:       vm.Assignment,
		}
		if m.rebalanceTimeout <= 0 {
			m.rebalanceTimeout = m.sessionTimeout
		}
		if vm.InstanceID != nil {
			m.instanceID = *vm.InstanceID
		}
		g.addMember(m)
	}
	if v.Leader != nil && g.members[*v.Leader] != nil {
		g.leader = *v.Leader
	}
	g.state = Empty
	if len(g.members) > 0 {
		g.state = Stable
	}
	// Values before version 2 carry no timestamp: zero means unknown,
	// and offset expiry then counts from each commit (as Kafka does).
	g.stateTime = time.Time{}
	if v.Version >= 2 && v.CurrentStateTimestamp >= 0 {
		g.stateTime = time.UnixMilli(v.CurrentStateTimestamp)
	}
}
