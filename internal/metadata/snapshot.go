package metadata

import (
	"encoding/json"
	"fmt"
	"io"
)

// snapshotVersion is bumped when the snapshot layout changes.
const snapshotVersion = 1

// snapshotFile is the JSON form of a whole Image, in a deterministic order.
type snapshotFile struct {
	Version        int      `json:"version"`
	Index          uint64   `json:"index"`
	ClusterID      string   `json:"clusterId"`
	NextProducerID int64    `json:"nextProducerId"`
	Brokers        []Broker `json:"brokers"`
	Topics         []*Topic `json:"topics"`
}

func encodeSnapshot(w io.Writer, im *Image) error {
	s := snapshotFile{
		Version:        snapshotVersion,
		Index:          im.index,
		ClusterID:      im.clusterID,
		NextProducerID: im.nextProducerID,
		Brokers:        im.Brokers(),
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
	if s.Version != snapshotVersion {
		return nil, fmt.Errorf("read metadata snapshot: unsupported version %d", s.Version)
	}
	if s.NextProducerID < 0 {
		return nil, fmt.Errorf("read metadata snapshot: negative next producer id %d", s.NextProducerID)
	}
	im := emptyImage()
	im.index = s.Index
	im.clusterID = s.ClusterID
	im.nextProducerID = s.NextProducerID
	for _, b := range s.Brokers {
		if _, dup := im.brokers[b.ID]; dup {
			return nil, fmt.Errorf("read metadata snapshot: broker %d listed twice", b.ID)
		}
		b := b
		im.brokers[b.ID] = &b
	}
	for _, t := range s.Topics {
		if err := checkSnapshotTopic(im, t); err != nil {
			return nil, fmt.Errorf("read metadata snapshot: %w", err)
		}
		im.putTopic(t)
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
		if len(p.Replicas) == 0 {
			return fmt.Errorf("topic %q partition %d has no replicas", t.Name, i)
		}
	}
	return nil
}
