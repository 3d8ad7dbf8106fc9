package metadata

import (
	"encoding/json"
	"fmt"
	"io"
	"slices"
)

// snapshotVersion is bumped when the snapshot layout changes. Version 2
// added the broker lifecycle (incarnation, epoch, fenced, controlled
// shutdown) and the partitions' leader recovery state; version 3 the
// dynamic broker configs; version 4 the partitions' reassignments in
// progress (adding and removing replicas) and the controller registrations
// (quorum membership), so that a binary that does not know them refuses
// the snapshot rather than silently drop them (a reassignment dropped that
// way would leave its adding and removing replicas in Replicas for good).
// Versions 2 and 3 load as they are, with no reassignment in progress and
// no controller registrations. Version 1 snapshots
// still load: their brokers become legacy registrations (epoch 0,
// unfenced), exactly what replaying the log they summarise gives, so a node
// restored from one agrees with a node that replays.
const snapshotVersion = 4

// oldestSnapshotVersion is the oldest version decodeSnapshot reads.
const oldestSnapshotVersion = 1

// snapshotFile is the JSON form of a whole Image, in a deterministic order.
type snapshotFile struct {
	Version   int    `json:"version"`
	Index     uint64 `json:"index"`
	ClusterID string `json:"clusterId"`
	// DefaultMinISR: the bootstrap's min.insync.replicas (0 if unknown).
	DefaultMinISR  int32    `json:"defaultMinIsr,omitempty"`
	NextProducerID int64    `json:"nextProducerId"`
	Brokers        []Broker `json:"brokers"`
	Topics         []*Topic `json:"topics"`
	// BrokerConfigs: dynamic broker configs by resource (version 3+).
	BrokerConfigs map[string]map[string]string `json:"brokerConfigs,omitempty"`
	// Controllers: controller registrations (version 4+).
	Controllers []ControllerRecord `json:"controllers,omitempty"`
}

func encodeSnapshot(w io.Writer, im *Image) error {
	s := snapshotFile{
		Version:        snapshotVersion,
		Index:          im.index,
		ClusterID:      im.clusterID,
		DefaultMinISR:  im.defaultMinISR,
		NextProducerID: im.nextProducerID,
		Brokers:        im.Brokers(),
		BrokerConfigs:  im.brokerConfigs,
		Controllers:    im.ControllerRegistrations(),
	}
	// Pending topics too: a new leader must find them to finish or
	// abort their creation.
	s.Topics = im.TopicsWithPending()
	if err := json.NewEncoder(w).Encode(&s); err != nil {
		return fmt.Errorf("write metadata snapshot at index %d: %w", im.index, err)
	}
	return nil
}

// decodeSnapshot reads and checks a snapshot. Snapshots come from disk or
// from a peer, so every invariant the image relies on is re-checked.
func decodeSnapshot(r io.Reader) (*Image, error) {
	var s snapshotFile
	if err := json.NewDecoder(r).Decode(&s); err != nil {
		return nil, fmt.Errorf("read metadata snapshot: %w", err)
	}
	if s.Version < oldestSnapshotVersion || s.Version > snapshotVersion {
		return nil, fmt.Errorf("read metadata snapshot: unsupported version %d", s.Version)
	}
	if s.NextProducerID < 0 {
		return nil, fmt.Errorf("read metadata snapshot: negative next producer id %d", s.NextProducerID)
	}
	im := emptyImage()
	im.index = s.Index
	im.clusterID = s.ClusterID
	im.defaultMinISR = s.DefaultMinISR
	im.nextProducerID = s.NextProducerID
	for _, b := range s.Brokers {
		if _, dup := im.brokers[b.ID]; dup {
			return nil, fmt.Errorf("read metadata snapshot: broker %d listed twice", b.ID)
		}
		if b.ID < 0 || b.Epoch < 0 {
			return nil, fmt.Errorf("read metadata snapshot: broker %d has epoch %d", b.ID, b.Epoch)
		}
		if s.Version == 1 {
			b.Incarnation, b.Epoch, b.Fenced, b.InControlledShutdown = [16]byte{}, 0, false, false
		}
		im.brokers[b.ID] = &b
	}
	for _, t := range s.Topics {
		if err := checkSnapshotTopic(im, t); err != nil {
			return nil, fmt.Errorf("read metadata snapshot: %w", err)
		}
		im.putTopic(t)
	}
	if err := checkSnapshotBrokerConfigs(s.BrokerConfigs); err != nil {
		return nil, fmt.Errorf("read metadata snapshot: %w", err)
	}
	for r, kvs := range s.BrokerConfigs {
		im.putBrokerConfigs(r, kvs)
	}
	for _, c := range s.Controllers {
		if _, dup := im.controllers[c.ID]; dup {
			return nil, fmt.Errorf("read metadata snapshot: controller %d listed twice", c.ID)
		}
		if err := applyRegisterController(im, &registerControllerCmd{Controller: c}); err != nil {
			return nil, fmt.Errorf("read metadata snapshot: %w", err)
		}
	}
	return im, nil
}

