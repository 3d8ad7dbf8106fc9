// Package interop proves with real Kafka clients (franz-go, kcat /
// librdkafka, kafka-python, confluent-kafka-python) that the weir broker
// speaks Kafka: every client produces and consumes with every codec, keyed
// records land where Java's partitioner puts them, offsets can be listed by
// time, and topics are administered through kadm.
package interop

import (
	"testing"

	"github.com/weir-project/weir/test/harness"
)

func TestMain(m *testing.M) { harness.Main(m) }
