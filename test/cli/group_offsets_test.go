package cli_test

import (
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/weir-project/weir/test/harness"
)

var deleteOffsetsHeader = []string{"TOPIC", "PARTITION", "STATUS"}

// TestGroupDeleteOffsets deletes committed offsets as
// kafka-consumer-groups --delete-offsets does: of whole topics or single
// partitions of an empty group; of a topic a live group (classic or
// KIP-848) does not consume, while the broker refuses the topic it does
// (GROUP_SUBSCRIBED_TO_TOPIC: one error line, a non-zero exit, the
// offsets kept); and the errors of an unknown group or topic.
func TestGroupDeleteOffsets(t *testing.T) {
	b := groupBroker(t)
	adm := newAdmin(t, b)
	bs := bootstrap(b)
	createTopic(t, adm, "d1", 2)
	createTopic(t, adm, "d2", 1)
	produceTo(t, b, "d2", 0, "a", "b", "c")
	const g = "do-g"
	commit(t, adm, g, map[string]map[int32]int64{"d1": {0: 1, 1: 2}, "d2": {0: 3}})

	r := ok(t, "", "group", "delete-offsets", g, "--topic", "d1", bs)
	head, table, _ := strings.Cut(r.stdout, "\n\n")
	if head != "Request succeeded for deleting offsets from group do-g." {
		t.Errorf("stdout:\n%s", r.stdout)
	}
	want := []map[string]string{
		{"TOPIC": "d1", "PARTITION": "0", "STATUS": "Successful"},
		{"TOPIC": "d1", "PARTITION": "1", "STATUS": "Successful"},
	}
	if rows := parseTable(t, table, deleteOffsetsHeader...); !reflect.DeepEqual(rows, want) {
		t.Errorf("rows %v, want %v", rows, want)
	}
	if c := harness.Committed(t, adm, g, "d1"); len(c) != 0 {
		t.Errorf("d1 offsets left: %v", c)
	}
	if c := harness.Committed(t, adm, g, "d2"); c[0] != 3 {
		t.Errorf("d2 offsets %v, want untouched", c)
	}

	var doc struct {
		Group      string `json:"group"`
		Partitions []struct {
			Topic     string  `json:"topic"`
			Partition *int32  `json:"partition"`
			Error     *string `json:"error"`
		} `json:"partitions"`
	}
	decodeJSON(t, ok(t, "", "group", "delete-offsets", "--group", g, "--topic", "d2:0", "-o", "json", bs).stdout, &doc)
	if doc.Group != g || len(doc.Partitions) != 1 || doc.Partitions[0].Topic != "d2" || *doc.Partitions[0].Partition != 0 || doc.Partitions[0].Error != nil {
		t.Errorf("json %+v", doc)
	}
	if c := harness.Committed(t, adm, g, "d2"); len(c) != 0 {
		t.Errorf("d2 offsets left: %v", c)
	}

	for _, tc := range []struct {
		name  string
		start func(name, group, topic string) *harness.GroupMember
	}{
		{"classic", func(n, gr, tp string) *harness.GroupMember { return classicMember(t, b, n, gr, tp) }},
		{"consumer", func(n, gr, tp string) *harness.GroupMember { return consumerMember(t, b, n, gr, tp) }},
	} {
		t.Run("live "+tc.name+" group", func(t *testing.T) {
			live := "do-live-" + tc.name
			commit(t, adm, live, map[string]map[int32]int64{"d1": {0: 1, 1: 1}})
			m := tc.start(live+"-m", live, "d2")
			harness.WaitFor(t, 90*time.Second, "the member to read and commit d2", func() bool {
				got, _ := m.Snapshot()
				return len(got) == 3 && harness.Committed(t, adm, live, "d2")[0] == 3
			})
			r := weir(t, "", "group", "delete-offsets", live, "--topic", "d1", "--topic", "d2", bs)
			if r.code == 0 {
				t.Fatalf("deleting a subscribed topic's offsets succeeded:\n%s", r.stdout)
			}
			line := strings.TrimSuffix(r.stderr, "\n")
			if strings.Contains(line, "\n") || !strings.HasPrefix(line, "weir: delete offsets of group "+live+": d2-0: GROUP_SUBSCRIBED_TO_TOPIC") {
				t.Errorf("stderr %q", r.stderr)
			}
			rows := parseTable(t, r.stdout, deleteOffsetsHeader...)
			if len(rows) != 3 || rows[0]["STATUS"] != "Successful" || rows[1]["STATUS"] != "Successful" ||
				rows[2]["TOPIC"] != "d2" || !strings.HasPrefix(rows[2]["STATUS"], "Error: GROUP_SUBSCRIBED_TO_TOPIC") {
				t.Errorf("rows:\n%s", r.stdout)
			}
			if c := harness.Committed(t, adm, live, "d1"); len(c) != 0 {
				t.Errorf("d1 offsets left: %v", c)
			}
			if c := harness.Committed(t, adm, live, "d2"); c[0] != 3 {
				t.Errorf("the refused d2 offsets are gone: %v", c)
			}
		})
	}

	failsWith(t, "", []string{"group", "delete-offsets", "nosuch", "--topic", "d1", bs}, "nosuch", "GROUP_ID_NOT_FOUND")
	commit(t, adm, g, map[string]map[int32]int64{"d1": {0: 1}})
	r = weir(t, "", "group", "delete-offsets", g, "--topic", "nope", bs)
	if r.code == 0 || !strings.HasPrefix(r.stderr, "weir: ") || !strings.Contains(r.stderr, "nope: UNKNOWN_TOPIC_OR_PARTITION") || strings.Count(r.stderr, "\n") != 1 {
		t.Errorf("unknown topic: exit %d, stderr %q", r.code, r.stderr)
	}
	if rows := parseTable(t, r.stdout, deleteOffsetsHeader...); len(rows) != 1 || rows[0]["PARTITION"] != "-" || !strings.HasPrefix(rows[0]["STATUS"], "Error: UNKNOWN_TOPIC_OR_PARTITION") {
		t.Errorf("unknown topic rows:\n%s", r.stdout)
	}
	usageFails(t, []string{"group", "delete-offsets", g, bs}, "--topic")
	usageFails(t, []string{"group", "delete-offsets", g, "--group", "other", "--topic", "d1", bs}, "exactly one group")
}
