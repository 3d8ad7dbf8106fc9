package cli_test

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/weir-project/weir/test/harness"
)

// produceSized writes one uncompressed record of n bytes to topic with an
// independent franz-go client and returns the broker's verdict.
func produceSized(t *testing.T, b *harness.Broker, topic string, n int) error {
	t.Helper()
	cl := b.Client(kgo.ProducerBatchCompression(kgo.NoCompression()))
	defer cl.Close()
	return cl.ProduceSync(harness.Ctx(t, opTimeout), &kgo.Record{Topic: topic, Value: []byte(strings.Repeat("x", n))}).FirstErr()
}

// TestConfigBrokerAlter: the broker-wide topic defaults change at runtime,
// cluster-wide (--broker-defaults) or for one broker (--broker), as
// kafka-configs does it; the broker applies them at once and after a
// restart, and refuses, with Kafka's errors, what it cannot change.
func TestConfigBrokerAlter(t *testing.T) {
	t.Parallel()
	b := harness.StartBroker(t, "auto.create.topics.enable=false")
	bs := bootstrap(b)
	createTopic(t, newAdmin(t, b), "dyn", 1)
	md, err := newAdmin(t, b).BrokerMetadata(harness.Ctx(t, opTimeout))
	if err != nil {
		t.Fatal(err)
	}
	id := md.Brokers.NodeIDs()[0]
	broker := fmt.Sprintf("--broker=%d", id)
	describe := func(args ...string) map[string]configRow {
		return configTable(t, ok(t, "", append([]string{"config", "describe", bs}, args...)...).stdout)
	}
	if err := produceSized(t, b, "dyn", 7000); err != nil {
		t.Fatalf("7000-byte record under the default message.max.bytes: %v", err)
	}

	r := ok(t, "", "config", "alter", "--broker-defaults", "--add-config", "message.max.bytes=5000,log.retention.hours=24", bs)
	if r.stdout != "Completed updating default config for brokers in the cluster.\n" {
		t.Errorf("alter --broker-defaults printed %q", r.stdout)
	}
	want := map[string]configRow{
		"message.max.bytes":   {"5000", "DYNAMIC_DEFAULT_BROKER_CONFIG"},
		"log.retention.hours": {"24", "DYNAMIC_DEFAULT_BROKER_CONFIG"},
	}
	if got := describe("--broker-defaults"); fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("describe --broker-defaults = %v, want %v", got, want)
	}
	// The cluster-wide resource holds only what was set on it, as in Kafka.
	rcs, err := newAdmin(t, b).DescribeBrokerConfigs(harness.Ctx(t, opTimeout))
	if err != nil || len(rcs) != 1 || rcs[0].Err != nil || len(rcs[0].Configs) != 2 {
		t.Errorf("franz-go: the cluster-wide broker resource = %+v, %v; want the two configs set", rcs, err)
	}
	// The topic follows at once: franz-go sees the new default and the
	// broker refuses a batch over it.
	if c := kadmConfigs(t, b, "dyn", 0)["max.message.bytes"]; c.MaybeValue() != "5000" || c.Source.String() != "DYNAMIC_DEFAULT_BROKER_CONFIG" {
		t.Errorf("franz-go: topic max.message.bytes = %q from %s", c.MaybeValue(), c.Source)
	}
	if c := kadmConfigs(t, b, "dyn", 0)["retention.ms"]; c.MaybeValue() != "86400000" {
		t.Errorf("franz-go: topic retention.ms = %q, want 24 h", c.MaybeValue())
	}
	if err := produceSized(t, b, "dyn", 7000); !errors.Is(err, kerr.MessageTooLarge) {
		t.Errorf("7000-byte record over a dynamic message.max.bytes=5000: %v, want MESSAGE_TOO_LARGE", err)
	}

	// This broker's own value wins over the cluster default.
	r = ok(t, "", "config", "alter", broker, "--add-config", "message.max.bytes=8000", bs)
	if want := fmt.Sprintf("Completed updating config for broker %d.\n", id); r.stdout != want {
		t.Errorf("alter --broker printed %q, want %q", r.stdout, want)
	}
	if got := describe(broker); fmt.Sprint(got) != fmt.Sprint(map[string]configRow{"message.max.bytes": {"8000", "DYNAMIC_BROKER_CONFIG"}}) {
		t.Errorf("describe --broker = %v", got)
	}
	all := describe(broker, "--all")
	for name, w := range map[string]configRow{
		"message.max.bytes":   {"8000", "DYNAMIC_BROKER_CONFIG"},
		"log.retention.hours": {"24", "DYNAMIC_DEFAULT_BROKER_CONFIG"},
		"log.segment.bytes":   {"1073741824", "DEFAULT_CONFIG"},
	} {
		if all[name] != w {
			t.Errorf("describe --broker --all: %s = %+v, want %+v", name, all[name], w)
		}
	}
	if err := produceSized(t, b, "dyn", 7000); err != nil {
		t.Errorf("7000-byte record under this broker's message.max.bytes=8000: %v", err)
	}
	// kafka-python reads the broker's value and its source (2: DYNAMIC_BROKER_CONFIG).
	got := kafkaPython(t, b, `
import sys
from kafka.admin import KafkaAdminClient, ConfigResource, ConfigResourceType
a = KafkaAdminClient(bootstrap_servers=sys.argv[1])
res = a.describe_configs([ConfigResource(ConfigResourceType.BROKER, sys.argv[2])], include_synonyms=True)
e = [e for e in res[0].resources[0][4] if e[0] == "message.max.bytes"][0]
print(e[1], e[3], e[2])`, fmt.Sprint(id))
	if got != "8000 2 False" {
		t.Errorf("kafka-python reads message.max.bytes as %q, want value 8000, source 2, not read-only", got)
	}

	// Refusals: Kafka's error in one line, and nothing changes.
	alter := func(args ...string) []string { return append([]string{"config", "alter", bs}, args...) }
	failsWith(t, "", alter(broker, "--add-config", "log.dirs=/elsewhere"),
		fmt.Sprintf("broker %d", id), "INVALID_REQUEST", "Cannot update these configs dynamically", "log.dirs")
	failsWith(t, "", alter("--broker-defaults", "--add-config", "num.partitions=3"), "INVALID_REQUEST", "num.partitions")
	failsWith(t, "", alter(broker, "--add-config", "no.such.key=1"), "INVALID_CONFIG", "no.such.key")
	failsWith(t, "", alter(broker, "--add-config", "retention.ms=1"), "INVALID_CONFIG", "topic-level", "log.retention.ms")
	failsWith(t, "", alter(broker, "--add-config", "message.max.bytes=big"), "INVALID_CONFIG", "big")
	failsWith(t, "", alter(broker, "--add-config", "message.max.bytes=9000,log.dirs=/x"), "INVALID_REQUEST", "log.dirs")
	failsWith(t, "", alter(broker, "--delete-config", "log.segment.bytes"), "Invalid config(s): log.segment.bytes")
	failsWith(t, "", alter("--broker=77", "--add-config", "message.max.bytes=1"), "broker 77", "not in the cluster")
	failsAtDeadAddress(t, "config", "alter", "--broker-defaults", "--add-config", "message.max.bytes=1")
	failsAtDeadAddress(t, "config", "describe", "--broker-defaults")
	if got := describe(broker); fmt.Sprint(got) != fmt.Sprint(map[string]configRow{"message.max.bytes": {"8000", "DYNAMIC_BROKER_CONFIG"}}) {
		t.Errorf("after the refusals, describe --broker = %v", got)
	}

	// Deleting this broker's value brings the cluster default back.
	ok(t, "", "config", "alter", broker, "--delete-config", "message.max.bytes", bs)
	if got := describe(broker, "--all")["message.max.bytes"]; got != (configRow{"5000", "DYNAMIC_DEFAULT_BROKER_CONFIG"}) {
		t.Errorf("after delete, message.max.bytes = %+v", got)
	}

	// Dynamic configs are in the metadata log: they hold after a restart.
	b.Stop()
	b.Restart()
	if got := describe("--broker-defaults"); fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("after a restart, describe --broker-defaults = %v, want %v", got, want)
	}
	if err := produceSized(t, b, "dyn", 7000); !errors.Is(err, kerr.MessageTooLarge) {
		t.Errorf("after a restart, a 7000-byte record: %v, want MESSAGE_TOO_LARGE", err)
	}
	ok(t, "", "config", "alter", "--broker-defaults", "--delete-config", "message.max.bytes,log.retention.hours", bs)
	if got := describe("--broker-defaults"); len(got) != 0 {
		t.Errorf("after deleting them, describe --broker-defaults = %v", got)
	}
	if err := produceSized(t, b, "dyn", 7000); err != nil {
		t.Errorf("back to the default message.max.bytes, a 7000-byte record: %v", err)
	}
}
