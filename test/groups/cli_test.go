package groups

import (
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/weir-project/weir/test/harness"
)

// weir runs the weir binary's client commands against b; stdout.
func weir(t *testing.T, b *harness.Broker, args ...string) string {
	t.Helper()
	return harness.RunCLI(t, b, args...)
}

// weirOutErr runs the weir binary's client command args against b and
// returns its stdout and stderr; a failure fails the test.
func weirOutErr(t *testing.T, b *harness.Broker, args ...string) (string, string) {
	t.Helper()
	cmd := exec.Command(harness.Bin(), append(args, "--bootstrap-server", b.Addr)...)
	var stdout, stderr strings.Builder
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("weir %s: %v\n%s%s", strings.Join(args, " "), err, stdout.String(), stderr.String())
	}
	return stdout.String(), stderr.String()
}

// rows parses a table printed by weir group: header fields -> values.
func rows(t *testing.T, out string) []map[string]string {
	t.Helper()
	var header []string
	var out2 []map[string]string
	for _, line := range strings.Split(out, "\n") {
		f := strings.Fields(line)
		if len(f) == 0 {
			continue
		}
		if f[0] == "GROUP" {
			header = f
			continue
		}
		if header == nil || len(f) != len(header) {
			continue
		}
		row := map[string]string{}
		for i, h := range header {
			row[h] = f[i]
		}
		out2 = append(out2, row)
	}
	return out2
}

// TestGroupCommands drives weir consume --group and weir group list,
// describe, reset-offsets and delete against a live broker.
func TestGroupCommands(t *testing.T) {
	b := startBroker(t)
	adm := newAdmin(t, b)
	const topic, g = "cli-topic", "cli-group"
	createTopic(t, adm, topic, 2)
	produce(t, b, topic, "v", 30)

	out := weir(t, b, "consume", topic, "--group", g, "--from-beginning", "--max-messages", "10", "--timeout", "20s")
	if n := len(strings.Fields(out)); n != 10 {
		t.Fatalf("consumed %d records, want 10:\n%s", n, out)
	}
	if got := committed(t, adm, g, topic); got[0]+got[1] != 10 {
		t.Fatalf("committed %v after printing 10", got)
	}
	// The next member of the group resumes there: 20 records are left
	// (--from-beginning only for a partition without a commit yet).
	out = weir(t, b, "consume", topic, "--group", g, "--from-beginning", "--timeout", "5s")
	if n := len(strings.Fields(out)); n != 20 {
		t.Fatalf("second consume read %d records, want the 20 uncommitted", n)
	}

	if out := weir(t, b, "group", "list"); !strings.Contains(out, g) {
		t.Errorf("group list:\n%s", out)
	}
	out, errOut := weirOutErr(t, b, "group", "describe", g)
	if !strings.Contains(errOut, "has no active members") {
		t.Errorf("describe of an empty group: stderr %q", errOut)
	}
	rs := rows(t, out)
	if len(rs) != 2 {
		t.Fatalf("describe rows %v:\n%s", rs, out)
	}
	for _, r := range rs {
		if r["GROUP"] != g || r["TOPIC"] != topic || r["LAG"] != "0" || r["CURRENT-OFFSET"] != r["LOG-END-OFFSET"] || r["CONSUMER-ID"] != "-" {
			t.Errorf("row %v", r)
		}
	}

	// Reset: a dry run changes nothing; --execute does.
	out, errOut = weirOutErr(t, b, "group", "reset-offsets", "--group", g, "--topic", topic, "--to-earliest")
	if rs := rows(t, out); len(rs) != 2 || rs[0]["NEW-OFFSET"] != "0" || !strings.Contains(errOut, "Dry run") {
		t.Errorf("dry run:\n%s%s", out, errOut)
	}
	if got := committed(t, adm, g, topic); got[0]+got[1] != 30 {
		t.Fatalf("dry run changed offsets: %v", got)
	}
	weir(t, b, "group", "reset-offsets", "--group", g, "--topic", topic+":1", "--to-offset", "3", "--execute")
	weir(t, b, "group", "reset-offsets", "--group", g, "--topic", topic+":0", "--to-earliest", "--execute")
	if got := committed(t, adm, g, topic); got[0] != 0 || got[1] != 3 {
		t.Fatalf("after reset: %v", got)
	}

	// A live member shows up with its id, host and client id.
	m := startMember(t, b, "cli-member", g, topic, kgo.RangeBalancer())
	waitStable(t, adm, g, topic, 2, 1)
	harness.WaitFor(t, 60*time.Second, "the member to catch up", func() bool {
		got, _ := m.Snapshot()
		return len(got) == 27
	})
	harness.WaitFor(t, 60*time.Second, "describe to show the live member with no lag", func() bool {
		rs := rows(t, weir(t, b, "group", "describe", g))
		if len(rs) != 2 {
			return false
		}
		for _, r := range rs {
			if r["CLIENT-ID"] != "cli-member" || r["HOST"] != "/127.0.0.1" || !strings.HasPrefix(r["CONSUMER-ID"], "cli-member-") || r["LAG"] != "0" {
				return false
			}
		}
		return true
	})
	// Resetting a group with members is refused, and so is deleting it.
	cmd := exec.Command(harness.Bin(), "group", "reset-offsets", "--group", g, "--all-topics", "--to-earliest", "--execute", "--bootstrap-server", b.Addr)
	if out, err := cmd.CombinedOutput(); err == nil || !strings.Contains(string(out), "can only be reset if the group 'cli-group' is inactive") {
		t.Errorf("reset of a live group: %v\n%s", err, out)
	}
	m.Close()
	out = weir(t, b, "group", "delete", "--group", g)
	if !strings.Contains(out, "Deleted group "+g) {
		t.Errorf("delete:\n%s", out)
	}
	if out := weir(t, b, "group", "list"); strings.Contains(out, g) {
		t.Errorf("deleted group still listed:\n%s", out)
	}
}
