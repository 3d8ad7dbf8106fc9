// Package consumergroups proves the next-generation consumer group
// protocol (KIP-848: ConsumerGroupHeartbeat, ConsumerGroupDescribe) with
// the real binary: franz-go members using the consumer protocol
// (kgo.ServerSideBalancer) split partitions disjointly under the
// server-side uniform and range assignors, take over the partitions of a
// member that leaves or dies, and find their group and offsets again
// after the broker is killed; raw kmsg requests check the protocol's
// errors (fencing, unknown members, bad assignors) and the group type
// rules against classic members.
package consumergroups

import (
	"testing"

	"github.com/weir-project/weir/test/harness"
)

func TestMain(m *testing.M) { harness.Main(m) }
