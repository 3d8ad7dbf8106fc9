package cli_test

import (
	"fmt"
	"os/exec"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"

	"github.com/weir-project/weir/test/harness"
)

var (
	offsetsHeader        = []string{"GROUP", "TOPIC", "PARTITION", "CURRENT-OFFSET", "LOG-END-OFFSET", "LAG", "CONSUMER-ID", "HOST", "CLIENT-ID"}
	offsetsVerboseHeader = []string{"GROUP", "TOPIC", "PARTITION", "LEADER-EPOCH", "CURRENT-OFFSET", "LOG-END-OFFSET", "LAG", "CONSUMER-ID", "HOST", "CLIENT-ID"}
	membersHeader        = []string{"GROUP", "CONSUMER-ID", "HOST", "CLIENT-ID", "#PARTITIONS"}
	membersVerboseHeader = append(slices.Clone(membersHeader), "CURRENT-EPOCH", "CURRENT-ASSIGNMENT", "TARGET-EPOCH", "TARGET-ASSIGNMENT")
	stateHeader          = []string{"GROUP", "COORDINATOR (ID)", "ASSIGNMENT-STRATEGY", "STATE", "#MEMBERS"}
	stateVerboseHeader   = []string{"GROUP", "COORDINATOR (ID)", "ASSIGNMENT-STRATEGY", "STATE", "GROUP-EPOCH", "TARGET-ASSIGNMENT-EPOCH", "#MEMBERS"}
)

// The --output json shapes of group describe, decoded strictly: a field
// renamed or added fails the test.
type (
	jsonOffsets struct {
		Group   string `json:"group"`
		State   string `json:"state"`
		Offsets []struct {
			Topic         string  `json:"topic"`
			Partition     int32   `json:"partition"`
			LeaderEpoch   *int32  `json:"leaderEpoch"`
			CurrentOffset *int64  `json:"currentOffset"`
			LogEndOffset  *int64  `json:"logEndOffset"`
			Lag           *int64  `json:"lag"`
			ConsumerID    *string `json:"consumerId"`
			Host          *string `json:"host"`
			ClientID      *string `json:"clientId"`
		} `json:"offsets"`
	}
	jsonAssignment []struct {
		Topic      string  `json:"topic"`
		Partitions []int32 `json:"partitions"`
	}
	jsonMembers struct {
		Group   string `json:"group"`
		State   string `json:"state"`
		Members []struct {
			ConsumerID       string         `json:"consumerId"`
			GroupInstanceID  *string        `json:"groupInstanceId"`
			Host             string         `json:"host"`
			ClientID         string         `json:"clientId"`
			NumPartitions    int            `json:"numPartitions"`
			CurrentEpoch     *int32         `json:"currentEpoch"`
			Assignment       jsonAssignment `json:"assignment"`
			TargetEpoch      *int32         `json:"targetEpoch"`
			TargetAssignment jsonAssignment `json:"targetAssignment"`
		} `json:"members"`
	}
	jsonState struct {
		Group       string `json:"group"`
		Type        string `json:"type"`
		Coordinator struct {
			ID   int32  `json:"id"`
			Host string `json:"host"`
			Port int32  `json:"port"`
		} `json:"coordinator"`
		AssignmentStrategy    *string `json:"assignmentStrategy"`
		State                 string  `json:"state"`
		GroupEpoch            *int32  `json:"groupEpoch"`
		TargetAssignmentEpoch *int32  `json:"targetAssignmentEpoch"`
		NumMembers            int     `json:"numMembers"`
	}
)

// owner is who holds a partition, as kadm describes the group.
type owner struct{ member, client, host string }

