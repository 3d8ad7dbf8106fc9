// Package groups proves the consumer group coordinator with real clients:
// franz-go (range and cooperative-sticky), kafka-python, confluent-kafka
// and kcat -G share partitions disjointly, take over the partitions of a
// member that leaves or dies, resume at committed offsets, and find their
// groups and offsets again after the broker is killed and restarted, and
// forget the offsets of a deleted topic (a re-created one is read from its
// start).
package groups

import (
	"testing"

	"github.com/weir-project/weir/test/harness"
)

func TestMain(m *testing.M) { harness.Main(m) }
