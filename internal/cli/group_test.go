package cli

import (
	"bytes"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
)

func TestParseTopicSpec(t *testing.T) {
	topic, parts, err := parseTopicSpec("orders:0, 2,5")
	if err != nil || topic != "orders" || len(parts) != 3 || parts[1] != 2 {
		t.Fatalf("%q %v %v", topic, parts, err)
	}
	if topic, parts, err := parseTopicSpec("orders"); err != nil || topic != "orders" || parts != nil {
		t.Fatalf("%q %v %v", topic, parts, err)
	}
	for _, bad := range []string{"", ":1", "t:", "t:x", "t:-1", "t:1,,2"} {
		if _, _, err := parseTopicSpec(bad); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
}

func TestParseDatetime(t *testing.T) {
	local := time.Date(2024, 5, 1, 12, 30, 15, 250e6, time.Local).UnixMilli()
	cases := map[string]int64{
		"2024-05-01T12:30:15.250":   local,
		"2024-05-01T12:30:15":       local - 250,
		"2024-05-01T10:00:00Z":      time.Date(2024, 5, 1, 10, 0, 0, 0, time.UTC).UnixMilli(),
		"2024-05-01T10:00:00+02:00": time.Date(2024, 5, 1, 8, 0, 0, 0, time.UTC).UnixMilli(),
		"1700000000000":             1700000000000,
	}
	for in, want := range cases {
		if got, err := parseDatetime(in); err != nil || got != want {
			t.Errorf("parseDatetime(%q) = %d, %v; want %d", in, got, err, want)
		}
	}
	for _, bad := range []string{"yesterday", "2024-13-01T00:00:00", "-5"} {
		if _, err := parseDatetime(bad); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
}

func TestResetFlagValidation(t *testing.T) {
	cases := map[string]struct {
		args []string
		want string
	}{
		"no group":         {[]string{"--topic", "t", "--to-earliest"}, "give a group"},
		"group and all":    {[]string{"g", "--all-groups", "--topic", "t", "--to-earliest"}, "not both"},
		"no topics":        {[]string{"--group", "g", "--to-earliest"}, "--topic or --all-topics"},
		"both topic sets":  {[]string{"--group", "g", "--topic", "t", "--all-topics", "--to-earliest"}, "--topic or --all-topics"},
		"bad topic spec":   {[]string{"g", "--topic", "t:x", "--to-earliest"}, "bad partition"},
		"no target":        {[]string{"--group", "g", "--topic", "t"}, "exactly one"},
		"two targets":      {[]string{"--group", "g", "--topic", "t", "--to-earliest", "--to-latest"}, "exactly one"},
		"offset and shift": {[]string{"g", "--topic", "t", "--to-offset", "3", "--shift-by", "1"}, "exactly one"},
		"negative offset":  {[]string{"--group", "g", "--topic", "t", "--to-offset", "-3"}, "negative"},
		"bad time":         {[]string{"--group", "g", "--topic", "t", "--to-datetime", "soon"}, "--to-datetime"},
		"bad duration":     {[]string{"g", "--topic", "t", "--by-duration", "15m"}, "--by-duration"},
		"execute and dry":  {[]string{"--group", "g", "--topic", "t", "--to-latest", "--execute", "--dry-run"}, "exclude"},
		"export and json":  {[]string{"g", "--topic", "t", "--to-latest", "--export", "-o", "json"}, "exclude"},
		"bad output":       {[]string{"g", "--topic", "t", "--to-latest", "-o", "yaml"}, "--output"},
	}
	for name, tc := range cases {
		cmd := newGroupResetCmd(&clientFlags{})
		cmd.SetArgs(tc.args)
		var out bytes.Buffer
		cmd.SetOut(&out)
		cmd.SetErr(&out)
		err := cmd.Execute()
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want an error about %q", name, err, tc.want)
		}
	}
}

func TestParseISODuration(t *testing.T) {
	cases := map[string]time.Duration{
		"PT15M":      15 * time.Minute,
		"pt15m":      15 * time.Minute,
		"P1D":        24 * time.Hour,
		"P1DT2H3M4S": 26*time.Hour + 3*time.Minute + 4*time.Second,
		"PT0.5S":     500 * time.Millisecond,
		"PT1,25S":    1250 * time.Millisecond,
		"PT-1.5S":    -1500 * time.Millisecond,
		"-PT1H":      -time.Hour,
		"PT-1H30M":   -30 * time.Minute,
		"+PT10S":     10 * time.Second,
	}
	for in, want := range cases {
		if got, err := parseISODuration(in); err != nil || got != want {
			t.Errorf("parseISODuration(%q) = %v, %v; want %v", in, got, err, want)
		}
	}
	for _, bad := range []string{"", "P", "PT", "P1DT", "15m", "PT1.5M", "P1W", "PT1H2H", "P100000000D"} {
		if _, err := parseISODuration(bad); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
}

func TestOffsetsTable(t *testing.T) {
	i64 := func(v int64) *int64 { return &v }
	str := func(v string) *string { return &v }
	g := groupInfo{Group: "g1", State: "Stable"}
	rows := []offsetRow{
		{Topic: "orders", Partition: 0, CurrentOffset: i64(42), LogEndOffset: i64(50), Lag: i64(8), ConsumerID: str("app-1-abc"), Host: str("/10.0.0.7"), ClientID: str("app-1")},
		{Topic: "orders", Partition: 1, LogEndOffset: i64(17)},
	}
	var buf bytes.Buffer
	if err := offsetsTable(g, rows, false).write(&buf); err != nil {
		t.Fatal(err)
	}
	want := [][]string{
		{"GROUP", "TOPIC", "PARTITION", "CURRENT-OFFSET", "LOG-END-OFFSET", "LAG", "CONSUMER-ID", "HOST", "CLIENT-ID"},
		{"g1", "orders", "0", "42", "50", "8", "app-1-abc", "/10.0.0.7", "app-1"},
		{"g1", "orders", "1", "-", "17", "-", "-", "-", "-"},
	}
	checkFields(t, buf.String(), want)
}

func TestMembersAndStateTables(t *testing.T) {
	e5, e7 := int32(5), int32(7)
	g := groupInfo{
		Group: "g", Type: "consumer", State: "Reconciling", Strategy: "uniform", Epoch: &e7, TargetEpoch: &e7,
		Coordinator: kadm.BrokerDetail{NodeID: 1, Host: "127.0.0.1", Port: 9092},
		Members: []groupMember{
			{ID: "m1", ClientID: "c1", Host: "/127.0.0.1", Epoch: &e5,
				Assigned: []topicPartitions{{"a", []int32{0, 1}}, {"b", []int32{2}}},
				Target:   []topicPartitions{{"a", []int32{0}}}},
			{ID: "m2", InstanceID: "i2", ClientID: "c2", Host: "/127.0.0.2", Epoch: &e7},
		},
	}
	var buf bytes.Buffer
	if err := membersTable(g, true).write(&buf); err != nil {
		t.Fatal(err)
	}
	checkFields(t, buf.String(), [][]string{
		{"GROUP", "CONSUMER-ID", "GROUP-INSTANCE-ID", "HOST", "CLIENT-ID", "#PARTITIONS", "CURRENT-EPOCH", "CURRENT-ASSIGNMENT", "TARGET-EPOCH", "TARGET-ASSIGNMENT"},
		{"g", "m1", "-", "/127.0.0.1", "c1", "3", "5", "a:0,1;b:2", "7", "a:0"},
		{"g", "m2", "i2", "/127.0.0.2", "c2", "0", "7", "-", "7", "-"},
	})
	buf.Reset()
	if err := stateTable(g, false).write(&buf); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(buf.String()), "\n")
	if len(lines) != 2 || !strings.Contains(lines[0], "COORDINATOR (ID)") || !strings.Contains(lines[1], "127.0.0.1:9092  (1)") ||
		strings.Join(strings.Fields(lines[1])[3:], " ") != "uniform Reconciling 2" {
		t.Errorf("state table:\n%s", buf.String())
	}
}

func checkFields(t *testing.T, out string, want [][]string) {
	t.Helper()
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if len(lines) != len(want) {
		t.Fatalf("output:\n%s", out)
	}
	for i, w := range want {
		if got := strings.Fields(lines[i]); strings.Join(got, " ") != strings.Join(w, " ") {
			t.Errorf("line %d: %q, want %q", i, got, w)
		}
	}
}

func TestReadResetPlan(t *testing.T) {
	dir := t.TempDir()
	write := func(s string) string {
		p := filepath.Join(dir, "plan.csv")
		if err := os.WriteFile(p, []byte(s), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	plan, err := readResetPlan(write("t,1,5\nt,0,3\n\nu,0,9\n"), []string{"g"})
	if err != nil {
		t.Fatal(err)
	}
	want := []resetRow{{"g", "t", 0, 3}, {"g", "t", 1, 5}, {"g", "u", 0, 9}}
	if !slices.Equal(plan["g"], want) {
		t.Errorf("plan %v, want %v", plan, want)
	}
	plan, err = readResetPlan(write("g1,t,0,1\ng2,t,0,2\nother,t,0,3\n"), []string{"g1", "g2"})
	if err != nil || len(plan) != 2 || plan["g2"][0].NewOffset != 2 {
		t.Errorf("plan %v, %v", plan, err)
	}
	for _, bad := range []string{"t,0\n", "t,x,1\n", "t,0,x\n", ",0,1\n", "t,-1,1\n", "a,b,c,d,e\n"} {
		if _, err := readResetPlan(write(bad), []string{"g"}); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
	if _, err := readResetPlan(write("t,0,1\n"), []string{"g1", "g2"}); err == nil {
		t.Error("a plan without groups accepted for two groups")
	}
}

func TestPrintGroupList(t *testing.T) {
	listed := kadm.ListedGroups{
		"b": {Group: "b", GroupType: "consumer", State: "Stable", ProtocolType: "consumer"},
		"a": {Group: "a", State: "Empty", ProtocolType: "consumer"},
	}
	var buf bytes.Buffer
	if err := printGroupList(&buf, outputTable, listed, false, false); err != nil || buf.String() != "a\nb\n" {
		t.Errorf("names: %q %v", buf.String(), err)
	}
	buf.Reset()
	if err := printGroupList(&buf, outputTable, listed, true, true); err != nil {
		t.Fatal(err)
	}
	checkFields(t, buf.String(), [][]string{{"GROUP", "TYPE", "STATE"}, {"a", "classic", "Empty"}, {"b", "consumer", "Stable"}})
}
