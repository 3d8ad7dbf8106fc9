package cli_test

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/weir-project/weir/test/harness"
)

// partitionsOf is topic's partition count as franz-go's admin client sees it.
func partitionsOf(t *testing.T, b *harness.Broker, topic string) int {
	t.Helper()
	tds, err := newAdmin(t, b).ListTopics(harness.Ctx(t, opTimeout), topic)
	if err != nil || tds[topic].Err != nil {
		t.Fatalf("list topic %s: %v %v", topic, err, tds[topic].Err)
	}
	return len(tds[topic].Partitions)
}

// TestTopicAlter: `topic alter --partitions` grows a topic, as
// kafka-topics --alter does, and refuses to shrink it with Kafka's error.
func TestTopicAlter(t *testing.T) {
	t.Parallel()
	b := harness.StartBroker(t, "auto.create.topics.enable=false")
	bs := bootstrap(b)
	createTopic(t, newAdmin(t, b), "grow", 2)

	if r := ok(t, "", "topic", "alter", "grow", "--partitions", "5", bs); r.stdout != "" {
		t.Errorf("alter printed %q, want nothing (as kafka-topics)", r.stdout)
	}
	if n := partitionsOf(t, b, "grow"); n != 5 {
		t.Errorf("after alter, franz-go sees %d partitions, want 5", n)
	}
	// kafka-python sees them too, and can write to the new ones.
	got := kafkaPython(t, b, `
import sys
from kafka import KafkaProducer
p = KafkaProducer(bootstrap_servers=sys.argv[1])
ps = sorted(p.partitions_for(sys.argv[2]))
p.send(sys.argv[2], b"x", partition=4).get(timeout=30)
print(",".join(map(str, ps)))`, "grow")
	if got != "0,1,2,3,4" {
		t.Errorf("kafka-python sees partitions %q, want 0,1,2,3,4", got)
	}
	if end := endOffsets(t, newAdmin(t, b), "grow"); end[4] != 1 {
		t.Errorf("new partition 4 has end offset %d after one record, want 1", end[4])
	}

	failsWith(t, "", []string{"topic", "alter", "grow", "--partitions", "3", bs}, `"grow"`, "INVALID_PARTITIONS", "5 partitions")
	failsWith(t, "", []string{"topic", "alter", "grow", "--partitions", "5", bs}, `"grow"`, "INVALID_PARTITIONS", "5 partitions")
	failsWith(t, "", []string{"topic", "alter", "missing", "--partitions", "3", bs}, `"missing"`, "UNKNOWN_TOPIC_OR_PARTITION")
	failsUsage(t, []string{"topic", "alter", "grow", bs}, "--partitions")
	failsUsage(t, []string{"topic", "alter", "grow", "--partitions", "0", bs}, "--partitions 0")
	failsAtDeadAddress(t, "topic", "alter", "grow", "--partitions", "9")
	if n := partitionsOf(t, b, "grow"); n != 5 {
		t.Errorf("after the refused alters, %d partitions, want 5", n)
	}
}

// TestTopicDescribeAtMinISR: --at-min-isr-partitions selects the
// partitions whose ISR is exactly min.insync.replicas, as kafka-topics.
func TestTopicDescribeAtMinISR(t *testing.T) {
	t.Parallel()
	b := harness.StartBroker(t, "auto.create.topics.enable=false")
	bs := bootstrap(b)
	adm := newAdmin(t, b)
	createTopic(t, adm, "atmin", 2) // ISR 1, min.insync.replicas 1
	resp, err := adm.CreateTopic(harness.Ctx(t, opTimeout), 1, 1, map[string]*string{"min.insync.replicas": ptr("2")}, "belowmin")
	if err != nil || resp.Err != nil {
		t.Fatalf("create belowmin: %v %v", err, resp.Err)
	}

	partitionsListed := func(args ...string) []string {
		var got []string
		for _, row := range describeLines(t, ok(t, "", append([]string{"topic", "describe"}, args...)...).stdout) {
			got = append(got, row["Topic"]+"-"+row["Partition"])
		}
		slices.Sort(got)
		return got
	}
	if got := partitionsListed("atmin", "belowmin", "--at-min-isr-partitions", bs); !slices.Equal(got, []string{"atmin-0", "atmin-1"}) {
		t.Errorf("--at-min-isr-partitions lists %q, want atmin-0 and atmin-1", got)
	}
	if got := partitionsListed("atmin", "belowmin", "--under-min-isr-partitions", bs); !slices.Equal(got, []string{"belowmin-0"}) {
		t.Errorf("--under-min-isr-partitions lists %q, want belowmin-0", got)
	}
	if got := partitionsListed("atmin", "belowmin", "--under-min-isr-partitions", "--at-min-isr-partitions", bs); len(got) != 3 {
		t.Errorf("both filters list %q, want all three partitions", got)
	}
}

