package cli_test

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kadm"

	"github.com/weir-project/weir/test/harness"
)

// configRow is one row of `config describe`: NAME VALUE SOURCE.
type configRow struct{ value, source string }

// configTable parses `config describe` output into name -> row, checking
// the header.
func configTable(t *testing.T, out string) map[string]configRow {
	t.Helper()
	ls := lines(out)
	if len(ls) == 0 || strings.Join(strings.Fields(ls[0]), " ") != "NAME VALUE SOURCE" {
		t.Fatalf("config describe output has no NAME VALUE SOURCE header:\n%s", out)
	}
	rows := map[string]configRow{}
	for _, l := range ls[1:] {
		f := strings.Fields(l)
		if len(f) != 3 {
			t.Fatalf("config describe row %q is not NAME VALUE SOURCE", l)
		}
		rows[f[0]] = configRow{f[1], f[2]}
	}
	return rows
}

// configJSON is `config describe --output json`.
type configJSON struct {
	EntityType string `json:"entityType"`
	EntityName string `json:"entityName"`
	Configs    []struct {
		Name      string  `json:"name"`
		Value     *string `json:"value"`
		Source    string  `json:"source"`
		Sensitive bool    `json:"sensitive"`
		Synonyms  []struct {
			Name   string  `json:"name"`
			Value  *string `json:"value"`
			Source string  `json:"source"`
		} `json:"synonyms"`
	} `json:"configs"`
}

// kadmConfigs is the resource's configs as franz-go's admin client sees them.
func kadmConfigs(t *testing.T, b *harness.Broker, topic string, broker int32) map[string]kadm.Config {
	t.Helper()
	adm := newAdmin(t, b)
	var rcs kadm.ResourceConfigs
	var err error
	if topic != "" {
		rcs, err = adm.DescribeTopicConfigs(harness.Ctx(t, opTimeout), topic)
	} else {
		rcs, err = adm.DescribeBrokerConfigs(harness.Ctx(t, opTimeout), broker)
	}
	if err != nil || len(rcs) != 1 || rcs[0].Err != nil {
		t.Fatalf("describe configs: %v %+v", err, rcs)
	}
	out := map[string]kadm.Config{}
	for _, c := range rcs[0].Configs {
		out[c.Key] = c
	}
	return out
}

