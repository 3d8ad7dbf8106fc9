package group

import (
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/twmb/franz-go/pkg/kbin"
)

// The records of a KIP-848 consumer group in __consumer_offsets, encoded
// as Kafka's group coordinator encodes them (its JSON schemas
// ConsumerGroup*Key/Value). kmsg does not have these types, so they are
// written here with kbin. A key is its version (the record type) and
// non-flexible fields; a value is version 0 and flexible (compact
// strings and arrays, tagged fields).
const (
	keyConsumerGroupMetadata       = 3
	keyConsumerGroupPartitionMeta  = 4
	keyConsumerGroupMemberMetadata = 5
	keyConsumerGroupTargetMetadata = 6
	keyConsumerGroupTargetMember   = 7
	keyConsumerGroupCurrentMember  = 8
)

func isConsumerGroupKey(version int16) bool {
	return version >= keyConsumerGroupMetadata && version <= keyConsumerGroupCurrentMember
}

// hasMemberKey: the record types keyed by group and member id.
func hasMemberKey(version int16) bool {
	return version == keyConsumerGroupMemberMetadata || version == keyConsumerGroupTargetMember ||
		version == keyConsumerGroupCurrentMember
}

func cgKey(version int16, group, member string) []byte {
	b := kbin.AppendInt16(nil, version)
	b = kbin.AppendString(b, group)
	if hasMemberKey(version) {
		b = kbin.AppendString(b, member)
	}
	return b
}

func cgTombstone(version int16, group, member string) Record {
	return Record{Key: cgKey(version, group, member)}
}

func valueHeader() []byte { return kbin.AppendInt16(nil, 0) }

func noTags(b []byte) []byte { return kbin.AppendUvarint(b, 0) }

func cgEpochRecord(group string, epoch int32) Record {
	v := kbin.AppendInt32(valueHeader(), epoch)
	return Record{Key: cgKey(keyConsumerGroupMetadata, group, ""), Value: noTags(v)}
}

func cgTargetEpochRecord(group string, epoch int32) Record {
	v := kbin.AppendInt32(valueHeader(), epoch)
	return Record{Key: cgKey(keyConsumerGroupTargetMetadata, group, ""), Value: noTags(v)}
}

func cgTopicsRecord(group string, topics map[string]topicMeta) Record {
	names := make([]string, 0, len(topics))
	for n := range topics {
		names = append(names, n)
	}
	slices.Sort(names)
	v := kbin.AppendCompactArrayLen(valueHeader(), len(names))
	for _, n := range names {
		t := topics[n]
		v = kbin.AppendUuid(v, t.id)
		v = kbin.AppendCompactString(v, t.name)
		v = kbin.AppendInt32(v, t.partitions)
		v = kbin.AppendCompactArrayLen(v, 0) // PartitionMetadata (racks): unused since Kafka 4.0
		v = noTags(v)
	}
	return Record{Key: cgKey(keyConsumerGroupPartitionMeta, group, ""), Value: noTags(v)}
}

func optString(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}

func cgMemberRecord(group, member string, s memberSub) Record {
	v := kbin.AppendCompactNullableString(valueHeader(), optString(s.instanceID))
	v = kbin.AppendCompactNullableString(v, optString(s.rackID))
	v = kbin.AppendCompactString(v, s.clientID)
	v = kbin.AppendCompactString(v, s.clientHost)
	v = kbin.AppendCompactArrayLen(v, len(s.topics))
	for _, t := range s.topics {
		v = kbin.AppendCompactString(v, t)
	}
	v = kbin.AppendCompactNullableString(v, optString(s.regex))
	v = kbin.AppendInt32(v, int32(s.rebalanceTimeout.Milliseconds()))
	v = kbin.AppendCompactNullableString(v, optString(s.assignor))
	return Record{Key: cgKey(keyConsumerGroupMemberMetadata, group, member), Value: noTags(v)}
}

func cgTargetRecord(group, member string, s partSet) Record {
	v := appendTopicPartitions(valueHeader(), s, nil)
	return Record{Key: cgKey(keyConsumerGroupTargetMember, group, member), Value: noTags(v)}
}

