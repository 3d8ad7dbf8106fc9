package cli

import (
	"bytes"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
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
		"no group":        {[]string{"--topic", "t", "--to-earliest"}, "--group"},
		"no topics":       {[]string{"--group", "g", "--to-earliest"}, "--topic or --all-topics"},
		"both topic sets": {[]string{"--group", "g", "--topic", "t", "--all-topics", "--to-earliest"}, "--topic or --all-topics"},
		"no target":       {[]string{"--group", "g", "--topic", "t"}, "exactly one"},
		"two targets":     {[]string{"--group", "g", "--topic", "t", "--to-earliest", "--to-latest"}, "exactly one"},
		"negative offset": {[]string{"--group", "g", "--topic", "t", "--to-offset", "-3"}, "negative"},
		"bad time":        {[]string{"--group", "g", "--topic", "t", "--to-datetime", "soon"}, "--to-datetime"},
		"execute and dry": {[]string{"--group", "g", "--topic", "t", "--to-latest", "--execute", "--dry-run"}, "exclude"},
	}
	for name, tc := range cases {
		cmd := newGroupResetCmd()
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

func TestWriteGroupLag(t *testing.T) {
	member := kadm.DescribedGroupMember{MemberID: "app-1-abc", ClientID: "app-1", ClientHost: "/10.0.0.7"}
	l := kadm.DescribedGroupLag{
		Group: "g1", State: "Stable", Members: []kadm.DescribedGroupMember{member},
		Lag: kadm.GroupLag{"orders": {
			1: {Member: &member, Topic: "orders", Partition: 1, Commit: kadm.Offset{At: -1}, End: kadm.ListedOffset{Offset: 17}, Lag: 17},
			0: {Member: &member, Topic: "orders", Partition: 0, Commit: kadm.Offset{At: 42}, End: kadm.ListedOffset{Offset: 50}, Lag: 8},
		}},
	}
	var buf bytes.Buffer
	if err := writeGroupLag(&buf, l); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(buf.String()), "\n")
	if len(lines) != 3 {
		t.Fatalf("output:\n%s", buf.String())
	}
	wantFields := [][]string{
		{"GROUP", "TOPIC", "PARTITION", "CURRENT-OFFSET", "LOG-END-OFFSET", "LAG", "CONSUMER-ID", "HOST", "CLIENT-ID"},
		{"g1", "orders", "0", "42", "50", "8", "app-1-abc", "/10.0.0.7", "app-1"},
		{"g1", "orders", "1", "-", "17", "-", "app-1-abc", "/10.0.0.7", "app-1"},
	}
	for i, want := range wantFields {
		if got := strings.Fields(lines[i]); strings.Join(got, " ") != strings.Join(want, " ") {
			t.Errorf("line %d: %q, want %q", i, got, want)
		}
	}

	buf.Reset()
	empty := kadm.DescribedGroupLag{Group: "g2", State: "Empty", Lag: kadm.GroupLag{"t": {
		0: {Topic: "t", Partition: 0, Commit: kadm.Offset{At: 5}, End: kadm.ListedOffset{Offset: 5}},
	}}}
	if err := writeGroupLag(&buf, empty); err != nil {
		t.Fatal(err)
	}
	last := strings.Fields(lines2(buf.String()))
	if !strings.Contains(buf.String(), "has no active members") || strings.Join(last, " ") != "g2 t 0 5 5 0 - - -" {
		t.Errorf("empty group output:\n%s", buf.String())
	}

	dead := kadm.DescribedGroupLag{Group: "gone", State: "Dead"}
	if err := writeGroupLag(&buf, dead); err == nil {
		t.Error("a dead group described without error")
	}
	failed := kadm.DescribedGroupLag{Group: "x", DescribeErr: kerr.NotCoordinator}
	if err := writeGroupLag(&buf, failed); !errors.Is(err, kerr.NotCoordinator) {
		t.Errorf("describe error: %v", err)
	}
}

// lines2 is the last line of s.
func lines2(s string) string {
	ls := strings.Split(strings.TrimSpace(s), "\n")
	return ls[len(ls)-1]
}
