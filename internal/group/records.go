package group

import (
	"errors"
	"fmt"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// Record is one key/value record of __consumer_offsets; a nil Value is a
// tombstone (compaction then drops the key).
type Record struct {
	Key   []byte
	Value []byte
}

// Versions of the record encodings we write: the ones Kafka 2.3 to 3.x
// writes, which every later Kafka still reads.
const (
	offsetKeyVersion             = 1 // 0 and 1 are identical; Kafka writes 1
	groupKeyVersion              = 2
	offsetValueVersion           = 3 // with leader epoch, without expire timestamp
	offsetValueVersionWithExpiry = 1 // commits carrying a retention time (OffsetCommit v2-v4)
	offsetValueVersionWithID     = 4 // flexible, with the topic id as tag 0 (Kafka 4.1+, KAFKA-19141)
	groupValueVersion            = 3 // with static member instance ids
)

// errNotGroupRecord marks a record whose key is of a kind we do not use
// (for example KIP-848 records written by a newer Kafka): replay skips it.
var errNotGroupRecord = errors.New("not a classic group or offset record")

// Offset is one committed offset.
type Offset struct {
	Offset      int64
	LeaderEpoch int32 // -1 = unknown
	Metadata    string
	CommitTime  time.Time
	// ExpireTime is set only for commits that asked for a retention time
	// (OffsetCommit v2-v4); zero means "per offsets.retention.minutes".
	ExpireTime time.Time
	// TopicID is the id the topic had when the offset was committed; zero
	// if unknown (a record without one, or a commit with a retention
	// time, whose value version cannot carry it). An offset whose topic
	// has another id now belongs to a deleted topic (deleted.go).
	TopicID TopicID
}

// tp names a topic partition inside a group's offsets.
type tp struct {
	topic     string
	partition int32
}

func offsetRecord(group string, t tp, o Offset) Record {
	k := kmsg.NewOffsetCommitKey()
	k.Version, k.Group, k.Topic, k.Partition = offsetKeyVersion, group, t.topic, t.partition
	v := kmsg.NewOffsetCommitValue()
	v.Version = offsetValueVersion
	v.Offset, v.LeaderEpoch, v.Metadata = o.Offset, o.LeaderEpoch, o.Metadata
	v.CommitTimestamp = o.CommitTime.UnixMilli()
	switch {
	case !o.ExpireTime.IsZero():
		v.Version = offsetValueVersionWithExpiry
		v.ExpireTimestamp = o.ExpireTime.UnixMilli()
	case o.TopicID != TopicID{}:
		v.Version = offsetValueVersionWithID
		v.TopicID = o.TopicID
	}
	return Record{Key: k.AppendTo(nil), Value: v.AppendTo(nil)}
}

func offsetTombstone(group string, t tp) Record {
	k := kmsg.NewOffsetCommitKey()
	k.Version, k.Group, k.Topic, k.Partition = offsetKeyVersion, group, t.topic, t.partition
	return Record{Key: k.AppendTo(nil)}
}

func groupRecord(group string, v *kmsg.GroupMetadataValue) Record {
	v.Version = groupValueVersion
	return Record{Key: groupKey(group), Value: v.AppendTo(nil)}
}

func groupKey(group string) []byte {
	k := kmsg.NewGroupMetadataKey()
	k.Version, k.Group = groupKeyVersion, group
	return k.AppendTo(nil)
}

func groupTombstone(group string) Record {
	return Record{Key: groupKey(group)}
}

// decoded is one replayed record.
type decoded struct {
	group string
	// Exactly one of the following kinds is set.
	isOffset bool
	tp       tp
	offset   *Offset                  // nil: offset tombstone
	meta     *kmsg.GroupMetadataValue // nil: group tombstone (when !isOffset)
}

// decodeRecord parses a record of __consumer_offsets. Keys with version 0
// or 1 are offset commits, 2 is group metadata; anything else is
// errNotGroupRecord. Bytes come from disk (or another broker): a record
// that does not parse is an error, never a panic.
func decodeRecord(key, value []byte) (decoded, error) {
	if len(key) < 2 {
		return decoded{}, fmt.Errorf("record key of %d bytes: too short", len(key))
	}
	version := int16(key[0])<<8 | int16(key[1])
	switch version {
	case 0, 1:
		var k kmsg.OffsetCommitKey
		if err := k.ReadFrom(key); err != nil {
			return decoded{}, fmt.Errorf("offset commit key: %w", err)
		}
		d := decoded{group: k.Group, isOffset: true, tp: tp{k.Topic, k.Partition}}
		if value == nil {
			return d, nil
		}
		var v kmsg.OffsetCommitValue
		if err := v.ReadFrom(value); err != nil {
			return decoded{}, fmt.Errorf("offset commit value for %s %s-%d: %w", k.Group, k.Topic, k.Partition, err)
		}
		o := &Offset{Offset: v.Offset, LeaderEpoch: -1, Metadata: v.Metadata, CommitTime: time.UnixMilli(v.CommitTimestamp)}
		if v.Version >= 3 {
			o.LeaderEpoch = v.LeaderEpoch
		}
		if v.Version == 1 && v.ExpireTimestamp > 0 {
			o.ExpireTime = time.UnixMilli(v.ExpireTimestamp)
		}
		if v.Version >= 4 {
			o.TopicID = v.TopicID
		}
		d.offset = o
		return d, nil
	case 2:
		var k kmsg.GroupMetadataKey
		if err := k.ReadFrom(key); err != nil {
			return decoded{}, fmt.Errorf("group metadata key: %w", err)
		}
		d := decoded{group: k.Group}
		if value == nil {
			return d, nil
		}
		v := new(kmsg.GroupMetadataValue)
		if err := v.ReadFrom(value); err != nil {
			return decoded{}, fmt.Errorf("group metadata value for %s: %w", k.Group, err)
		}
		d.meta = v
		return d, nil
	default:
		return decoded{}, fmt.Errorf("%w: key version %d", errNotGroupRecord, version)
	}
}
