package group

import (
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
)

// Regression tests for bugs found in review; each names what was wrong.

// OffsetDelete must refuse topics a consumer group member subscribes to by
// regex, not only by name: the member is consuming them.
func TestConsumerOffsetDeleteRefusesRegexSubscribedTopic(t *testing.T) {
	e := newCEnv(t)
	re := "t[12]"
	m := &cmemberSim{e: e, group: "g", id: "m"}
	m.apply(ok(t, e.c.ConsumerHeartbeat(ConsumerHeartbeatRequest{Version: 1, Group: "g", MemberID: "m",
		RebalanceTimeoutMs: 30000, SubscribedRegex: &re, Owned: []TopicPartitionsByID{}})))
	errs := e.c.CommitOffsets(CommitRequest{Group: "g", MemberID: "m", Generation: m.epoch, APIVersion: 9,
		Offsets: []CommitOffset{{Topic: "t1", Partition: 0, Offset: 7, LeaderEpoch: -1}}})
	wantErr(t, errs[0], nil)
	perr, err := e.c.DeleteOffsets("g", []TopicPartitions{{Topic: "t1", Partitions: []int32{0}}})
	wantErr(t, err, nil)
	wantErr(t, perr[0][0], kerr.GroupSubscribedToTopic)
	if f := fetchOne(t, e.env, "g", "t1", 0); f.Offset != 7 {
		t.Fatalf("offset of a regex-subscribed topic deleted: %+v", f)
	}
}
