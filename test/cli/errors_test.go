package cli_test

import (
	"fmt"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/weir-project/weir/test/harness"
)

// failFast is how long a failing command may take: it should be well
// under a second (a refused connection, a broker's answer) or the
// --connect-timeout of a few seconds; the rest is slack for a slow,
// shared machine and the race detector.
const failFast = 15 * time.Second

// failsFast runs weir expecting it to fail within failFast with exactly
// one line on stderr, "weir: ...", holding every one of want, and nothing
// on stdout; it returns the line.
func failsFast(t *testing.T, stdin string, args []string, want ...string) string {
	t.Helper()
	r := weir(t, stdin, args...)
	if r.code == 0 {
		t.Fatalf("weir %q: exit 0, want failure\nstdout:\n%s\nstderr:\n%s", args, r.stdout, r.stderr)
	}
	if r.elapsed > failFast {
		t.Errorf("weir %q took %s to fail, want under %s", args, r.elapsed, failFast)
	}
	line, rest, _ := strings.Cut(r.stderr, "\n")
	if rest != "" || !strings.HasSuffix(r.stderr, "\n") || !strings.HasPrefix(line, "weir: ") {
		t.Fatalf("weir %q: stderr is not exactly one \"weir: ...\" line:\n%s", args, r.stderr)
	}
	if r.stdout != "" {
		t.Errorf("weir %q: stdout %q besides the error", args, r.stdout)
	}
	for _, w := range want {
		if !strings.Contains(line, w) {
			t.Errorf("weir %q: error %q does not mention %q", args, line, w)
		}
	}
	return line
}

// refusedAddr is a loopback address where connections are refused: a
// socket bound to it, and never listening, holds the port for the test,
// so no other process can start listening there in the meantime.
func refusedAddr(t *testing.T) string {
	t.Helper()
	fd, err := syscall.Socket(syscall.AF_INET, syscall.SOCK_STREAM|syscall.SOCK_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { syscall.Close(fd) })
	if err := syscall.Bind(fd, &syscall.SockaddrInet4{Addr: [4]byte{127, 0, 0, 1}}); err != nil {
		t.Fatal(err)
	}
	sa, err := syscall.Getsockname(fd)
	if err != nil {
		t.Fatal(err)
	}
	return fmt.Sprintf("127.0.0.1:%d", sa.(*syscall.SockaddrInet4).Port)
}

// TestNoBroker: with nothing listening, or a listener that never answers,
// consume, bench consume, produce and the admin commands fail within a
// few seconds (the default --connect-timeout), once, saying no broker is
// reachable at the address given; with --timeout or without.
func TestNoBroker(t *testing.T) {
	t.Parallel() // mostly waiting for --connect-timeout
	refused := refusedAddr(t)
	silent := silentListener(t)
	for _, tc := range []struct {
		addr  string
		stdin string
		args  []string
		want  string
	}{
		{refused, "", []string{"consume", "t"}, "refused"},
		{refused, "", []string{"consume", "t", "--timeout=1m"}, "refused"},
		{refused, "", []string{"consume", "t", "--group=g"}, "refused"},
		{refused, "", []string{"bench", "consume", "--topic=t", "--num-records=1"}, "refused"},
		{refused, "a\nb\n", []string{"produce", "t"}, "refused"},
		{refused, "", []string{"bench", "produce", "--topic=t", "--num-records=1"}, "refused"},
		{refused, "", []string{"topic", "list"}, "refused"},
		{refused, "", []string{"group", "list"}, "refused"},
		{silent, "", []string{"consume", "t"}, "no answer within --connect-timeout 5s"},
		{silent, "", []string{"consume", "t", "--timeout=1m"}, "no answer within --connect-timeout 5s"},
		{silent, "", []string{"bench", "consume", "--topic=t", "--num-records=1"}, "no answer within --connect-timeout 5s"},
		{silent, "a\n", []string{"produce", "t"}, "no answer within --connect-timeout 5s"},
		{silent, "a\n", []string{"produce", "t", "--connect-timeout=1s"}, "no answer within --connect-timeout 1s"},
	} {
		args := append(tc.args, "--bootstrap-server="+tc.addr)
		failsFast(t, tc.stdin, args, "no broker reachable at "+tc.addr+": ", tc.want)
	}
}

