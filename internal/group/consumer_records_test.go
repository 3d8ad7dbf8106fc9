package group

import (
	"bytes"
	"testing"
	"time"
)

func sampleConsumerRecords() []cgRecord {
	a := newMemberAssignment()
	a.epoch, a.prevEpoch, a.state = 7, 6, memberUnrevoked
	a.assigned = partSet{tid("t1"): {0, 2}, tid("t2"): {1}}
	a.pending = partSet{tid("t1"): {3}}
	a.since = map[tidp]int32{{tid("t1"), 0}: 3, {tid("t1"), 2}: 7, {tid("t2"), 1}: 5, {tid("t1"), 3}: 2}
	return []cgRecord{
		{kind: keyConsumerGroupMetadata, group: "g", epoch: 9},
		{kind: keyConsumerGroupPartitionMeta, group: "g", topics: map[string]topicMeta{
			"t1": {name: "t1", id: tid("t1"), partitions: 4}, "t2": {name: "t2", id: tid("t2"), partitions: 2}}},
		{kind: keyConsumerGroupMemberMetadata, group: "g", member: "m", sub: memberSub{
			instanceID: "i", rackID: "r", clientID: "c", clientHost: "/h", topics: []string{"t1", "t2"},
			regex: "t.*", assignor: "range", rebalanceTimeout: 30 * time.Second}},
		{kind: keyConsumerGroupMemberMetadata, group: "g", member: "n", sub: memberSub{clientID: "c", topics: []string{}}},
		{kind: keyConsumerGroupTargetMetadata, group: "g", epoch: 8},
		{kind: keyConsumerGroupTargetMember, group: "g", member: "m", target: partSet{tid("t1"): {0, 1}}},
		{kind: keyConsumerGroupCurrentMember, group: "g", member: "m", current: a},
		{kind: keyConsumerGroupCurrentMember, group: "g", member: "m", tombstone: true},
	}
}

func recordsEqual(a, b cgRecord) bool {
	return bytes.Equal(a.encode().Key, b.encode().Key) && bytes.Equal(a.encode().Value, b.encode().Value)
}

func TestConsumerRecordsRoundTrip(t *testing.T) {
	for _, r := range sampleConsumerRecords() {
		enc := r.encode()
		got, err := decodeConsumerRecord(enc.Key, enc.Value)
		if err != nil {
			t.Fatalf("kind %d: %v", r.kind, err)
		}
		if !recordsEqual(r, got) {
			t.Fatalf("kind %d round trip:\n%+v\n%+v", r.kind, r, got)
		}
	}
	// Kafka's layout, byte for byte, for the simplest record: key =
	// version 3 + group "g"; value = version 0, epoch 9, no tags.
	enc := cgRecord{kind: keyConsumerGroupMetadata, group: "g", epoch: 9}.encode()
	if !bytes.Equal(enc.Key, []byte{0, 3, 0, 1, 'g'}) || !bytes.Equal(enc.Value, []byte{0, 0, 0, 0, 0, 9, 0}) {
		t.Fatalf("group metadata record %x / %x", enc.Key, enc.Value)
	}
}

func TestConsumerRecordWithoutAssignmentEpochs(t *testing.T) {
	// A record as Kafka before 4.3 writes it: no AssignmentEpochs tag.
	// Its partitions count as owned since the member epoch.
	a := newMemberAssignment()
	a.epoch, a.assigned = 4, partSet{tid("t1"): {1}}
	enc := cgRecord{kind: keyConsumerGroupCurrentMember, group: "g", member: "m", current: a}.encode()
	enc.Value = cgCurrentRecordNoEpochs(a)
	got, err := decodeConsumerRecord(enc.Key, enc.Value)
	if err != nil || got.current.since[tidp{tid("t1"), 1}] != 4 {
		t.Fatalf("%+v %v", got.current, err)
	}
}

// cgCurrentRecordNoEpochs encodes a current assignment without tags.
func cgCurrentRecordNoEpochs(a memberAssignment) []byte {
	b := cgCurrentRecord("g", "m", memberAssignment{epoch: a.epoch, prevEpoch: a.prevEpoch, state: a.state}).Value
	b = b[:len(b)-3] // drop the two empty arrays and the tag count
	b = appendTopicPartitions(b, a.assigned, nil)
	b = appendTopicPartitions(b, a.pending, nil)
	return noTags(b)
}

func FuzzConsumerRecord(f *testing.F) {
	for _, r := range sampleConsumerRecords() {
		enc := r.encode()
		f.Add(enc.Key, enc.Value)
	}
	f.Add([]byte{0, 8, 0, 1, 'g', 0, 1, 'm'}, []byte{0, 0, 0, 0, 0, 1, 0, 0, 0, 0, 0, 2, 0xff, 0xff, 0xff, 0x0f})
	f.Fuzz(func(t *testing.T, key, value []byte) {
		r, err := decodeConsumerRecord(key, value)
		if err != nil {
			return
		}
		// What decodes must re-encode to something that decodes the same.
		enc := r.encode()
		again, err := decodeConsumerRecord(enc.Key, enc.Value)
		if err != nil {
			t.Fatalf("re-encoded record does not decode: %v", err)
		}
		if !recordsEqual(r, again) {
			t.Fatalf("unstable round trip:\n%+v\n%+v", r, again)
		}
		// And applying it to a group never panics.
		cg := newConsumerGroup()
		cg.apply(r)
		_ = cg.state()
		_ = cg.partitionOwners()
	})
}
