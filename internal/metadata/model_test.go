package metadata

import (
	"bytes"
	"errors"
	"fmt"
	"math/rand/v2"
	"reflect"
	"slices"
	"testing"
)

// model drives the state machine with random but plausible commands:
// brokers registering (restarts: new incarnations; retries; legacy),
// fences, unfences and controlled shutdowns with current and stale
// epochs, AlterPartitions from leaders (valid, stale, from non-leaders),
// elections, and new topics and partitions placed over the eligible
// brokers; topics with and without min.insync.replicas, and restarts that
// may have lost unflushed records. Every step is checked against
// checkImage and checkStep, against what the command should have done,
// and against a ghost of the data (trackCommitted).
type model struct {
	t    *testing.T
	rng  *rand.Rand
	im   *Image
	idx  uint64
	log  [][]byte
	runs map[int32]int
	// epochs are every epoch a broker registered with, for stale requests.
	epochs map[int32][]int64
	// history holds earlier states of each partition, for stale updates.
	history map[partitionRef][]Partition
	racks   bool
	topicN  byte
	// holders is, per partition, the replicas that hold every committed
	// record, as far as the state machine's rules let one know.
	holders map[partitionRef][]int32
	// unflushed is the broker whose registration in this step says its
	// logs may have lost unflushed records (-1: none).
	unflushed int32
}

func newModel(t *testing.T, seed uint64) *model {
	return &model{
		t:       t,
		rng:     rand.New(rand.NewPCG(seed, seed*7919)),
		im:      emptyImage(),
		runs:    map[int32]int{},
		epochs:  map[int32][]int64{},
		history: map[partitionRef][]Partition{},
		racks:   seed%2 == 0,
		holders: map[partitionRef][]int32{},

		unflushed: -1,
	}
}

// step applies one command, checks the invariants and returns the result.
func (md *model) step(typ cmdType, payload any) applyResult {
	md.t.Helper()
	data := mustCommand(md.t, typ, payload)
	md.idx++
	prev := md.im
	next, res := applyCommand(prev, md.idx, data)
	md.im = next
	md.log = append(md.log, data)
	if next.Index() != md.idx {
		md.t.Fatalf("step %d: index %d", md.idx, next.Index())
	}
	if res.err != nil && !sameMaps(prev, next) {
		md.t.Fatalf("step %d: refused %s (%v) changed the state", md.idx, typ, res.err)
	}
	if err := checkImage(next); err != nil {
		md.t.Fatalf("step %d (%s %+v, err %v): %v", md.idx, typ, payload, res.err, err)
	}
	maxChanges := int32(1)
	if c, ok := payload.(registerBrokerCmd); ok && c.Broker.Incarnation == ([16]byte{}) {
		maxChanges = 2
	}
	if err := checkStep(prev, next, maxChanges); err != nil {
		md.t.Fatalf("step %d (%s %+v, err %v): %v", md.idx, typ, payload, res.err, err)
	}
	md.trackCommitted(typ, prev, next)
	d := DiffTopics(prev, next)
	for _, tp := range slices.Concat(d.Added, d.Changed) {
		for _, p := range tp.Partitions {
			key := partitionRef{TopicID: tp.ID, Partition: p.Partition}
			h := md.history[key]
			if len(h) == 0 || h[len(h)-1].PartitionEpoch != p.PartitionEpoch {
				md.history[key] = append(h, p)
			}
		}
	}
	return res
}

// want fails unless err wraps one of the errors (nil: no error).
func (md *model) want(what string, err error, wants ...error) {
	md.t.Helper()
	for _, w := range wants {
		if (w == nil && err == nil) || (w != nil && errors.Is(err, w)) {
			return
		}
	}
	md.t.Fatalf("step %d: %s: err %v, want one of %v", md.idx, what, err, wants)
}

func (md *model) brokerIDs() []int32 { return md.im.BrokerIDs() }

