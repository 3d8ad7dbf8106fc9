package cli_test

import (
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/weir-project/weir/test/harness"
)

var resetHeader = []string{"GROUP", "TOPIC", "PARTITION", "NEW-OFFSET"}

// newOffsets is a reset plan's NEW-OFFSET by "topic/partition".
func newOffsets(t *testing.T, out string) map[string]string {
	t.Helper()
	got := map[string]string{}
	for _, r := range parseTable(t, out, resetHeader...) {
		got[r["TOPIC"]+"/"+r["PARTITION"]] = r["NEW-OFFSET"]
	}
	return got
}

// TestGroupResetOffsets drives every reset scenario of Kafka's tool
// against a group without members, checking the plan printed and the
// offsets committed (by kadm): a dry run, the default, changes nothing;
// --execute does. A group with members is refused; a KIP-848 group once
// its members left is reset, and a franz-go and a kafka-python consumer
// then start at the reset offsets.
func TestGroupResetOffsets(t *testing.T) {
	b := groupBroker(t)
	adm := newAdmin(t, b)
	bs := bootstrap(b)
	const topic, g = "rs", "rs-g"
	// Old timestamps must not be retained away under the test.
	resp, err := adm.CreateTopic(harness.Ctx(t, opTimeout), 2, 1, map[string]*string{"retention.ms": ptr("-1")}, topic)
	if err == nil {
		err = resp.Err
	}
	if err != nil {
		t.Fatal(err)
	}
	// Partition 0's records are a second apart from base; partition 1's
	// an hour apart, the last an hour ago.
	base := time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC)
	now := time.Now()
	var recs []*kgo.Record
	var values []string
	for i := range 10 {
		values = append(values, fmt.Sprintf("rs0-%d", i), fmt.Sprintf("rs1-%d", i))
		recs = append(recs,
			&kgo.Record{Topic: topic, Partition: 0, Value: []byte(values[2*i]), Timestamp: base.Add(time.Duration(i) * time.Second)},
			&kgo.Record{Topic: topic, Partition: 1, Value: []byte(values[2*i+1]), Timestamp: now.Add(-time.Duration(10-i) * time.Hour)})
	}
	produceRecords(t, b, recs...)
	commit(t, adm, g, map[string]map[int32]int64{topic: {0: 2, 1: 4}})

	reset := func(args ...string) result {
		t.Helper()
		return ok(t, "", append([]string{"group", "reset-offsets", bs}, args...)...)
	}
	expectCommitted := func(p0, p1 int64) {
		t.Helper()
		if got := harness.Committed(t, adm, g, topic); got[0] != p0 || got[1] != p1 {
			t.Fatalf("committed %v, want {0:%d 1:%d}", got, p0, p1)
		}
	}
	expectPlan := func(r result, want map[string]string) {
		t.Helper()
		if got := newOffsets(t, r.stdout); !reflect.DeepEqual(got, want) {
			t.Fatalf("plan %v, want %v\nstdout:\n%s\nstderr:\n%s", got, want, r.stdout, r.stderr)
		}
		for _, row := range parseTable(t, r.stdout, resetHeader...) {
			if row["GROUP"] != g {
				t.Errorf("plan row %v: group", row)
			}
		}
	}

	// Dry runs, by default and explicitly.
	r := reset(g, "--topic", topic, "--to-earliest")
	expectPlan(r, map[string]string{"rs/0": "0", "rs/1": "0"})
	if !strings.Contains(r.stderr, "Dry run") {
		t.Errorf("a dry run does not say so: %q", r.stderr)
	}
	expectPlan(reset("--group", g, "--topic", topic, "--to-earliest", "--dry-run"), map[string]string{"rs/0": "0", "rs/1": "0"})
	expectCommitted(2, 4)

	r = reset(g, "--topic", topic, "--to-latest", "--execute")
	expectPlan(r, map[string]string{"rs/0": "10", "rs/1": "10"})
	if r.stderr != "" {
		t.Errorf("stderr of an executed reset: %q", r.stderr)
	}
	expectCommitted(10, 10)

	expectPlan(reset(g, "--topic", topic+":1", "--to-offset", "3", "--execute"), map[string]string{"rs/1": "3"})
	expectCommitted(10, 3)

	r = reset(g, "--topic", topic+":0", "--to-offset", "99")
	expectPlan(r, map[string]string{"rs/0": "10"})
	if !strings.Contains(r.stderr, "higher than latest offset") {
		t.Errorf("no warning for an offset past the end: %q", r.stderr)
	}

	expectPlan(reset(g, "--all-topics", "--shift-by", "-2", "--execute"), map[string]string{"rs/0": "8", "rs/1": "1"})
	expectCommitted(8, 1)
	r = reset(g, "--all-topics", "--shift-by", "-5", "--execute")
	expectPlan(r, map[string]string{"rs/0": "3", "rs/1": "0"})
	if !strings.Contains(r.stderr, "lower than earliest offset") {
		t.Errorf("no warning for an offset before the start: %q", r.stderr)
	}
	expectCommitted(3, 0)
	expectPlan(reset(g, "--all-topics", "--to-current"), map[string]string{"rs/0": "3", "rs/1": "0"})

	// By time: the first record at or after it.
	expectPlan(reset(g, "--topic", topic+":0", "--to-datetime", "2024-01-01T00:00:05Z", "--execute"), map[string]string{"rs/0": "5"})
	expectCommitted(5, 0)
	ms := strconv.FormatInt(base.Add(5500*time.Millisecond).UnixMilli(), 10)
	expectPlan(reset(g, "--topic", topic+":0", "--to-datetime", ms), map[string]string{"rs/0": "6"})
	local := base.Add(3 * time.Second).Local().Format("2006-01-02T15:04:05.000")
	expectPlan(reset(g, "--topic", topic+":0", "--to-datetime", local), map[string]string{"rs/0": "3"})
	r = reset(g, "--topic", topic+":0", "--to-datetime", "2024-01-02T00:00:00Z")
	expectPlan(r, map[string]string{"rs/0": "10"})
	if !strings.Contains(r.stderr, "log end") {
		t.Errorf("no warning for a time after the last record: %q", r.stderr)
	}
	// Partition 1's records are 10h..1h old: 5h30m ago falls between the
	// 6h-old (offset 4) and the 5h-old (offset 5) one.
	expectPlan(reset(g, "--topic", topic+":1", "--by-duration", "PT5H30M", "--execute"), map[string]string{"rs/1": "5"})
	expectCommitted(5, 5)
	expectPlan(reset(g, "--topic", topic+":1", "--by-duration", "P1D"), map[string]string{"rs/1": "0"})

	// JSON, and a plan exported and read back.
	var plan []struct {
		Group     string `json:"group"`
		Topic     string `json:"topic"`
		Partition int32  `json:"partition"`
		NewOffset int64  `json:"newOffset"`
	}
	decodeJSON(t, reset(g, "--all-topics", "--to-earliest", "-o", "json").stdout, &plan)
	if len(plan) != 2 || plan[0].Group != g || plan[0].Topic != topic || plan[0].Partition != 0 || plan[1].Partition != 1 || plan[0].NewOffset != 0 {
		t.Errorf("json plan %+v", plan)
	}
	if out := reset(g, "--all-topics", "--to-latest", "--export").stdout; out != "rs,0,10\nrs,1,10\n" {
		t.Errorf("export %q", out)
	}
	file := filepath.Join(t.TempDir(), "plan.csv")
	if err := os.WriteFile(file, []byte("rs,0,7\nrs,1,12\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	expectPlan(reset(g, "--from-file", file, "--execute"), map[string]string{"rs/0": "7", "rs/1": "10"})
	expectCommitted(7, 10)
	if err := os.WriteFile(file, []byte("other,rs,0,1\nrs-g,rs,1,2\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	expectPlan(reset(g, "--from-file", file), map[string]string{"rs/1": "2"})

	// What Kafka refuses.
	failsWith(t, "", []string{"group", "reset-offsets", g, "--topic", topic + ":7", "--to-earliest", bs}, `"rs-7"`, "do not exist")
	failsWith(t, "", []string{"group", "reset-offsets", g, "--topic", "nope", "--to-earliest", bs}, `"nope"`, "do not exist")
	failsWith(t, "", []string{"group", "reset-offsets", "rs-fresh", "--topic", topic, "--shift-by", "1", bs}, "no current committed offset")
	usageFails(t, []string{"group", "reset-offsets", g, "--topic", topic, bs}, "exactly one of")
	expectCommitted(7, 10)

	// A group that does not exist yet gets the offsets, as in Kafka.
	reset("rs-new", "--topic", topic+":0", "--to-offset", "4", "--execute")
	if got := harness.Committed(t, adm, "rs-new", topic); len(got) != 1 || got[0] != 4 {
		t.Errorf("committed of the new group %v", got)
	}

	t.Run("active group refused", func(t *testing.T) {
		const live = "rs-live"
		m := classicMember(t, b, "rs-live-m", live, topic)
		harness.WaitFor(t, 90*time.Second, "the live member to read and commit everything", func() bool {
			got, _ := m.Snapshot()
			c := harness.Committed(t, adm, live, topic)
			return len(got) == 20 && c[0] == 10 && c[1] == 10
		})
		for _, extra := range []string{"--execute", "--dry-run"} {
			line := failsWith(t, "", []string{"group", "reset-offsets", live, "--topic", topic, "--to-earliest", extra, bs})
			if line != "weir: Assignments can only be reset if the group 'rs-live' is inactive, but the current state is Stable." {
				t.Errorf("refusal %q", line)
			}
		}
		if c := harness.Committed(t, adm, live, topic); c[0] != 10 || c[1] != 10 {
			t.Errorf("a refused reset changed the offsets: %v", c)
		}
	})

	t.Run("consumer group after its members left", func(t *testing.T) {
		const cg = "rs-848"
		m := consumerMember(t, b, "rs-848-a", cg, topic)
		harness.WaitAllRead(t, []*harness.GroupMember{m}, values)
		harness.WaitFor(t, 60*time.Second, "the member's commits", func() bool {
			c := harness.Committed(t, adm, cg, topic)
			return c[0] == 10 && c[1] == 10
		})
		m.Close()
		harness.WaitFor(t, 60*time.Second, "the consumer group empty", func() bool {
			d, ok := describedCG(t, adm, cg)
			return ok && d.State == "Empty"
		})
		ok(t, "", "group", "reset-offsets", cg, "--all-topics", "--to-offset", "4", "--execute", bs)
		if c := harness.Committed(t, adm, cg, topic); c[0] != 4 || c[1] != 4 {
			t.Fatalf("committed after reset %v", c)
		}
		// A new member starts where the reset put the group.
		var rest []string
		for i := 4; i < 10; i++ {
			rest = append(rest, fmt.Sprintf("rs0-%d", i), fmt.Sprintf("rs1-%d", i))
		}
		m2 := consumerMember(t, b, "rs-848-b", cg, topic)
		harness.WaitAllRead(t, []*harness.GroupMember{m2}, rest)
		if got, _ := m2.Snapshot(); len(got) != len(rest) {
			t.Errorf("the new member read %d records, want the %d after the reset", len(got), len(rest))
		}
	})

	t.Run("kafka-python resumes at the reset offsets", func(t *testing.T) {
		needKafkaPython(t)
		const pg = "rs-py"
		ok(t, "", "group", "reset-offsets", pg, "--topic", topic, "--to-offset", "7", "--execute", bs)
		p := startPyMember(t, b, "rs-py-m", pg, topic)
		harness.WaitFor(t, 90*time.Second, "kafka-python to read and commit from the reset offsets", func() bool {
			c := harness.Committed(t, adm, pg, topic)
			return c[0] == 10 && c[1] == 10
		})
		p.Stop()
		if n := p.Read(); n != 6 {
			t.Errorf("kafka-python read %d records, want the 6 after offset 7\n%s", n, p.stderr())
		}
	})
}