func checkSnapshotTopic(im *Image, t *Topic) error {
	if t == nil {
		return fmt.Errorf("null topic")
	}
	if err := validTopicName(t.Name); err != nil {
		return err
	}
	if im.topics[t.Name] != nil {
		return fmt.Errorf("topic %q listed twice", t.Name)
	}
	if t.ID == ([16]byte{}) {
		return fmt.Errorf("topic %q has a zero id", t.Name)
	}
	if other := im.topicsByID[t.ID]; other != nil {
		return fmt.Errorf("topics %q and %q share an id", t.Name, other.Name)
	}
	if len(t.Partitions) == 0 {
		return fmt.Errorf("topic %q has no partitions", t.Name)
	}
	for i, p := range t.Partitions {
		if int(p.Partition) != i {
			return fmt.Errorf("topic %q: partition at position %d is numbered %d", t.Name, i, p.Partition)
		}
		if err := checkSnapshotPartition(p); err != nil {
			return fmt.Errorf("topic %q partition %d: %w", t.Name, i, err)
		}
	}
	return nil
}

// checkSnapshotPartition checks the shape the state machine relies on:
// distinct replicas, a non-empty ISR of replicas, a leader in the ISR or
// none, epochs not negative.
func checkSnapshotPartition(p Partition) error {
	if len(p.Replicas) == 0 {
		return fmt.Errorf("no replicas")
	}
	for j, r := range p.Replicas {
		if slices.Contains(p.Replicas[:j], r) {
			return fmt.Errorf("replica %d listed twice", r)
		}
	}
	if len(p.ISR) == 0 {
		return fmt.Errorf("empty ISR")
	}
	for j, r := range p.ISR {
		if !slices.Contains(p.Replicas, r) || slices.Contains(p.ISR[:j], r) {
			return fmt.Errorf("ISR %v is not a set of replicas %v", p.ISR, p.Replicas)
		}
	}
	if p.Leader != -1 && !slices.Contains(p.ISR, p.Leader) {
		return fmt.Errorf("leader %d not in ISR %v", p.Leader, p.ISR)
	}
	if p.LeaderEpoch < 0 || p.PartitionEpoch < 0 {
		return fmt.Errorf("negative epoch")
	}
	if p.LeaderRecoveryState != LeaderRecovered && p.LeaderRecoveryState != LeaderRecovering {
		return fmt.Errorf("unknown leader recovery state %d", p.LeaderRecoveryState)
	}
	return checkSnapshotReassignment(p)
}

// checkSnapshotReassignment checks a reassignment in progress: adding and
// removing replicas are distinct replicas, the two sets disjoint, and
// some replica is neither (the target is never empty).
func checkSnapshotReassignment(p Partition) error {
	for _, set := range [][]int32{p.AddingReplicas, p.RemovingReplicas} {
		for j, r := range set {
			if !slices.Contains(p.Replicas, r) || slices.Contains(set[:j], r) {
				return fmt.Errorf("reassignment %v/%v is not a set of replicas %v", p.AddingReplicas, p.RemovingReplicas, p.Replicas)
			}
		}
	}
	for _, r := range p.AddingReplicas {
		if slices.Contains(p.RemovingReplicas, r) {
			return fmt.Errorf("replica %d both adding and removing", r)
		}
	}
	if len(p.RemovingReplicas) >= len(p.Replicas) {
		return fmt.Errorf("every replica is being removed")
	}
	return nil
}