func ptr(s string) *string { return &s }

// offsetRow is one entry of `topic offsets --output json`.
type offsetRow struct {
	Topic     string `json:"topic"`
	Partition int32  `json:"partition"`
	Offset    int64  `json:"offset"`
	Timestamp *int64 `json:"timestamp"`
}

// TestTopicOffsets: `topic offsets` prints TOPIC:PARTITION:OFFSET lines for
// each --time kafka-get-offsets knows, and leaves out a partition with no
// such offset, as Kafka's tool does.
func TestTopicOffsets(t *testing.T) {
	t.Parallel()
	b := harness.StartBroker(t, "auto.create.topics.enable=false")
	bs := bootstrap(b)
	adm := newAdmin(t, b)
	createTopic(t, adm, "offs", 3)
	produceAt(t, b, "offs", 0, 1000, 2000, 3000, 4000, 5000)
	produceAt(t, b, "offs", 1, 10000, 11000)
	// Partition 2 stays empty.

	offsets := func(args ...string) string {
		return ok(t, "", append([]string{"topic", "offsets", "offs", bs}, args...)...).stdout
	}
	for _, c := range []struct {
		args []string
		want string
	}{
		{nil, "offs:0:5\noffs:1:2\noffs:2:0\n"},
		{[]string{"--time", "latest"}, "offs:0:5\noffs:1:2\noffs:2:0\n"},
		{[]string{"--time", "-1"}, "offs:0:5\noffs:1:2\noffs:2:0\n"},
		{[]string{"--time", "earliest"}, "offs:0:0\noffs:1:0\noffs:2:0\n"},
		{[]string{"--time", "-2"}, "offs:0:0\noffs:1:0\noffs:2:0\n"},
		{[]string{"--time", "2500"}, "offs:0:2\noffs:1:0\n"},
		{[]string{"--time", "10500"}, "offs:1:1\n"},
		{[]string{"--time", "99999"}, ""},
		{[]string{"--time", "max-timestamp"}, "offs:0:4\noffs:1:1\n"},
		{[]string{"--partition", "1"}, "offs:1:2\n"},
		{[]string{"--partition", "2,0", "--time", "earliest"}, "offs:0:0\noffs:2:0\n"},
	} {
		if got := offsets(c.args...); got != c.want {
			t.Errorf("topic offsets offs %q:\n%s\nwant:\n%s", c.args, got, c.want)
		}
	}

	// The end offsets are franz-go's.
	end := endOffsets(t, adm, "offs")
	var want []string
	for p := range int32(3) {
		want = append(want, fmt.Sprintf("offs:%d:%d", p, end[p]))
	}
	if got := lines(offsets()); !slices.Equal(got, want) {
		t.Errorf("topic offsets = %q, franz-go says %q", got, want)
	}

	var rows []offsetRow
	if err := json.Unmarshal([]byte(offsets("--time", "2500", "--output", "json")), &rows); err != nil {
		t.Fatalf("--output json: %v", err)
	}
	if len(rows) != 2 || rows[0].Partition != 0 || rows[0].Offset != 2 || rows[0].Timestamp == nil || *rows[0].Timestamp != 3000 ||
		rows[1].Partition != 1 || rows[1].Offset != 0 || rows[1].Timestamp == nil || *rows[1].Timestamp != 10000 {
		t.Errorf("--time 2500 --output json = %+v", rows)
	}
	if got := offsets("--partition", "2", "--time", "max-timestamp", "-o", "json"); strings.TrimSpace(got) != "[]" {
		t.Errorf("no offset as JSON = %q, want []", got)
	}

	failsWith(t, "", []string{"topic", "offsets", "missing", bs}, `"missing"`, "UNKNOWN_TOPIC_OR_PARTITION")
	failsWith(t, "", []string{"topic", "offsets", "offs", "--partition", "7", bs}, `"offs"`, "partition 7", "UNKNOWN_TOPIC_OR_PARTITION")
	failsUsage(t, []string{"topic", "offsets", "offs", "--time", "soon", bs}, `--time "soon"`)
	failsUsage(t, []string{"topic", "offsets", "offs", "--output", "yaml", bs}, `"yaml"`)
	failsAtDeadAddress(t, "topic", "offsets", "offs")
}

