package metadata

import (
	"cmp"
	"maps"
	"slices"
)

// Endpoint is one listener a broker serves clients or peers on.
type Endpoint struct {
	Listener         string `json:"listener"` // e.g. "PLAINTEXT"
	Host             string `json:"host"`
	Port             int32  `json:"port"`
	SecurityProtocol string `json:"securityProtocol,omitempty"`
}

// Broker is a registered broker. Host and Port are what Metadata responses
// advertise; Endpoints lists every listener for clients that need them.
//
// Incarnation, Epoch, Fenced and InControlledShutdown are its lifecycle
// (see the package documentation). A legacy registration, from a log or
// snapshot written before the lifecycle existed or from RegisterBroker, has
// a zero Incarnation and Epoch 0 and is never fenced by registering.
type Broker struct {
	ID        int32      `json:"id"`
	Host      string     `json:"host"`
	Port      int32      `json:"port"`
	Rack      string     `json:"rack,omitempty"` // "" means no rack
	Endpoints []Endpoint `json:"endpoints,omitempty"`

	// Incarnation identifies one run of the broker process: a new value
	// is a restart.
	Incarnation [16]byte `json:"incarnation,omitzero"`
	// Epoch is the broker epoch: the Raft index of the command that
	// registered this incarnation, as in KRaft.
	Epoch int64 `json:"epoch,omitempty"`
	// Fenced brokers lead nothing and are in no ISR (except as its only
	// member, which Kafka never removes).
	Fenced bool `json:"fenced,omitempty"`
	// FencedAt is the index of the command that last fenced this
	// registration (0: none since it registered, fenced at Epoch). Every
	// leadership the broker lost to that fencing moved in that command,
	// so a broker whose metadata has not reached it may still believe it
	// leads them; it is unfenced only once its metadata has.
	FencedAt int64 `json:"fencedAt,omitempty"`
	// InControlledShutdown: the broker asked to shut down; its leaderships
	// moved away where they could and it joins no ISR.
	InControlledShutdown bool `json:"inControlledShutdown,omitempty"`
}

// CaughtUpAt is the metadata offset a broker must have applied before it
// may be unfenced: its registration, and its last fencing after that.
func (b Broker) CaughtUpAt() int64 { return max(b.Epoch, b.FencedAt) }

// Eligible reports whether the broker may lead and join ISRs: unfenced
// and not shutting down (Kafka's "active").
func (b Broker) Eligible() bool { return !b.Fenced && !b.InControlledShutdown }

// Partition is the controller's view of one partition: who leads it, with
// which epoch, and which replicas are in sync.
type Partition struct {
	Partition      int32   `json:"partition"`
	Leader         int32   `json:"leader"` // -1 when none
	LeaderEpoch    int32   `json:"leaderEpoch"`
	Replicas       []int32 `json:"replicas"`
	ISR            []int32 `json:"isr"`
	PartitionEpoch int32   `json:"partitionEpoch"`
	// LeaderRecoveryState is Kafka's (KIP-704): LeaderRecovering after an
	// unclean election until the leader reports it recovered through
	// AlterPartition; meanwhile the ISR stays {leader}.
	LeaderRecoveryState int8 `json:"leaderRecoveryState,omitempty"`
	// AddingReplicas and RemovingReplicas are a reassignment in progress
	// (KIP-455): Replicas is then the target replicas followed by the
	// removing ones, the adding replicas catch up as followers, and once
	// all of them are in the ISR the removing ones leave (reassign.go).
	// Both are subsets of Replicas, disjoint, and empty when no
	// reassignment is in progress.
	AddingReplicas   []int32 `json:"addingReplicas,omitempty"`
	RemovingReplicas []int32 `json:"removingReplicas,omitempty"`
	// ELR is the eligible leader replicas (KIP-966): replicas out of the
	// ISR that still hold every committed record, because they left it
	// while the ISR was below min.insync.replicas and the high watermark
	// cannot advance then. Disjoint from the ISR, in replica order, and
	// empty whenever the ISR has min.insync.replicas members (elr.go).
	ELR []int32 `json:"elr,omitempty"`
}

// Reassigning reports whether a reassignment of p is in progress.
func (p Partition) Reassigning() bool {
	return len(p.AddingReplicas) > 0 || len(p.RemovingReplicas) > 0
}

// TargetReplicas is the replica set p has once its reassignment, if any,
// completes: Replicas without the removing ones.
func (p Partition) TargetReplicas() []int32 { return minus(p.Replicas, p.RemovingReplicas) }

// OriginalReplicas is the replica set p had before its reassignment, if
// any (Replicas without the adding ones): what a cancellation goes back to.
func (p Partition) OriginalReplicas() []int32 { return minus(p.Replicas, p.AddingReplicas) }

// Leader recovery states (Kafka's LeaderRecoveryState values).
const (
	LeaderRecovered  int8 = 0
	LeaderRecovering int8 = 1
)

// Topic is a topic with its partitions (index i holds partition i) and its
// config overrides (only keys set explicitly; defaults live elsewhere).
type Topic struct {
	Name       string            `json:"name"`
	ID         [16]byte          `json:"id"`
	Partitions []Partition       `json:"partitions"`
	Configs    map[string]string `json:"configs,omitempty"`
	// Pending marks a topic being created: recorded, so that its name,
	// id and partitions are reserved and brokers open its replicas, but
	// invisible to every reader but TopicsWithPending until it is
	// activated, or removed again if its replicas cannot be opened (see
	// CreateTopic.Prepare). Clients thus never see a topic that is then
	// taken back.
	Pending bool `json:"pending,omitempty"`
}