// TestConfigTopic: `config describe/alter --topic` show and change a
// topic's configs as kafka-configs does, checked with franz-go and
// kafka-python.
func TestConfigTopic(t *testing.T) {
	t.Parallel()
	// A static broker value shows as the topic's source until overridden.
	b := harness.StartBroker(t, "auto.create.topics.enable=false", "log.segment.bytes=2097152")
	bs := bootstrap(b)
	createTopic(t, newAdmin(t, b), "cfg", 1)

	describe := func(args ...string) string {
		return ok(t, "", append([]string{"config", "describe", "--topic", "cfg", bs}, args...)...).stdout
	}
	if rows := configTable(t, describe()); len(rows) != 0 {
		t.Errorf("a new topic's dynamic configs = %v, want none", rows)
	}

	r := ok(t, "", "config", "alter", "--topic", "cfg", "--add-config", "retention.ms=60000,cleanup.policy=[compact,delete]",
		"--add-config", "max.message.bytes = 200000", bs)
	if r.stdout != "Completed updating config for topic cfg.\n" {
		t.Errorf("alter printed %q", r.stdout)
	}
	want := map[string]configRow{
		"retention.ms":      {"60000", "DYNAMIC_TOPIC_CONFIG"},
		"cleanup.policy":    {"compact,delete", "DYNAMIC_TOPIC_CONFIG"},
		"max.message.bytes": {"200000", "DYNAMIC_TOPIC_CONFIG"},
	}
	if got := configTable(t, describe()); fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("dynamic configs = %v, want %v", got, want)
	}

	// --all: every config franz-go sees, with the same value and source.
	all := configTable(t, describe("--all"))
	seen := kadmConfigs(t, b, "cfg", 0)
	if len(all) != len(seen) || len(all) < 10 {
		t.Errorf("--all shows %d configs, franz-go sees %d", len(all), len(seen))
	}
	for name, c := range seen {
		if row := all[name]; row.value != c.MaybeValue() || row.source != c.Source.String() {
			t.Errorf("--all %s = %+v, franz-go sees %q %s", name, row, c.MaybeValue(), c.Source)
		}
	}
	for name, w := range map[string]configRow{
		"retention.ms":  {"60000", "DYNAMIC_TOPIC_CONFIG"},
		"segment.bytes": {"2097152", "STATIC_BROKER_CONFIG"},
		"segment.ms":    {"604800000", "DEFAULT_CONFIG"},
	} {
		if all[name] != w {
			t.Errorf("--all %s = %+v, want %+v", name, all[name], w)
		}
	}

	// kafka-python reads the same values back.
	got := kafkaPython(t, b, `
import sys
from kafka.admin import KafkaAdminClient, ConfigResource, ConfigResourceType
a = KafkaAdminClient(bootstrap_servers=sys.argv[1])
res = a.describe_configs([ConfigResource(ConfigResourceType.TOPIC, sys.argv[2])])
entries = {e[0]: e[1] for e in res[0].resources[0][4]}
print(entries["retention.ms"], entries["cleanup.policy"], entries["max.message.bytes"])`, "cfg")
	if got != "60000 compact,delete 200000" {
		t.Errorf("kafka-python reads %q", got)
	}

	var doc configJSON
	if err := json.Unmarshal([]byte(describe("--output", "json")), &doc); err != nil {
		t.Fatalf("--output json: %v", err)
	}
	if doc.EntityType != "topics" || doc.EntityName != "cfg" || len(doc.Configs) != 3 || doc.Configs[1].Name != "max.message.bytes" ||
		doc.Configs[1].Value == nil || *doc.Configs[1].Value != "200000" || doc.Configs[1].Source != "DYNAMIC_TOPIC_CONFIG" ||
		len(doc.Configs[1].Synonyms) != 2 || doc.Configs[1].Synonyms[1].Name != "message.max.bytes" {
		t.Errorf("--output json = %+v", doc)
	}

	ok(t, "", "config", "alter", "--topic", "cfg", "--delete-config", "retention.ms,max.message.bytes", bs)
	want = map[string]configRow{"cleanup.policy": {"compact,delete", "DYNAMIC_TOPIC_CONFIG"}}
	if got := configTable(t, describe()); fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("after delete, dynamic configs = %v, want %v", got, want)
	}
	if c := kadmConfigs(t, b, "cfg", 0)["retention.ms"]; c.Source.String() != "DEFAULT_CONFIG" {
		t.Errorf("franz-go: deleted retention.ms has source %s", c.Source)
	}

	alter := func(args ...string) []string {
		return append([]string{"config", "alter", "--topic", "cfg", bs}, args...)
	}
	failsWith(t, "", alter("--delete-config", "retention.ms"), "topic cfg", "Invalid config(s): retention.ms")
	failsWith(t, "", alter("--add-config", "retentoin.ms=1"), "topic cfg", "INVALID_CONFIG", "retentoin.ms")
	failsWith(t, "", alter("--add-config", "retention.ms=soon"), "topic cfg", "INVALID_CONFIG", "soon")
	failsWith(t, "", []string{"config", "alter", "--topic", "missing", "--add-config", "retention.ms=1", bs},
		"missing", "UNKNOWN_TOPIC_OR_PARTITION")
	failsWith(t, "", []string{"config", "describe", "--topic", "missing", bs}, "missing", "UNKNOWN_TOPIC_OR_PARTITION")
	failsUsage(t, alter("--add-config", "retention.ms=1,2"), `"2" is not key=value`)
	failsUsage(t, alter(), "nothing to alter")
	failsUsage(t, alter("--add-config", "retention.ms=1", "--delete-config", "retention.ms"), `"retention.ms" given twice`)
	failsUsage(t, []string{"config", "describe", bs}, "--topic", "--broker")
	failsUsage(t, []string{"config", "describe", "--topic", "cfg", "--broker", "1", bs}, "exactly one")
	failsAtDeadAddress(t, "config", "describe", "--topic", "cfg")
	failsAtDeadAddress(t, "config", "alter", "--topic", "cfg", "--add-config", "retention.ms=1")
	// Nothing refused above changed anything.
	if got := configTable(t, describe()); fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("after the refusals, dynamic configs = %v, want %v", got, want)
	}
}

// TestConfigBrokerDescribe: `config describe --broker` lists every key the
// broker knows, with STATIC_BROKER_CONFIG for what it was given.
func TestConfigBrokerDescribe(t *testing.T) {
	t.Parallel()
	b := harness.StartBroker(t, "num.partitions=3")
	bs := bootstrap(b)
	md, err := newAdmin(t, b).BrokerMetadata(harness.Ctx(t, opTimeout))
	if err != nil {
		t.Fatal(err)
	}
	id := md.Brokers.NodeIDs()[0]
	flag := fmt.Sprintf("--broker=%d", id)

	all := configTable(t, ok(t, "", "config", "describe", flag, "--all", bs).stdout)
	seen := kadmConfigs(t, b, "", id)
	if len(all) != len(seen) || len(all) < 50 {
		t.Errorf("--all shows %d configs, franz-go sees %d", len(all), len(seen))
	}
	for name, w := range map[string]configRow{
		"num.partitions":            {"3", "STATIC_BROKER_CONFIG"},
		"log.dirs":                  {b.Dir, "STATIC_BROKER_CONFIG"},
		"auto.create.topics.enable": {"true", "DEFAULT_CONFIG"},
		"log.retention.ms":          {"null", "DEFAULT_CONFIG"},
	} {
		if all[name] != w {
			t.Errorf("--all %s = %+v, want %+v", name, all[name], w)
		}
	}
	if rows := configTable(t, ok(t, "", "config", "describe", flag, bs).stdout); len(rows) != 0 {
		t.Errorf("dynamic broker configs = %v, want none", rows)
	}
	failsWith(t, "", []string{"config", "describe", "--broker", "77", bs}, "broker 77", "not in the cluster")
}