// TestConsumeFailures: consume and bench consume of a topic that does
// not exist, or of a partition the topic does not have, fail at once
// naming Kafka's error, rather than waiting for records forever (or
// printing "Processed a total of 0 messages" and exiting 0).
func TestConsumeFailures(t *testing.T) {
	b := harness.StartBroker(t) // auto.create.topics.enable=true: consumers still create nothing
	adm := newAdmin(t, b)
	bs := bootstrap(b)
	createTopic(t, adm, "two", 2)

	missing := []string{`consume "nosuch": UNKNOWN_TOPIC_OR_PARTITION: the topic does not exist`}
	failsFast(t, "", []string{"consume", "nosuch", bs}, missing...)
	failsFast(t, "", []string{"consume", "nosuch", "--timeout=1m", bs}, missing...)
	failsFast(t, "", []string{"consume", "nosuch", "--from-beginning", "--group=g", bs}, missing...)
	failsFast(t, "", []string{"bench", "consume", "--topic=nosuch", "--num-records=1", bs},
		`bench consume "nosuch": UNKNOWN_TOPIC_OR_PARTITION`)
	badPartition := `consume "two": UNKNOWN_TOPIC_OR_PARTITION: partition 7 does not exist, the topic has 2 partitions (0-1)`
	failsFast(t, "", []string{"consume", "two", "--partition=7", bs}, badPartition)
	failsFast(t, "", []string{"consume", "two", "--partition=1,7", "--offset=0", "--timeout=1m", bs}, badPartition)
	if tds, err := adm.ListTopics(harness.Ctx(t, opTimeout)); err != nil || tds.Has("nosuch") {
		t.Errorf("consume created the topic it was asked for (err %v)", err)
	}

	// And a partition that exists is consumed.
	prod := b.Client(kgo.RecordPartitioner(kgo.ManualPartitioner()))
	if err := prod.ProduceSync(harness.Ctx(t, opTimeout), &kgo.Record{Topic: "two", Partition: 1, Value: []byte("v")}).FirstErr(); err != nil {
		t.Fatal(err)
	}
	r := ok(t, "", "consume", "two", "--partition=1", "--offset=0", "--max-messages=1", "--timeout=60s", bs)
	if r.stdout != "v\n" || r.stderr != "Processed a total of 1 messages\n" {
		t.Errorf("consume --partition 1 printed %q, stderr %q", r.stdout, r.stderr)
	}
}

// TestProduceFailures: a failure common to every record is told once, in
// one line, and a partition the topic does not have fails before any
// record is sent.
func TestProduceFailures(t *testing.T) {
	b := harness.StartBroker(t, "auto.create.topics.enable=false")
	adm := newAdmin(t, b)
	bs := bootstrap(b)
	createTopic(t, adm, "two", 2)

	failsFast(t, "a\n", []string{"produce", "nosuch", bs},
		`produce to "nosuch": 1 of 1 records failed (line 1): UNKNOWN_TOPIC_OR_PARTITION`)
	failsFast(t, "a\nb\nc\n", []string{"produce", "nosuch", bs},
		`produce to "nosuch": 3 of 3 records failed, the first (line 1): UNKNOWN_TOPIC_OR_PARTITION`)
	failsFast(t, "a\n", []string{"produce", "two", "--partition=7", bs},
		`produce to "two": UNKNOWN_TOPIC_OR_PARTITION: partition 7 does not exist, the topic has 2 partitions (0-1)`)
	if got := sum(endOffsets(t, adm, "two")); got != 0 {
		t.Errorf("two holds %d records after the failures, want 0", got)
	}
	r := ok(t, "a\n", "produce", "two", "--partition=1", "-v", bs)
	if r.stdout != "1@0\n" || r.stderr != "" {
		t.Errorf("produce --partition 1 printed %q, stderr %q", r.stdout, r.stderr)
	}
}

// TestUsageErrors: a mistyped command or flag, or the wrong arguments, is
// an error naming it (with cobra's suggestion where there is one), in one
// line, exit status 1 — not the help text and exit 0.
func TestUsageErrors(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		args []string
		want []string
	}{
		{[]string{"topic", "cretae", "foo"}, []string{`unknown command "cretae" for "weir topic"`, `did you mean "create"?`, "weir topic --help"}},
		{[]string{"frobnicate"}, []string{`unknown command "frobnicate" for "weir"`, "weir --help"}},
		{[]string{"verison"}, []string{`unknown command "verison" for "weir"`, `did you mean "version"?`}},
		{[]string{"group", "lsit"}, []string{`unknown command "lsit" for "weir group"`, `did you mean "list"?`}},
		{[]string{"bench", "prodcue", "--topic=t"}, []string{`unknown command "prodcue" for "weir bench"`, `did you mean "produce"?`}},
		{[]string{"cluster", "sttaus"}, []string{`unknown command "sttaus" for "weir cluster"`, `did you mean "status"?`}},
		{[]string{"completion", "bsh"}, []string{`unknown command "bsh" for "weir completion"`, `did you mean "bash"`}},
		{[]string{"help", "topic", "cretae"}, []string{`unknown command "cretae" for "weir topic"`}},
		{[]string{"topic", "list", "extra"}, []string{`unknown command "extra" for "weir topic list"`}},
		{[]string{"topic", "list", "--bogus"}, []string{"unknown flag: --bogus", "weir topic list --help"}},
		{[]string{"consume", "t", "--form-beginning"}, []string{"unknown flag: --form-beginning", "weir consume --help"}},
		{[]string{"--bogus"}, []string{"unknown flag: --bogus"}},
		{[]string{"topic", "--bogus"}, []string{"unknown flag: --bogus", "weir topic --help"}},
		{[]string{"produce"}, []string{"accepts 1 arg(s), received 0", "weir produce --help"}},
		{[]string{"consume", "t", "--partition=x"}, []string{`invalid argument "x" for "--partition"`}},
		{[]string{"topic", "create", "x", "--partitions=0"}, []string{"--partitions 0: must be positive"}},
		{[]string{"consume", "t", "--connect-timeout=0s"}, []string{"--connect-timeout 0s: must be positive"}},
	} {
		failsFast(t, "", tc.args, tc.want...)
	}

	// Called alone, a command that only groups others shows its help.
	for _, args := range [][]string{{}, {"topic"}, {"group"}, {"help", "topic"}} {
		r := ok(t, "", args...)
		if !strings.Contains(r.stdout, "Available Commands:") || r.stderr != "" {
			t.Errorf("weir %q: stdout %q stderr %q, want the help", args, r.stdout, r.stderr)
		}
	}
}

