package cli_test

import (
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/weir-project/weir/test/harness"
)

// pythonBin sees the Debian kafka-python package; the python3 first on
// PATH may not.
const pythonBin = "/usr/bin/python3"

// kafkaPython runs a kafka-python script (argv[1] is the bootstrap
// address, then args) and returns its stdout; the test is skipped when
// kafka-python is missing and fails when the script does.
func kafkaPython(t *testing.T, b *harness.Broker, script string, args ...string) string {
	t.Helper()
	if err := exec.Command(pythonBin, "-c", "import kafka").Run(); err != nil {
		t.Skipf("%s cannot import kafka (scripts/install-test-deps.sh installs python3-kafka): %v", pythonBin, err)
	}
	r := run(t, "", pythonBin, append([]string{"-c", script, b.Addr}, args...)...)
	if r.code != 0 {
		t.Fatalf("kafka-python script failed (exit %d):\n%s\nstderr:\n%s", r.code, script, r.stderr)
	}
	return strings.TrimSpace(r.stdout)
}

// failsUsage runs weir expecting a refusal of its arguments: a non-zero
// exit, quickly, with the last stderr line "weir: ..." naming every one of
// want (cobra may print the usage above it).
func failsUsage(t *testing.T, args []string, want ...string) {
	t.Helper()
	r := weir(t, "", args...)
	ls := lines(r.stderr)
	if r.code == 0 || len(ls) == 0 || !strings.HasPrefix(ls[len(ls)-1], "weir: ") {
		t.Fatalf("weir %q: exit %d, want a failure ending in one \"weir: ...\" line\nstdout:\n%s\nstderr:\n%s", args, r.code, r.stdout, r.stderr)
	}
	for _, w := range want {
		if !strings.Contains(ls[len(ls)-1], w) {
			t.Errorf("weir %q: error %q does not mention %q", args, ls[len(ls)-1], w)
		}
	}
	if r.stdout != "" {
		t.Errorf("weir %q: refused arguments but printed %q", args, r.stdout)
	}
}

// failsAtDeadAddress runs weir against an address nothing listens on: it must fail
// with one line naming the address, well within the request timeout.
func failsAtDeadAddress(t *testing.T, args ...string) {
	t.Helper()
	addr := refusedAddr(t)
	start := time.Now()
	failsWith(t, "", append(args, "--bootstrap-server="+addr, "--request-timeout=20s"), addr)
	if el := time.Since(start); el > 15*time.Second {
		t.Errorf("weir %q against a dead address took %s", args, el)
	}
}

// produceAt writes one record per timestamp (Unix ms) to partition p of
// topic, in order, with an independent franz-go client.
func produceAt(t *testing.T, b *harness.Broker, topic string, p int32, timestamps ...int64) {
	t.Helper()
	cl := b.Client(kgo.RecordPartitioner(kgo.ManualPartitioner()))
	defer cl.Close()
	ctx := harness.Ctx(t, opTimeout)
	for _, ts := range timestamps {
		r := &kgo.Record{Topic: topic, Partition: p, Value: []byte("v"), Timestamp: time.UnixMilli(ts)}
		if err := cl.ProduceSync(ctx, r).FirstErr(); err != nil {
			t.Fatalf("produce to %s[%d]: %v", topic, p, err)
		}
	}
}