// pickEpoch returns broker id's current epoch most of the time, else a
// stale or made-up one.
func (md *model) pickEpoch(id int32) (epoch int64, current bool) {
	b, ok := md.im.Broker(id)
	if ok && md.rng.IntN(4) > 0 {
		return b.Epoch, true
	}
	if old := md.epochs[id]; len(old) > 0 && md.rng.IntN(2) == 0 {
		e := old[md.rng.IntN(len(old))]
		return e, ok && e == b.Epoch
	}
	e := int64(md.rng.IntN(1000))
	return e, ok && e == b.Epoch
}

func (md *model) register() {
	id := int32(1 + md.rng.IntN(6))
	rack := ""
	if md.racks {
		rack = fmt.Sprintf("r%d", id%3)
	}
	old, had := md.im.Broker(id)
	before := md.im
	switch r := md.rng.IntN(10); {
	case r < 2 && had && old.Incarnation != [16]byte{}: // a retry
		res := md.step(cmdRegisterBroker, registerBrokerCmd{Broker: Broker{ID: id, Host: "h", Port: 1, Rack: rack, Incarnation: old.Incarnation}})
		md.want("retried registration", res.err, nil)
		if res.brokerEpoch != old.Epoch || !DiffBrokers(before, md.im).Empty() || !DiffTopics(before, md.im).Empty() {
			md.t.Fatalf("step %d: retried registration changed something (epoch %d -> %d)", md.idx, old.Epoch, res.brokerEpoch)
		}
	case r < 3: // legacy
		res := md.step(cmdRegisterBroker, registerBrokerCmd{Broker: Broker{ID: id, Host: "h", Port: 1, Rack: rack}})
		md.want("legacy registration", res.err, nil)
		if b, _ := md.im.Broker(id); b.Fenced || b.Epoch != 0 {
			md.t.Fatalf("step %d: legacy registration %+v", md.idx, b)
		}
	default: // a (re)start
		md.runs[id]++
		inc := [16]byte{2, byte(id), byte(md.runs[id]), byte(md.runs[id] >> 8)}
		// The broker names its last epoch unless its logs may have lost
		// unflushed records (sometimes a made-up one: as good as -1).
		prevEpoch := int64(-1)
		switch md.rng.IntN(3) {
		case 0:
			prevEpoch = old.Epoch
		case 1:
			prevEpoch = int64(md.rng.IntN(1000))
		}
		if had && old.Incarnation != ([16]byte{}) && prevEpoch != old.Epoch {
			md.unflushed = id
		}
		res := md.step(cmdRegisterBroker, registerBrokerCmd{Broker: Broker{ID: id, Host: "h", Port: 1, Rack: rack, Incarnation: inc}, PreviousEpoch: &prevEpoch})
		md.unflushed = -1
		md.want("registration", res.err, nil)
		if res.brokerEpoch != int64(md.idx) {
			md.t.Fatalf("step %d: new registration got epoch %d", md.idx, res.brokerEpoch)
		}
		md.epochs[id] = append(md.epochs[id], res.brokerEpoch)
		if led, _ := md.im.BrokerPartitions(id); len(led) > 0 {
			md.t.Fatalf("step %d: a new registration leads %v", md.idx, led)
		}
		if md.rng.IntN(3) > 0 { // its first heartbeats find it caught up
			md.want("unfence after registration", md.step(cmdUnfenceBroker, unfenceBrokerCmd{brokerRef{id, res.brokerEpoch}}).err, nil)
		}
	}
}