// Image is an immutable snapshot of the cluster metadata. Every apply builds
// a new Image (copy-on-write), so a reader may hold one as long as it likes
// without locks. Values reachable from an Image (Topic slices and maps
// included) are shared with later images and must not be modified.
type Image struct {
	index     uint64
	clusterID string
	// defaultMinISR is min.insync.replicas for topics without an override
	// of it, static or dynamic, as the bootstrapping controller had it (0:
	// unknown, treated as Kafka's default 1). See minISR.
	defaultMinISR  int32
	brokers        map[int32]*Broker
	topics         map[string]*Topic
	topicsByID     map[[16]byte]*Topic
	nextProducerID int64
	// brokerConfigs holds the dynamic broker configs by resource ("" the
	// cluster default, "N" broker N; broker_configs.go).
	brokerConfigs map[string]map[string]string
	// controllers holds controller registrations (ops_commands.go);
	// copied on write by its apply, so clone shares it.
	controllers map[int32]*ControllerRecord
}

func emptyImage() *Image {
	return &Image{
		brokers:    map[int32]*Broker{},
		topics:     map[string]*Topic{},
		topicsByID: map[[16]byte]*Topic{},

		brokerConfigs: map[string]map[string]string{},
	}
}

// clone copies the maps but shares their values: callers replace a value
// rather than modify it.
func (im *Image) clone() *Image {
	return &Image{
		index:          im.index,
		clusterID:      im.clusterID,
		defaultMinISR:  im.defaultMinISR,
		brokers:        maps.Clone(im.brokers),
		topics:         maps.Clone(im.topics),
		topicsByID:     maps.Clone(im.topicsByID),
		nextProducerID: im.nextProducerID,
		brokerConfigs:  maps.Clone(im.brokerConfigs),
		controllers:    im.controllers,
	}
}

// Index is the Raft log index of the last command reflected in the image
// (0 for the empty image).
func (im *Image) Index() uint64 { return im.index }

// ClusterID is the cluster's id ("" until the bootstrap command applied).
func (im *Image) ClusterID() string { return im.clusterID }

// NextProducerID is the first producer id the next allocation will hand out.
func (im *Image) NextProducerID() int64 { return im.nextProducerID }

// Broker returns the registered broker with the given id.
func (im *Image) Broker(id int32) (Broker, bool) {
	b, ok := im.brokers[id]
	if !ok {
		return Broker{}, false
	}
	return *b, true
}

// Brokers returns all registered brokers sorted by id.
func (im *Image) Brokers() []Broker {
	out := make([]Broker, 0, len(im.brokers))
	for _, b := range im.brokers {
		out = append(out, *b)
	}
	slices.SortFunc(out, func(a, b Broker) int { return cmp.Compare(a.ID, b.ID) })
	return out
}

// BrokerIDs returns the registered broker ids in ascending order.
func (im *Image) BrokerIDs() []int32 {
	return slices.Sorted(maps.Keys(im.brokers))
}

// TopicByName returns the topic or nil (also while it is pending). The
// result is read-only.
func (im *Image) TopicByName(name string) *Topic { return visible(im.topics[name]) }

// TopicByNameWithPending returns the topic, pending or not, or nil.
func (im *Image) TopicByNameWithPending(name string) *Topic { return im.topics[name] }

// TopicByID returns the topic or nil (also while it is pending). The result
// is read-only.
func (im *Image) TopicByID(id [16]byte) *Topic { return visible(im.topicsByID[id]) }

func visible(t *Topic) *Topic {
	if t == nil || t.Pending {
		return nil
	}
	return t
}

// NumTopics is the number of topics, pending ones not counted.
func (im *Image) NumTopics() int {
	n := 0
	for _, t := range im.topics {
		if !t.Pending {
			n++
		}
	}
	return n
}

// SortedTopicNames returns every topic name in ascending order, pending
// ones left out.
func (im *Image) SortedTopicNames() []string {
	names := make([]string, 0, len(im.topics))
	for name, t := range im.topics {
		if !t.Pending {
			names = append(names, name)
		}
	}
	slices.Sort(names)
	return names
}

// TopicsWithPending returns every topic sorted by name, pending ones
// included: the brokers open the replicas of a pending topic before it
// becomes visible. Everyone else uses SortedTopicNames and TopicByName.
func (im *Image) TopicsWithPending() []*Topic {
	out := make([]*Topic, 0, len(im.topics))
	for _, name := range slices.Sorted(maps.Keys(im.topics)) {
		out = append(out, im.topics[name])
	}
	return out
}

// Partition returns partition p of the named topic (not of a pending one).
func (im *Image) Partition(topic string, p int32) (Partition, bool) {
	t := im.TopicByName(topic)
	if t == nil || p < 0 || int(p) >= len(t.Partitions) {
		return Partition{}, false
	}
	return t.Partitions[p], true
}

// partitionCounts counts the partitions of every topic, pending ones
// included (they are reserved), in total and as replicas per broker.
func (im *Image) partitionCounts() (total int, perBroker map[int32]int) {
	perBroker = make(map[int32]int, len(im.brokers))
	for _, t := range im.topics {
		total += len(t.Partitions)
		for _, p := range t.Partitions {
			for _, id := range p.Replicas {
				perBroker[id]++
			}
		}
	}
	return total, perBroker
}

// putTopic stores t under its name and id, replacing any topic of that name.
func (im *Image) putTopic(t *Topic) {
	if old := im.topics[t.Name]; old != nil {
		delete(im.topicsByID, old.ID)
	}
	im.topics[t.Name] = t
	im.topicsByID[t.ID] = t
}

func (im *Image) removeTopic(name string) {
	if old := im.topics[name]; old != nil {
		delete(im.topicsByID, old.ID)
		delete(im.topics, name)
	}
}