// TestAdminMessages: an admin error says what failed, Kafka's error name
// and the broker's message, each once; kadm's shard-error wrapper does not
// show.
func TestAdminMessages(t *testing.T) {
	b := harness.StartBroker(t)
	bs := bootstrap(b)
	ok(t, "", "topic", "create", "foo", bs)

	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"topic", "create", "bar", "--config=cleanup.policy=bogus"},
			`weir: create topic "bar": INVALID_CONFIG: invalid value "bogus" for cleanup.policy: "bogus" is not one of compact, delete`},
		{[]string{"topic", "create", "foo"}, `weir: create topic "foo": TOPIC_ALREADY_EXISTS: topic "foo" already exists`},
		{[]string{"topic", "create", "baz", "--replication-factor=3"},
			`weir: create topic "baz": INVALID_REPLICATION_FACTOR: replication factor 3 larger than 1 available brokers`},
		{[]string{"topic", "alter-config", "foo", "--set=retention.ms=soon"},
			`weir: alter config of topic "foo": INVALID_CONFIG: invalid value "soon" for retention.ms: not an integer`},
		{[]string{"topic", "alter-config", "nosuch", "--set=retention.ms=1"},
			`weir: alter config of topic "nosuch": UNKNOWN_TOPIC_OR_PARTITION: topic "nosuch" does not exist`},
	} {
		if line := failsFast(t, "", append(tc.args, bs)); line != tc.want {
			t.Errorf("weir %q:\n got %s\nwant %s", tc.args, line, tc.want)
		}
	}

	// A broker whose advertised address refuses connections: the seed
	// answers metadata, and ListGroups, sent to every broker, fails.
	dead := harness.StartBroker(t, "advertised.listeners=PLAINTEXT://"+refusedAddr(t))
	line := failsFast(t, "", []string{"group", "list", bootstrap(dead)}, "list groups: ", "connection refused")
	if strings.Contains(line, "shard") || strings.Contains(line, "request ListGroups") {
		t.Errorf("group list error shows kadm's internals: %s", line)
	}
}

// TestDescribeInternalTopics: topic describe without names includes
// __consumer_offsets, as topic list does, unless --exclude-internal.
func TestDescribeInternalTopics(t *testing.T) {
	b := harness.StartBroker(t)
	adm := newAdmin(t, b)
	bs := bootstrap(b)
	createTopic(t, adm, "plain", 1)
	// A group's coordinator lookup creates __consumer_offsets.
	harness.WaitFor(t, opTimeout, "__consumer_offsets to exist", func() bool {
		adm.FindGroupCoordinators(harness.Ctx(t, opTimeout), "g")
		tds, err := adm.ListTopicsWithInternal(harness.Ctx(t, opTimeout))
		return err == nil && tds.Has("__consumer_offsets")
	})
	if got := lines(ok(t, "", "topic", "list", bs).stdout); !slices.Equal(got, []string{"__consumer_offsets", "plain"}) {
		t.Errorf("topic list = %q", got)
	}

	heads := func(args ...string) []string {
		var out []string
		for _, row := range describeLines(t, ok(t, "", append(append([]string{"topic", "describe"}, args...), bs)...).stdout) {
			if _, part := row["Partition"]; !part {
				out = append(out, row["Topic"])
			}
		}
		return out
	}
	if got := heads(); !slices.Equal(got, []string{"__consumer_offsets", "plain"}) {
		t.Errorf("topic describe shows %q, want __consumer_offsets and plain", got)
	}
	if got := heads("--exclude-internal"); !slices.Equal(got, []string{"plain"}) {
		t.Errorf("topic describe --exclude-internal shows %q, want plain", got)
	}
	if got := heads("__consumer_offsets"); !slices.Equal(got, []string{"__consumer_offsets"}) {
		t.Errorf("topic describe __consumer_offsets shows %q", got)
	}
}