// TestGroupDescribeClassic describes a classic group of a franz-go and a
// kafka-python member in each of Kafka's modes, table and JSON, checking
// every value against what kadm sees; then the same group with no members
// and a lag of 6; then groups that do not exist.
func TestGroupDescribeClassic(t *testing.T) {
	b := groupBroker(t)
	adm := newAdmin(t, b)
	bs := bootstrap(b)
	const topic, g = "gd", "gd-group"
	createTopic(t, adm, topic, 2)
	for p := range int32(2) {
		var vs []string
		for i := range 10 {
			vs = append(vs, fmt.Sprintf("v%d-%d", p, i))
		}
		produceTo(t, b, topic, p, vs...)
	}

	kg := classicMember(t, b, "cli-kgo", g, topic)
	var py *pyMember
	wantMembers := 1
	if exec.Command(python, "-c", "import kafka").Run() == nil {
		py = startPyMember(t, b, "cli-py", g, topic)
		wantMembers = 2
	} else {
		t.Logf("%s cannot import kafka: describing a group of one franz-go member only", python)
	}
	var d kadm.DescribedGroup
	harness.WaitFor(t, 90*time.Second, "the group stable with every record read and committed", func() bool {
		ds, err := adm.DescribeGroups(harness.Ctx(t, opTimeout), g)
		if err != nil || ds[g].State != "Stable" || len(ds[g].Members) != wantMembers {
			return false
		}
		d = ds[g]
		got, _ := kg.Snapshot()
		read := len(got)
		if py != nil {
			read += py.Read()
		}
		c := harness.Committed(t, adm, g, topic)
		return read == 20 && c[0] == 10 && c[1] == 10 && len(d.AssignedPartitions()[topic]) == 2
	})
	if py != nil {
		t.Cleanup(func() {
			if t.Failed() {
				t.Logf("kafka-python member stderr:\n%s", py.stderr())
			}
		})
	}
	owners := map[string]owner{}
	for _, m := range d.Members {
		a, _ := m.Assigned.AsConsumer()
		for _, at := range a.Topics {
			for _, p := range at.Partitions {
				owners[strconv.Itoa(int(p))] = owner{m.MemberID, m.ClientID, m.ClientHost}
			}
		}
	}

	t.Run("offsets", func(t *testing.T) {
		for _, args := range [][]string{{g}, {"--group", g, "--offsets"}} {
			r := ok(t, "", append([]string{"group", "describe", bs}, args...)...)
			if r.stderr != "" {
				t.Errorf("stderr for a stable group: %q", r.stderr)
			}
			rows := parseTable(t, r.stdout, offsetsHeader...)
			if len(rows) != 2 {
				t.Fatalf("describe rows:\n%s", r.stdout)
			}
			for i, row := range rows {
				o := owners[row["PARTITION"]]
				want := map[string]string{
					"GROUP": g, "TOPIC": topic, "PARTITION": strconv.Itoa(i), "CURRENT-OFFSET": "10",
					"LOG-END-OFFSET": "10", "LAG": "0", "CONSUMER-ID": o.member, "HOST": o.host, "CLIENT-ID": o.client,
				}
				if !reflect.DeepEqual(row, want) {
					t.Errorf("row %v\nwant %v", row, want)
				}
			}
		}
		r := ok(t, "", "group", "describe", g, "--verbose", bs)
		fo, err := adm.FetchOffsets(harness.Ctx(t, opTimeout), g)
		if err != nil {
			t.Fatal(err)
		}
		for _, row := range parseTable(t, r.stdout, offsetsVerboseHeader...) {
			p, _ := strconv.Atoi(row["PARTITION"])
			o, _ := fo.Lookup(topic, int32(p))
			want := "-"
			if o.LeaderEpoch >= 0 {
				want = strconv.Itoa(int(o.LeaderEpoch))
			}
			if row["LEADER-EPOCH"] != want || row["LAG"] != "0" {
				t.Errorf("verbose row %v: leader epoch want %s", row, want)
			}
		}
		var docs []jsonOffsets
		decodeJSON(t, ok(t, "", "group", "describe", g, "-o", "json", bs).stdout, &docs)
		if len(docs) != 1 || docs[0].Group != g || docs[0].State != "Stable" || len(docs[0].Offsets) != 2 {
			t.Fatalf("json %+v", docs)
		}
		for i, o := range docs[0].Offsets {
			own := owners[strconv.Itoa(i)]
			if o.Topic != topic || o.Partition != int32(i) || *o.CurrentOffset != 10 || *o.LogEndOffset != 10 || *o.Lag != 0 ||
				*o.ConsumerID != own.member || *o.Host != own.host || *o.ClientID != own.client {
				t.Errorf("json row %d: %+v", i, o)
			}
		}
	})

	t.Run("members", func(t *testing.T) {
		rows := parseTable(t, ok(t, "", "group", "describe", g, "--members", bs).stdout, membersHeader...)
		vrows := parseTable(t, ok(t, "", "group", "describe", g, "--members", "--verbose", bs).stdout, membersVerboseHeader...)
		if len(rows) != wantMembers || len(vrows) != wantMembers {
			t.Fatalf("members %v / %v", rows, vrows)
		}
		for i, m := range d.Members { // kadm sorts by member id, as the CLI does
			a, _ := m.Assigned.AsConsumer()
			var parts []string
			n := 0
			for _, at := range a.Topics {
				var ps []string
				for _, p := range at.Partitions {
					ps = append(ps, strconv.Itoa(int(p)))
				}
				n += len(ps)
				parts = append(parts, at.Topic+":"+strings.Join(ps, ","))
			}
			want := map[string]string{"GROUP": g, "CONSUMER-ID": m.MemberID, "HOST": m.ClientHost, "CLIENT-ID": m.ClientID, "#PARTITIONS": strconv.Itoa(n)}
			if !reflect.DeepEqual(rows[i], want) {
				t.Errorf("member row %v\nwant %v", rows[i], want)
			}
			// Classic members have no epochs and no target assignment.
			want["CURRENT-EPOCH"], want["CURRENT-ASSIGNMENT"], want["TARGET-EPOCH"], want["TARGET-ASSIGNMENT"] = "-", strings.Join(parts, ";"), "-", "-"
			if !reflect.DeepEqual(vrows[i], want) {
				t.Errorf("verbose member row %v\nwant %v", vrows[i], want)
			}
		}
		var docs []jsonMembers
		decodeJSON(t, ok(t, "", "group", "describe", g, "--members", "--output=json", bs).stdout, &docs)
		if len(docs) != 1 || len(docs[0].Members) != wantMembers {
			t.Fatalf("json %+v", docs)
		}
		total := 0
		for i, m := range docs[0].Members {
			total += m.NumPartitions
			if m.ConsumerID != d.Members[i].MemberID || m.ClientID != d.Members[i].ClientID || m.CurrentEpoch != nil ||
				m.TargetEpoch != nil || len(m.TargetAssignment) != 0 || len(m.Assignment) != 1 || m.Assignment[0].Topic != topic {
				t.Errorf("json member %+v", m)
			}
		}
		if total != 2 {
			t.Errorf("json members hold %d partitions, want 2", total)
		}
	})

	t.Run("state", func(t *testing.T) {
		coord := fmt.Sprintf("%s:%d  (%d)", d.Coordinator.Host, d.Coordinator.Port, d.Coordinator.NodeID)
		rows := parseTable(t, ok(t, "", "group", "describe", g, "--state", bs).stdout, stateHeader...)
		want := map[string]string{"GROUP": g, "COORDINATOR (ID)": coord, "ASSIGNMENT-STRATEGY": "range", "STATE": "Stable", "#MEMBERS": strconv.Itoa(wantMembers)}
		if len(rows) != 1 || !reflect.DeepEqual(rows[0], want) {
			t.Errorf("state %v\nwant %v", rows, want)
		}
		rows = parseTable(t, ok(t, "", "group", "describe", g, "--state", "--verbose", bs).stdout, stateVerboseHeader...)
		want["GROUP-EPOCH"], want["TARGET-ASSIGNMENT-EPOCH"] = "-", "-"
		if len(rows) != 1 || !reflect.DeepEqual(rows[0], want) {
			t.Errorf("verbose state %v\nwant %v", rows, want)
		}
		var docs []jsonState
		decodeJSON(t, ok(t, "", "group", "describe", g, "--state", "-o", "json", bs).stdout, &docs)
		if len(docs) != 1 || docs[0].Type != "classic" || docs[0].State != "Stable" || docs[0].NumMembers != wantMembers ||
			docs[0].AssignmentStrategy == nil || *docs[0].AssignmentStrategy != "range" || docs[0].Coordinator.ID != d.Coordinator.NodeID ||
			docs[0].Coordinator.Port != d.Coordinator.Port || docs[0].GroupEpoch != nil {
			t.Errorf("json state %+v", docs)
		}
		usageFails(t, []string{"group", "describe", g, "--members", "--state", bs}, "members", "state")
	})

	// Without members: the commits stay, the lag grows with the log.
	kg.Close()
	if py != nil {
		py.Stop()
	}
	harness.WaitFor(t, 60*time.Second, "the group empty", func() bool {
		ds, err := adm.DescribeGroups(harness.Ctx(t, opTimeout), g)
		return err == nil && ds[g].State == "Empty"
	})
	produceTo(t, b, topic, 0, "n1", "n2", "n3", "n4", "n5", "n6")
	r := ok(t, "", "group", "describe", g, bs)
	if r.stderr != "Consumer group 'gd-group' has no active members.\n" {
		t.Errorf("stderr %q", r.stderr)
	}
	rows := parseTable(t, r.stdout, offsetsHeader...)
	want := []map[string]string{
		{"GROUP": g, "TOPIC": topic, "PARTITION": "0", "CURRENT-OFFSET": "10", "LOG-END-OFFSET": "16", "LAG": "6", "CONSUMER-ID": "-", "HOST": "-", "CLIENT-ID": "-"},
		{"GROUP": g, "TOPIC": topic, "PARTITION": "1", "CURRENT-OFFSET": "10", "LOG-END-OFFSET": "10", "LAG": "0", "CONSUMER-ID": "-", "HOST": "-", "CLIENT-ID": "-"},
	}
	if !reflect.DeepEqual(rows, want) {
		t.Errorf("empty group rows %v\nwant %v", rows, want)
	}
	if rows := parseTable(t, ok(t, "", "group", "describe", g, "--members", bs).stdout, membersHeader...); len(rows) != 0 {
		t.Errorf("members of an empty group: %v", rows)
	}
	rows = parseTable(t, ok(t, "", "group", "describe", g, "--state", bs).stdout, stateHeader...)
	if len(rows) != 1 || rows[0]["STATE"] != "Empty" || rows[0]["#MEMBERS"] != "0" {
		t.Errorf("state of an empty group: %v", rows)
	}
	if got := lines(ok(t, "", "group", "describe", "--all-groups", bs).stdout); len(got) != 3 || !strings.HasPrefix(got[1], g+" ") {
		t.Errorf("--all-groups:\n%s", strings.Join(got, "\n"))
	}

	// A group that does not exist: one line, non-zero, in every mode;
	// with others, the others are still described.
	for _, mode := range []string{"--offsets", "--members", "--state"} {
		r := weir(t, "", "group", "describe", "nosuch", mode, bs)
		if r.code == 0 || r.stdout != "" || r.stderr != "weir: Consumer group 'nosuch' does not exist.\n" {
			t.Errorf("describe nosuch %s: exit %d, stdout %q, stderr %q", mode, r.code, r.stdout, r.stderr)
		}
	}
	r = weir(t, "", "group", "describe", g, "nosuch", bs)
	if r.code == 0 || len(parseTable(t, r.stdout, offsetsHeader...)) != 2 || !strings.HasSuffix(r.stderr, "weir: Consumer group 'nosuch' does not exist.\n") {
		t.Errorf("describe of an existing and a missing group: exit %d\nstdout:\n%s\nstderr:\n%s", r.code, r.stdout, r.stderr)
	}
	usageFails(t, []string{"group", "describe", bs}, "give a group")
}