func (md *model) lifecycle() {
	ids := append(md.brokerIDs(), 9) // 9 is never registered
	id := ids[md.rng.IntN(len(ids))]
	epoch, current := md.pickEpoch(id)
	b, _ := md.im.Broker(id)
	ref := brokerRef{ID: id, Epoch: epoch}
	switch r := md.rng.IntN(20); {
	case r < 6:
		res := md.step(cmdFenceBroker, fenceBrokerCmd{ref})
		if !current {
			md.want("stale fence", res.err, ErrStaleBrokerEpoch)
			return
		}
		md.want("fence", res.err, nil)
		if led, _ := md.im.BrokerPartitions(id); len(led) > 0 {
			md.t.Fatalf("step %d: fenced broker %d leads %v", md.idx, id, led)
		}
	case r < 15:
		res := md.step(cmdUnfenceBroker, unfenceBrokerCmd{ref})
		switch {
		case !current:
			md.want("stale unfence", res.err, ErrStaleBrokerEpoch)
		case b.InControlledShutdown:
			md.want("unfence in controlled shutdown", res.err, ErrInvalidRequest)
		default:
			md.want("unfence", res.err, nil)
		}
	default:
		res := md.step(cmdBeginControlledShutdown, controlledShutdownCmd{ref})
		if !current {
			md.want("stale controlled shutdown", res.err, ErrStaleBrokerEpoch)
			return
		}
		md.want("controlled shutdown", res.err, nil)
		if !md.im.ShouldShutDown(id) {
			md.t.Fatalf("step %d: broker %d still has movable leaderships after controlled shutdown", md.idx, id)
		}
	}
}

// randomPartition returns a random partition of a random topic.
func (md *model) randomPartition() (*Topic, Partition, bool) {
	ts := md.im.sortedTopics()
	if len(ts) == 0 {
		return nil, Partition{}, false
	}
	t := ts[md.rng.IntN(len(ts))]
	return t, t.Partitions[md.rng.IntN(len(t.Partitions))], true
}

func (md *model) alter() {
	t, p, ok := md.randomPartition()
	if !ok {
		return
	}
	key := partitionRef{TopicID: t.ID, Partition: p.Partition}
	u := ISRUpdate{TopicID: t.ID, Partition: p.Partition, LeaderEpoch: p.LeaderEpoch, PartitionEpoch: p.PartitionEpoch}
	from := p.Leader
	kind := md.rng.IntN(4)
	switch {
	case kind == 0 && len(md.history[key]) > 1: // from an earlier state
		h := md.history[key]
		old := h[md.rng.IntN(len(h)-1)]
		u.LeaderEpoch, u.PartitionEpoch, from = old.LeaderEpoch, old.PartitionEpoch, old.Leader
	case kind == 1: // from someone else
		from = p.Replicas[md.rng.IntN(len(p.Replicas))]
	}
	b, registered := md.im.Broker(from)
	if !registered {
		return
	}
	// The new ISR: the requester and a random subset of the other replicas.
	isr := []int32{from}
	for _, r := range p.Replicas {
		if r != from && md.rng.IntN(2) == 0 {
			isr = append(isr, r)
		}
	}
	md.rng.Shuffle(len(isr), func(i, j int) { isr[i], isr[j] = isr[j], isr[i] })
	u.NewISR = ISRMembers(isr)
	badEpoch := false
	for i := range u.NewISR {
		if m, ok := md.im.Broker(u.NewISR[i].BrokerID); ok && md.rng.IntN(3) == 0 {
			u.NewISR[i].BrokerEpoch = m.Epoch
			if md.rng.IntN(5) == 0 {
				u.NewISR[i].BrokerEpoch++
				badEpoch = true
			}
		}
	}
	res := md.step(cmdAlterPartition, alterPartitionCmd{BrokerID: from, BrokerEpoch: b.Epoch, Updates: []ISRUpdate{u}})
	md.want("alter partition", res.err, nil)
	err := res.altered[0].Err
	switch {
	case u.LeaderEpoch < p.LeaderEpoch:
		md.want("stale leader epoch", err, ErrFencedLeaderEpoch)
	case from != p.Leader:
		md.want("not the leader", err, ErrNotPartitionLeader)
	case u.PartitionEpoch < p.PartitionEpoch:
		md.want("stale partition epoch", err, ErrInvalidUpdateVersion)
	default:
		eligible := !badEpoch
		for _, r := range isr {
			eligible = eligible && md.im.eligible(r)
		}
		if !eligible {
			md.want("ineligible member", err, ErrIneligibleReplica, ErrInvalidRequest)
			return
		}
		if p.LeaderRecoveryState == LeaderRecovered || len(isr) == 1 {
			md.want("valid alter partition", err, nil)
			got := md.im.topicsByID[t.ID].Partitions[p.Partition]
			if !slices.Equal(got.ISR, inReplicaOrder(p.Replicas, isr)) || got.Leader != p.Leader {
				md.t.Fatalf("step %d: ISR %v after asking %v", md.idx, got.ISR, isr)
			}
		}
	}
}