func cgCurrentRecord(group, member string, a memberAssignment) Record {
	v := kbin.AppendInt32(valueHeader(), a.epoch)
	v = kbin.AppendInt32(v, a.prevEpoch)
	v = kbin.AppendInt8(v, int8(a.state))
	v = appendTopicPartitions(v, a.assigned, a.since)
	v = appendTopicPartitions(v, a.pending, a.since)
	return Record{Key: cgKey(keyConsumerGroupCurrentMember, group, member), Value: noTags(v)}
}

// appendTopicPartitions writes []TopicPartitions; with since set, each
// entry carries the tagged AssignmentEpochs (tag 0, KIP-1251).
func appendTopicPartitions(b []byte, s partSet, since map[tidp]int32) []byte {
	ids := sortedKeys(s)
	b = kbin.AppendCompactArrayLen(b, len(ids))
	for _, id := range ids {
		b = kbin.AppendUuid(b, id)
		b = kbin.AppendCompactArrayLen(b, len(s[id]))
		for _, p := range s[id] {
			b = kbin.AppendInt32(b, p)
		}
		if since == nil {
			b = noTags(b)
			continue
		}
		var tag []byte
		tag = kbin.AppendCompactArrayLen(tag, len(s[id]))
		for _, p := range s[id] {
			tag = kbin.AppendInt32(tag, since[tidp{id, p}])
		}
		b = kbin.AppendUvarint(b, 1)
		b = kbin.AppendUvarint(b, 0)
		b = kbin.AppendUvarint(b, uint32(len(tag)))
		b = append(b, tag...)
	}
	return b
}

// cgRecord is one decoded consumer group record.
type cgRecord struct {
	kind      int16
	group     string
	member    string
	tombstone bool
	epoch     int32                // kinds 3 and 6
	topics    map[string]topicMeta // kind 4
	sub       memberSub            // kind 5
	target    partSet              // kind 7
	current   memberAssignment     // kind 8
}

var errBadRecord = errors.New("malformed consumer group record")

// encode is the record's key and value in __consumer_offsets.
func (r cgRecord) encode() Record {
	if r.tombstone {
		return cgTombstone(r.kind, r.group, r.member)
	}
	switch r.kind {
	case keyConsumerGroupMetadata:
		return cgEpochRecord(r.group, r.epoch)
	case keyConsumerGroupPartitionMeta:
		return cgTopicsRecord(r.group, r.topics)
	case keyConsumerGroupMemberMetadata:
		return cgMemberRecord(r.group, r.member, r.sub)
	case keyConsumerGroupTargetMetadata:
		return cgTargetEpochRecord(r.group, r.epoch)
	case keyConsumerGroupTargetMember:
		return cgTargetRecord(r.group, r.member, r.target)
	default:
		return cgCurrentRecord(r.group, r.member, r.current)
	}
}

// maxRecordArray bounds array lengths read from a record: each element
// takes at least one byte, so a longer array cannot be in the value.
func readArrayLen(r *kbin.Reader) int {
	n := int(r.CompactArrayLen())
	if n < 0 || n > len(r.Src) {
		r.Src, n = nil, 0
		_ = r.Span(1) // marks the reader bad
	}
	return n
}