// describedCG is a KIP-848 group as kadm's ConsumerGroupDescribe sees it.
func describedCG(t *testing.T, adm *kadm.Client, g string) (kadm.DescribedConsumerGroup, bool) {
	t.Helper()
	ds, err := adm.DescribeConsumerGroups(harness.Ctx(t, opTimeout), g)
	if err != nil {
		return kadm.DescribedConsumerGroup{}, false
	}
	d, ok := ds[g]
	return d, ok && d.Err == nil
}

func assignmentCell(s kadm.TopicsSet) string {
	var parts []string
	for _, tp := range s.Sorted() {
		var ps []string
		for _, p := range tp.Partitions {
			ps = append(ps, strconv.Itoa(int(p)))
		}
		if len(ps) > 0 {
			parts = append(parts, tp.Topic+":"+strings.Join(ps, ","))
		}
	}
	if len(parts) == 0 {
		return "-"
	}
	return strings.Join(parts, ";")
}

// TestGroupDescribeConsumerProtocol describes a KIP-848 consumer group of
// two franz-go members: epochs, current and target assignments and the
// server-side assignor, as ConsumerGroupDescribe reports them; then lag
// once the members are gone.
func TestGroupDescribeConsumerProtocol(t *testing.T) {
	b := groupBroker(t)
	adm := newAdmin(t, b)
	bs := bootstrap(b)
	const topic, g = "cp", "cp-group"
	createTopic(t, adm, topic, 3)
	for p := range int32(3) {
		var vs []string
		for i := range 5 {
			vs = append(vs, fmt.Sprintf("cp%d-%d", p, i)) // distinct: members count distinct values
		}
		produceTo(t, b, topic, p, vs...)
	}
	ms := []*harness.GroupMember{consumerMember(t, b, "cp-a", g, topic), consumerMember(t, b, "cp-b", g, topic)}
	harness.WaitFor(t, 90*time.Second, "the consumer group stable, every record read and committed", func() bool {
		d, ok := describedCG(t, adm, g)
		if !ok || d.State != "Stable" || len(d.Members) != 2 || len(d.AssignedPartitions()[topic]) != 3 {
			return false
		}
		read := 0
		for _, m := range ms {
			got, _ := m.Snapshot()
			read += len(got)
		}
		c := harness.Committed(t, adm, g, topic)
		return read == 15 && c[0] == 5 && c[1] == 5 && c[2] == 5
	})

	// Each check runs between two identical kadm descriptions, so the
	// group cannot have changed under it.
	stableRun := func(what string, check func(d kadm.DescribedConsumerGroup) bool) {
		t.Helper()
		harness.WaitFor(t, 60*time.Second, what, func() bool {
			before, ok1 := describedCG(t, adm, g)
			pass := check(before)
			after, ok2 := describedCG(t, adm, g)
			if !ok1 || !ok2 || !reflect.DeepEqual(before, after) {
				return false
			}
			if !pass {
				t.Fatalf("%s: the CLI disagrees with ConsumerGroupDescribe %+v", what, before)
			}
			return true
		})
	}

	stableRun("--state --verbose", func(d kadm.DescribedConsumerGroup) bool {
		rows := parseTable(t, ok(t, "", "group", "describe", g, "--state", "--verbose", bs).stdout, stateVerboseHeader...)
		want := map[string]string{
			"GROUP": g, "COORDINATOR (ID)": fmt.Sprintf("%s:%d  (%d)", d.Coordinator.Host, d.Coordinator.Port, d.Coordinator.NodeID),
			"ASSIGNMENT-STRATEGY": "range", "STATE": "Stable", "GROUP-EPOCH": strconv.Itoa(int(d.Epoch)),
			"TARGET-ASSIGNMENT-EPOCH": strconv.Itoa(int(d.AssignmentEpoch)), "#MEMBERS": "2",
		}
		if len(rows) != 1 || !reflect.DeepEqual(rows[0], want) {
			t.Logf("state %v\nwant %v", rows, want)
			return false
		}
		var docs []jsonState
		decodeJSON(t, ok(t, "", "group", "describe", g, "--state", "-o", "json", bs).stdout, &docs)
		return len(docs) == 1 && docs[0].Type == "consumer" && *docs[0].GroupEpoch == d.Epoch &&
			*docs[0].TargetAssignmentEpoch == d.AssignmentEpoch && *docs[0].AssignmentStrategy == "range"
	})

	stableRun("--members --verbose", func(d kadm.DescribedConsumerGroup) bool {
		rows := parseTable(t, ok(t, "", "group", "describe", g, "--members", "--verbose", bs).stdout, membersVerboseHeader...)
		if len(rows) != 2 {
			return false
		}
		for i, m := range d.Members {
			n := 0
			for _, ps := range m.Assignment {
				n += len(ps)
			}
			want := map[string]string{
				"GROUP": g, "CONSUMER-ID": m.MemberID, "HOST": m.ClientHost, "CLIENT-ID": m.ClientID, "#PARTITIONS": strconv.Itoa(n),
				"CURRENT-EPOCH": strconv.Itoa(int(m.MemberEpoch)), "CURRENT-ASSIGNMENT": assignmentCell(m.Assignment),
				"TARGET-EPOCH": strconv.Itoa(int(d.AssignmentEpoch)), "TARGET-ASSIGNMENT": assignmentCell(m.TargetAssignment),
			}
			if !reflect.DeepEqual(rows[i], want) {
				t.Logf("member %v\nwant %v", rows[i], want)
				return false
			}
		}
		var docs []jsonMembers
		decodeJSON(t, ok(t, "", "group", "describe", g, "--members", "-o", "json", bs).stdout, &docs)
		return len(docs) == 1 && len(docs[0].Members) == 2 && *docs[0].Members[0].CurrentEpoch == d.Members[0].MemberEpoch &&
			*docs[0].Members[1].TargetEpoch == d.AssignmentEpoch
	})

	stableRun("--offsets", func(d kadm.DescribedConsumerGroup) bool {
		owners := map[string]owner{}
		for _, m := range d.Members {
			for _, p := range m.Assignment.Sorted() {
				for _, n := range p.Partitions {
					owners[strconv.Itoa(int(n))] = owner{m.MemberID, m.ClientID, m.ClientHost}
				}
			}
		}
		rows := parseTable(t, ok(t, "", "group", "describe", g, bs).stdout, offsetsHeader...)
		if len(rows) != 3 {
			return false
		}
		for i, row := range rows {
			o := owners[strconv.Itoa(i)]
			want := map[string]string{
				"GROUP": g, "TOPIC": topic, "PARTITION": strconv.Itoa(i), "CURRENT-OFFSET": "5", "LOG-END-OFFSET": "5",
				"LAG": "0", "CONSUMER-ID": o.member, "HOST": o.host, "CLIENT-ID": o.client,
			}
			if !reflect.DeepEqual(row, want) {
				t.Logf("row %v\nwant %v", row, want)
				return false
			}
		}
		return true
	})

	for _, m := range ms {
		m.Close()
	}
	harness.WaitFor(t, 60*time.Second, "the consumer group empty", func() bool {
		d, ok := describedCG(t, adm, g)
		return ok && d.State == "Empty"
	})
	produceTo(t, b, topic, 2, "x", "y", "z")
	r := ok(t, "", "group", "describe", g, bs)
	if r.stderr != "Consumer group 'cp-group' has no active members.\n" {
		t.Errorf("stderr %q", r.stderr)
	}
	rows := parseTable(t, r.stdout, offsetsHeader...)
	if len(rows) != 3 || rows[2]["LAG"] != "3" || rows[2]["LOG-END-OFFSET"] != "8" || rows[2]["CONSUMER-ID"] != "-" || rows[0]["LAG"] != "0" {
		t.Errorf("rows of the emptied group:\n%s", r.stdout)
	}
	rows = parseTable(t, ok(t, "", "group", "describe", g, "--state", bs).stdout, stateHeader...)
	if len(rows) != 1 || rows[0]["STATE"] != "Empty" || rows[0]["#MEMBERS"] != "0" {
		t.Errorf("state %v", rows)
	}
}