func (md *model) elect() {
	t, p, ok := md.randomPartition()
	if !ok {
		return
	}
	typ := ElectionType(md.rng.IntN(2))
	res := md.step(cmdElectLeaders, electLeadersCmd{Type: typ, Partitions: []partitionRef{{TopicID: t.ID, Partition: p.Partition}}})
	md.want("elect leaders", res.err, nil)
	r := res.elected[0]
	got := md.im.topicsByID[t.ID].Partitions[p.Partition]
	switch {
	case r.Err != nil:
		md.want("election", r.Err, ErrElectionNotNeeded, ErrPreferredLeaderNotAvailable, ErrEligibleLeadersNotAvailable)
		if got.PartitionEpoch != p.PartitionEpoch {
			md.t.Fatalf("step %d: failed election changed the partition", md.idx)
		}
	case typ == ElectPreferred && p.Leader != -1 && got.Leader != p.Replicas[0]:
		md.t.Fatalf("step %d: preferred election chose %d", md.idx, got.Leader)
	case typ == ElectUnclean && p.Leader != -1:
		md.t.Fatalf("step %d: unclean election on a partition with a leader", md.idx)
	}
}

func (md *model) create() {
	brokers := md.im.placementBrokers()
	if len(brokers) == 0 {
		return
	}
	rf := 1 + md.rng.IntN(min(3, len(brokers)))
	if t, _, ok := md.randomPartition(); ok && md.rng.IntN(2) == 0 {
		cur := len(t.Partitions)
		rf = len(t.Partitions[0].Replicas)
		if rf > len(brokers) {
			return
		}
		add := 1 + md.rng.IntN(2)
		asg := place(brokers, cur, add, rf, md.rng.IntN(len(brokers)))
		res := md.step(cmdCreatePartitions, createPartitionsCmd{Name: t.Name, ID: t.ID, Total: int32(cur + add), Assignments: asg})
		md.want("create partitions", res.err, nil)
		return
	}
	md.topicN++
	asg := place(brokers, 0, 1+md.rng.IntN(4), rf, md.rng.IntN(len(brokers)))
	var configs map[string]string
	if n := md.rng.IntN(4); n > 0 {
		configs = map[string]string{"min.insync.replicas": fmt.Sprint(n)}
	}
	res := md.step(cmdCreateTopic, createTopicCmd{Name: fmt.Sprintf("t%d", md.topicN), ID: [16]byte{9, md.topicN}, Assignments: asg, Configs: configs})
	md.want("create topic", res.err, nil)
}

func (md *model) run(steps int) {
	md.step(cmdBootstrap, bootstrapCmd{ClusterID: "AAAAAAAAAAAAAAAAAAAAAA", MinISR: int32(md.rng.IntN(3))})
	for range steps {
		switch r := md.rng.IntN(20); {
		case r < 4:
			md.register()
		case r < 9:
			md.lifecycle()
		case r < 15:
			md.alter()
		case r < 18:
			md.elect()
		case r < 19 || md.rng.IntN(4) > 0:
			md.create()
		default:
			md.staticDefaults()
		}
	}
}

// staticDefaults is a new active controller whose static
// min.insync.replicas differs (0: one that is refused).
func (md *model) staticDefaults() {
	n := int32(md.rng.IntN(4))
	res := md.step(cmdStaticDefaults, staticDefaultsCmd{MinISR: n})
	if n == 0 {
		if res.err == nil {
			md.t.Fatalf("step %d: static min.insync.replicas 0 accepted", md.idx)
		}
		return
	}
	md.want("static defaults", res.err, nil)
}

