package reassign

import (
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/weir-project/weir/test/harness"
)

// alterReq is an AlterPartitionReassignments of one topic's partitions;
// a nil target cancels.
func alterReq(version int16, allowRF bool, topic string, targets map[int32][]int32) *kmsg.AlterPartitionAssignmentsRequest {
	req := kmsg.NewPtrAlterPartitionAssignmentsRequest()
	req.Version, req.AllowReplicationFactorChange = version, allowRF
	rt := kmsg.NewAlterPartitionAssignmentsRequestTopic()
	rt.Topic = topic
	for p, r := range targets {
		rp := kmsg.NewAlterPartitionAssignmentsRequestTopicPartition()
		rp.Partition, rp.Replicas = p, r
		rt.Partitions = append(rt.Partitions, rp)
	}
	req.Topics = append(req.Topics, rt)
	return req
}

// TestReassignBadRequests: Kafka's error codes, per partition, for every
// kind of bad AlterPartitionReassignments, sent raw to the controller and
// to brokers that forward it; none changes anything, and
// ListPartitionReassignments leaves out unknown topics and partitions.
func TestReassignBadRequests(t *testing.T) {
	c := harness.StartCluster(t, 3)
	c.CreateAssignedTopic("bad", [][]int32{{1, 2}, {2, 3}}, nil, opTimeout)
	cases := []struct {
		name    string
		version int16
		allowRF bool
		topic   string
		targets map[int32][]int32
		want    *kerr.Error
	}{
		{"unknown topic", 0, true, "nope", map[int32][]int32{0: {1, 2}}, kerr.UnknownTopicOrPartition},
		{"unknown partition", 0, true, "bad", map[int32][]int32{7: {1, 2}}, kerr.UnknownTopicOrPartition},
		{"negative partition", 0, true, "bad", map[int32][]int32{-1: {1, 2}}, kerr.UnknownTopicOrPartition},
		{"empty replicas", 0, true, "bad", map[int32][]int32{0: {}}, kerr.InvalidReplicaAssignment},
		{"duplicate replica", 0, true, "bad", map[int32][]int32{0: {1, 1}}, kerr.InvalidReplicaAssignment},
		{"unknown broker", 0, true, "bad", map[int32][]int32{0: {1, 9}}, kerr.InvalidReplicaAssignment},
		{"negative broker", 0, true, "bad", map[int32][]int32{0: {1, -1}}, kerr.InvalidReplicaAssignment},
		{"cancel none", 0, true, "bad", map[int32][]int32{0: nil}, kerr.NoReassignmentInProgress},
		{"rf change refused (v1)", 1, false, "bad", map[int32][]int32{0: {1, 2, 3}}, kerr.InvalidReplicationFactor},
		{"same replicas", 1, false, "bad", map[int32][]int32{0: {1, 2}}, nil},
	}
	for i, node := range c.Nodes {
		id := i + 1
		conn := node.Dial()
		for _, tc := range cases {
			resp, _ := conn.Request(alterReq(tc.version, tc.allowRF, tc.topic, tc.targets))
			r := resp.(*kmsg.AlterPartitionAssignmentsResponse)
			if r.ErrorCode != 0 || len(r.Topics) != 1 || len(r.Topics[0].Partitions) != 1 {
				t.Fatalf("node %d, %s: top-level %d, %+v", id, tc.name, r.ErrorCode, r.Topics)
			}
			got := r.Topics[0].Partitions[0]
			if want := int16(0); tc.want != nil {
				want = tc.want.Code
				if got.ErrorCode != want {
					t.Errorf("node %d, %s: error %d (%v), want %s", id, tc.name, got.ErrorCode, kerr.ErrorForCode(got.ErrorCode), tc.want.Message)
				}
			} else if got.ErrorCode != 0 {
				t.Errorf("node %d, %s: error %v", id, tc.name, kerr.ErrorForCode(got.ErrorCode))
			}
			if tc.version == 1 && r.AllowReplicationFactorChange != tc.allowRF {
				t.Errorf("node %d, %s: AllowReplicationFactorChange echoed %v", id, tc.name, r.AllowReplicationFactorChange)
			}
		}
		if got := inProgress(t, conn); len(got) != 0 {
			t.Fatalf("node %d: refused requests left reassignments %+v", id, got)
		}
		// Unknown topics and partitions are left out of a listing.
		list := kmsg.NewPtrListPartitionReassignmentsRequest()
		for _, name := range []string{"nope", "bad"} {
			lt := kmsg.NewListPartitionReassignmentsRequestTopic()
			lt.Topic, lt.Partitions = name, []int32{0, 9, -1}
			list.Topics = append(list.Topics, lt)
		}
		resp, _ := conn.Request(list)
		if lr := resp.(*kmsg.ListPartitionReassignmentsResponse); lr.ErrorCode != 0 || len(lr.Topics) != 0 {
			t.Fatalf("node %d: listing %+v", id, lr)
		}
	}
	for p, want := range [][]int32{{1, 2}, {2, 3}} {
		waitPlaced(t, c, "bad", int32(p), want, opTimeout)
	}
}
