package group

import (
	"context"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// Regression tests for bugs found in review; each names what was wrong.

// OffsetDelete must refuse topics a consumer group member subscribes to by
// regex, not only by name: the member is consuming them.
func TestConsumerOffsetDeleteRefusesRegexSubscribedTopic(t *testing.T) {
	e := newCEnv(t)
	re := "t[12]"
	m := &cmemberSim{e: e, group: "g", id: "m"}
	m.apply(ok(t, e.c.ConsumerHeartbeat(context.Background(), ConsumerHeartbeatRequest{Version: 1, Group: "g", MemberID: "m",
		RebalanceTimeoutMs: 30000, SubscribedRegex: &re, Owned: []TopicPartitionsByID{}})))
	errs := e.c.CommitOffsets(context.Background(), CommitRequest{Group: "g", MemberID: "m", Generation: m.epoch, APIVersion: 9,
		Offsets: []CommitOffset{{Topic: "t1", Partition: 0, Offset: 7, LeaderEpoch: -1}}})
	wantErr(t, errs[0], nil)
	perr, err := e.c.DeleteOffsets(context.Background(), "g", []TopicPartitions{{Topic: "t1", Partitions: []int32{0}}})
	wantErr(t, err, nil)
	wantErr(t, perr[0][0], kerr.GroupSubscribedToTopic)
	if f := fetchOne(t, e.env, "g", "t1", 0); f.Offset != 7 {
		t.Fatalf("offset of a regex-subscribed topic deleted: %+v", f)
	}
}

// stableSubscribedGroup forms a classic consumer-protocol group of one
// member subscribed to topic t1, so that its subscriptions are known.
func stableSubscribedGroup(t *testing.T, e *env, group string) (string, int32) {
	t.Helper()
	meta := kmsg.NewConsumerMemberMetadata()
	meta.Topics = []string{"t1"}
	req := joinReq(group, "", "c1")
	req.Protocols = []Protocol{{Name: "range", Metadata: meta.AppendTo(nil)}}
	j := e.joinAsync(req)
	e.clock.Advance(2 * time.Second)
	r := j.done(t)
	wantKerr(t, r.Err, nil)
	s := e.syncAsync(SyncRequest{Group: group, MemberID: r.MemberID, Generation: r.Generation, Assignments: map[string][]byte{}}).done(t)
	wantKerr(t, s.Err, nil)
	return r.MemberID, r.Generation
}

// A commit's own retention time (OffsetCommit v2-v4) must not expire the
// offset of a topic an active group still consumes: Kafka applies the
// expire timestamp only to offsets that may expire at all (empty group,
// unsubscribed topic, simple group).
func TestExplicitRetentionDoesNotExpireSubscribedOffsets(t *testing.T) {
	e := newEnv(t, time.Second)
	id, gen := stableSubscribedGroup(t, e, "g")
	errs := commit(e, CommitRequest{Group: "g", MemberID: id, Generation: gen, Retention: time.Minute,
		Offsets: []CommitOffset{{Topic: "t1", Partition: 0, Offset: 5}, {Topic: "t2", Partition: 0, Offset: 6}}})
	wantErr(t, errs[0], nil)
	wantErr(t, errs[1], nil)
	for i := 0; i < 24; i++ { // two minutes, heartbeating
		e.clock.Advance(5 * time.Second)
		wantErr(t, e.c.Heartbeat(HeartbeatRequest{Group: "g", MemberID: id, Generation: gen}), nil)
	}
	if n := e.c.ExpireOffsets(); n != 1 {
		t.Fatalf("expired %d offsets, want 1 (t2, not subscribed)", n)
	}
	if f := fetchOne(t, e, "g", "t1", 0); f.Offset != 5 {
		t.Fatalf("subscribed topic's offset expired while the group consumes it: %+v", f)
	}
}

func TestExplicitRetentionDoesNotExpireConsumerGroupSubscribedOffsets(t *testing.T) {
	e := newCEnv(t)
	m, _ := e.join("g", "m", "t1")
	ok(t, m.leave())
	errs := e.c.CommitOffsets(context.Background(), CommitRequest{Group: "g", Generation: -1, APIVersion: 2, Retention: time.Minute,
		Offsets: []CommitOffset{{Topic: "t1", Partition: 0, Offset: 5}}})
	wantErr(t, errs[0], nil)
	m, _ = e.join("g", "m2", "t1")
	for i := 0; i < 24; i++ {
		e.clock.Advance(5 * time.Second)
		ok(t, m.keepalive())
	}
	if n := e.c.ExpireOffsets(); n != 0 {
		t.Fatalf("expired %d offsets of a subscribed topic", n)
	}
	if f := fetchOne(t, e.env, "g", "t1", 0); f.Offset != 5 {
		t.Fatalf("offset gone: %+v", f)
	}
}

// A group metadata record older than value version 2 (Kafka before 2.1)
// has no current-state timestamp; the offsets of such an empty group
// expire by their commit time, as Kafka does, not at once as if the
// group had been empty since 1970.
func TestEmptyGroupWithoutStateTimestampExpiresByCommitTime(t *testing.T) {
	e := newEnv(t, 0)
	v := kmsg.NewGroupMetadataValue()
	v.Version, v.ProtocolType, v.Generation = 1, "consumer", 3
	k := kmsg.NewGroupMetadataKey()
	k.Version, k.Group = 2, "old"
	now := e.clock.Now()
	e.log.Append(context.Background(), 0, []Record{
		{Key: k.AppendTo(nil), Value: v.AppendTo(nil)},
		offsetRecord("old", tp{"t1", 0}, Offset{Offset: 9, LeaderEpoch: -1, CommitTime: now}),
	})
	e = e.reopen()
	if n := e.c.ExpireOffsets(); n != 0 {
		t.Fatalf("expired %d offsets committed just now", n)
	}
	if f := fetchOne(t, e, "old", "t1", 0); f.Offset != 9 {
		t.Fatalf("offset gone: %+v", f)
	}
	e.clock.Advance(7*24*time.Hour + time.Minute)
	if n := e.c.ExpireOffsets(); n != 1 {
		t.Fatalf("expired %d offsets after the retention, want 1", n)
	}
}