func TestModelRandomClusterHistory(t *testing.T) {
	seeds, steps := 30, 400
	if testing.Short() {
		seeds = 5
	}
	for seed := range uint64(seeds) {
		md := newModel(t, seed+1)
		md.run(steps)
		final := stateBytes(t, md.im)
		if md.im.NumTopics() == 0 {
			t.Fatalf("seed %d: no topic was ever created", seed)
		}
		// Determinism: the same log from scratch gives the same bytes, and
		// so does a snapshot taken half-way plus the rest of the log.
		replay := emptyImage()
		half := len(md.log) / 2
		var mid []byte
		for i, data := range md.log {
			replay, _ = applyCommand(replay, uint64(i+1), data)
			if i+1 == half {
				mid = stateBytes(t, replay)
			}
		}
		if got := stateBytes(t, replay); !bytes.Equal(got, final) {
			t.Fatalf("seed %d: replay differs:\n%s\n%s", seed, got, final)
		}
		restored, err := decodeSnapshot(bytes.NewReader(mid))
		if err != nil {
			t.Fatalf("seed %d: mid-way snapshot: %v", seed, err)
		}
		for i := half; i < len(md.log); i++ {
			restored, _ = applyCommand(restored, uint64(i+1), md.log[i])
		}
		if got := stateBytes(t, restored); !bytes.Equal(got, final) {
			t.Fatalf("seed %d: snapshot + log tail differs from the log", seed)
		}
	}
}

// sameMaps reports whether next shares all of prev's state (what a refused
// command must leave: the same maps, not just equal ones).
func sameMaps(prev, next *Image) bool {
	p := func(m any) uintptr { return reflect.ValueOf(m).Pointer() }
	return p(prev.brokers) == p(next.brokers) && p(prev.topics) == p(next.topics) &&
		p(prev.topicsByID) == p(next.topicsByID) && prev.clusterID == next.clusterID &&
		prev.nextProducerID == next.nextProducerID
}

// trackCommitted keeps holders, a ghost of the data the state machine
// never sees, and fails when a clean election picks a replica that may
// lack committed records while an ISR or ELR member held them all: the
// loss eligible leader replicas exist to prevent.
//
// Records commit whenever a partition has a recovered leader and an ISR
// of min.insync.replicas members; a replica out of the ISR then falls
// behind. A replica joins holders by catching up (AlterPartition adding it
// to the ISR), and leaves them by a restart that may have lost unflushed
// records. A new leader without them becomes the reference: after an
// unclean election, or when no ISR or ELR member held them (the loss of
// every replica that did, which no rule can undo).
func (md *model) trackCommitted(typ cmdType, prev, next *Image) {
	for _, t := range next.sortedTopics() {
		for _, p := range t.Partitions {
			key := partitionRef{TopicID: t.ID, Partition: p.Partition}
			h, known := md.holders[key]
			if !known {
				h = slices.Clone(p.Replicas) // empty: everyone holds it all
			}
			h = without(h, md.unflushed)
			var pp Partition
			had := false
			if pt := prev.topicsByID[t.ID]; pt != nil && int(p.Partition) < len(pt.Partitions) {
				pp, had = pt.Partitions[p.Partition], true
			}
			if had && p.Leader != -1 && p.Leader != pp.Leader && !slices.Contains(h, p.Leader) {
				if p.LeaderRecoveryState == LeaderRecovered && len(minus(slices.Concat(pp.ISR, pp.ELR), h)) < len(pp.ISR)+len(pp.ELR) {
					md.t.Fatalf("step %d (%s): %s-%d elected %d, which may lack committed records, while %v of ISR %v / ELR %v held them",
						md.idx, typ, t.Name, p.Partition, p.Leader, h, pp.ISR, pp.ELR)
				}
				h = []int32{p.Leader}
			}
			if typ == cmdAlterPartition && had {
				for _, r := range minus(p.ISR, pp.ISR) {
					if !slices.Contains(h, r) {
						h = append(h, r)
					}
				}
			}
			if p.Leader != -1 && p.LeaderRecoveryState == LeaderRecovered && len(p.ISR) >= next.minISR(t) {
				h = minus(h, minus(h, p.ISR))
			}
			md.holders[key] = h
		}
	}
}