// decodeConsumerRecord parses a record whose key version is 3 to 8.
// Bytes come from disk or another broker: malformed input is an error,
// never a panic.
func decodeConsumerRecord(key, value []byte) (cgRecord, error) {
	kr := kbin.Reader{Src: key}
	rec := cgRecord{kind: kr.Int16()}
	if !isConsumerGroupKey(rec.kind) {
		return rec, fmt.Errorf("%w: key version %d", errBadRecord, rec.kind)
	}
	rec.group = kr.String()
	if hasMemberKey(rec.kind) {
		rec.member = kr.String()
	}
	if err := kr.Complete(); err != nil {
		return rec, fmt.Errorf("%w: key of type %d: %v", errBadRecord, rec.kind, err)
	}
	if value == nil {
		rec.tombstone = true
		return rec, nil
	}
	r := kbin.Reader{Src: value}
	if v := r.Int16(); v != 0 {
		return rec, fmt.Errorf("%w: type %d value version %d", errBadRecord, rec.kind, v)
	}
	switch rec.kind {
	case keyConsumerGroupMetadata, keyConsumerGroupTargetMetadata:
		rec.epoch = r.Int32()
	case keyConsumerGroupPartitionMeta:
		rec.topics = map[string]topicMeta{}
		for n := readArrayLen(&r); n > 0; n-- {
			t := topicMeta{id: r.Uuid(), name: r.CompactString(), partitions: r.Int32()}
			for racks := readArrayLen(&r); racks > 0; racks-- {
				r.Int32()
				for k := readArrayLen(&r); k > 0; k-- {
					r.CompactString()
				}
				skipTags(&r)
			}
			skipTags(&r)
			rec.topics[t.name] = t
		}
	case keyConsumerGroupMemberMetadata:
		s := &rec.sub
		s.instanceID, s.rackID = deref(r.CompactNullableString()), deref(r.CompactNullableString())
		s.clientID, s.clientHost = r.CompactString(), r.CompactString()
		for n := readArrayLen(&r); n > 0; n-- {
			s.topics = append(s.topics, r.CompactString())
		}
		slices.Sort(s.topics)
		s.topics = slices.Compact(s.topics)
		s.regex = deref(r.CompactNullableString())
		s.rebalanceTimeout = time.Duration(r.Int32()) * time.Millisecond
		s.assignor = deref(r.CompactNullableString())
	case keyConsumerGroupTargetMember:
		rec.target, _ = readTopicPartitions(&r)
	case keyConsumerGroupCurrentMember:
		a := newMemberAssignment()
		a.epoch, a.prevEpoch, a.state = r.Int32(), r.Int32(), memberState(r.Int8())
		var sinceA, sinceP map[tidp]int32
		a.assigned, sinceA = readTopicPartitions(&r)
		a.pending, sinceP = readTopicPartitions(&r)
		for _, m := range []map[tidp]int32{sinceA, sinceP} {
			for k, v := range m {
				a.since[k] = v
			}
		}
		// Records written before KIP-1251 carry no assignment epochs:
		// the partitions count as owned since the member's epoch.
		for _, s := range []partSet{a.assigned, a.pending} {
			for id, ps := range s {
				for _, p := range ps {
					if _, ok := a.since[tidp{id, p}]; !ok {
						a.since[tidp{id, p}] = max(a.epoch, 0)
					}
				}
			}
		}
		rec.current = a
	}
	skipTags(&r)
	if err := r.Complete(); err != nil {
		return rec, fmt.Errorf("%w: value of type %d for group %s: %v", errBadRecord, rec.kind, rec.group, err)
	}
	return rec, nil
}

// readTopicPartitions reads []TopicPartitions with their optional
// AssignmentEpochs tag.
func readTopicPartitions(r *kbin.Reader) (partSet, map[tidp]int32) {
	s, since := partSet{}, map[tidp]int32{}
	for n := readArrayLen(r); n > 0; n-- {
		id := r.Uuid()
		var ps []int32
		for k := readArrayLen(r); k > 0; k-- {
			ps = append(ps, r.Int32())
		}
		for tags := r.Uvarint(); tags > 0 && r.Ok(); tags-- {
			tag, size := r.Uvarint(), r.Uvarint()
			body := r.Span(int(size))
			if tag != 0 {
				continue
			}
			tr := kbin.Reader{Src: body}
			k := int(tr.CompactArrayLen())
			if k != len(ps) || k > len(body) {
				continue // missing (null) or inconsistent epochs: ignore them
			}
			for i := range k {
				since[tidp{id, ps[i]}] = tr.Int32()
			}
		}
		s[id] = append(s[id], ps...)
	}
	return s.normalize(), since
}

func skipTags(r *kbin.Reader) {
	for n := r.Uvarint(); n > 0 && r.Ok(); n-- {
		r.Uvarint()
		r.Span(int(r.Uvarint()))
	}
}

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}