// deletedRow is one entry of `records delete --output json`.
type deletedRow struct {
	Topic        string `json:"topic"`
	Partition    int32  `json:"partition"`
	LowWatermark int64  `json:"lowWatermark"`
}

// TestRecordsDelete: `records delete` moves partitions' log start offsets,
// as kafka-delete-records does: consumers (franz-go, kafka-python) then
// start there, and an offset past the end is Kafka's OFFSET_OUT_OF_RANGE.
func TestRecordsDelete(t *testing.T) {
	t.Parallel()
	b := harness.StartBroker(t, "auto.create.topics.enable=false")
	bs := bootstrap(b)
	adm := newAdmin(t, b)
	createTopic(t, adm, "purge", 2)
	produceAt(t, b, "purge", 0, 1, 2, 3, 4)
	produceAt(t, b, "purge", 1, 1, 2, 3)

	r := ok(t, "", "records", "delete", "purge", "--partition", "0", "--before", "2", bs)
	if r.stdout != "partition: purge-0  low_watermark: 2\n" {
		t.Errorf("records delete printed %q", r.stdout)
	}
	recs := consumeAll(t, b, "purge", 5)
	if recs[0].Partition != 0 || recs[0].Offset != 2 {
		t.Errorf("after delete, franz-go reads partition 0 from offset %d, want 2", recs[0].Offset)
	}
	got := kafkaPython(t, b, `
import sys
from kafka import KafkaConsumer, TopicPartition
c = KafkaConsumer(bootstrap_servers=sys.argv[1])
tps = [TopicPartition(sys.argv[2], p) for p in (0, 1)]
starts = c.beginning_offsets(tps)
print(",".join(str(starts[tp]) for tp in tps))`, "purge")
	if got != "2,0" {
		t.Errorf("kafka-python sees log start offsets %q, want 2,0", got)
	}

	failsWith(t, "", []string{"records", "delete", "purge", "--partition", "1", "--before", "9", bs},
		"purge-1", "OFFSET_OUT_OF_RANGE")
	failsWith(t, "", []string{"records", "delete", "missing", "--before", "1", bs}, `"missing"`, "UNKNOWN_TOPIC_OR_PARTITION")
	failsWith(t, "", []string{"records", "delete", "purge", "--partition", "2", "--before", "1", bs},
		`"purge"`, "partition 2", "UNKNOWN_TOPIC_OR_PARTITION")
	failsUsage(t, []string{"records", "delete", "purge", "--partition", "0", bs}, "--before")
	failsUsage(t, []string{"records", "delete", "purge", "--before", "-2", bs}, "--before -2")
	failsAtDeadAddress(t, "records", "delete", "purge", "--before", "1")

	// Every partition, up to the high watermark.
	var rows []deletedRow
	out := ok(t, "", "records", "delete", "purge", "--before", "-1", "--output", "json", bs).stdout
	if err := json.Unmarshal([]byte(out), &rows); err != nil {
		t.Fatalf("--output json: %v\n%s", err, out)
	}
	if want := []deletedRow{{"purge", 0, 4}, {"purge", 1, 3}}; !slices.Equal(rows, want) {
		t.Errorf("records delete --before -1 = %+v, want %+v", rows, want)
	}
	starts, err := adm.ListStartOffsets(harness.Ctx(t, opTimeout), "purge")
	if err != nil {
		t.Fatal(err)
	}
	for p, want := range map[int32]int64{0: 4, 1: 3} {
		if o, _ := starts.Lookup("purge", p); o.Offset != want {
			t.Errorf("franz-go: log start of purge[%d] = %d, want %d", p, o.Offset, want)
		}
	}
	// An offset below the low watermark deletes nothing more.
	if r := ok(t, "", "records", "delete", "purge", "--partition", "0", "--before", "1", bs); r.stdout != "partition: purge-0  low_watermark: 4\n" {
		t.Errorf("records delete below the low watermark printed %q", r.stdout)
	}
}
