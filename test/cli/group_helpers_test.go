package cli_test

import (
	"bufio"
	"encoding/json"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/weir-project/weir/test/harness"
)

// python is the interpreter that sees the Debian client packages.
const python = "/usr/bin/python3"

// groupBroker is a broker whose groups form quickly: no initial
// rebalance delay, and KIP-848 members that heartbeat often and expire
// soon after they go silent.
func groupBroker(t *testing.T) *harness.Broker {
	t.Helper()
	return harness.StartBroker(t,
		"auto.create.topics.enable=false",
		"offsets.topic.num.partitions=3",
		"group.initial.rebalance.delay.ms=0",
		"group.consumer.heartbeat.interval.ms=500",
		"group.consumer.session.timeout.ms=6000",
	)
}

// classicMember is a franz-go member of a classic group (range balancer).
func classicMember(t *testing.T, b *harness.Broker, name, group, topic string) *harness.GroupMember {
	t.Helper()
	return harness.StartGroupMember(t, name, kgo.SeedBrokers(b.Addr), kgo.ConsumerGroup(group),
		kgo.ConsumeTopics(topic), kgo.Balancers(kgo.RangeBalancer()),
		kgo.SessionTimeout(6*time.Second), kgo.HeartbeatInterval(500*time.Millisecond))
}

// consumerMember is a franz-go member of a KIP-848 consumer group; the
// range balancer makes it ask the coordinator for its range assignor.
func consumerMember(t *testing.T, b *harness.Broker, name, group, topic string) *harness.GroupMember {
	t.Helper()
	return harness.StartGroupMember(t, name, kgo.SeedBrokers(b.Addr), kgo.ConsumerGroup(group),
		kgo.ConsumeTopics(topic), kgo.Balancers(kgo.RangeBalancer()), kgo.ServerSideBalancer())
}

// pyMember is a kafka-python group member in its own process.
type pyMember struct {
	cmd  *exec.Cmd
	done chan struct{}

	mu   sync.Mutex
	read int
	errb strings.Builder
}

func needKafkaPython(t *testing.T) {
	t.Helper()
	if err := exec.Command(python, "-c", "import kafka").Run(); err != nil {
		t.Skipf("%s cannot import kafka (scripts/install-test-deps.sh installs python3-kafka): %v", python, err)
	}
}

func startPyMember(t *testing.T, b *harness.Broker, name, group, topic string) *pyMember {
	t.Helper()
	spec, _ := json.Marshal(map[string]string{"bootstrap": b.Addr, "topic": topic, "group": group, "name": name})
	p := &pyMember{cmd: exec.Command(python, "testdata/pymember.py", string(spec)), done: make(chan struct{})}
	out, err := p.cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	p.cmd.Stderr = &lockedBuilder{mu: &p.mu, b: &p.errb}
	if err := p.cmd.Start(); err != nil {
		t.Fatalf("start %s: %v", name, err)
	}
	go func() {
		defer close(p.done)
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			p.mu.Lock()
			p.read++
			p.mu.Unlock()
		}
		p.cmd.Wait()
	}()
	t.Cleanup(func() { p.signal(syscall.SIGKILL) })
	return p
}

// Read is how many records the member printed.
func (p *pyMember) Read() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.read
}

// Stop closes the consumer (it leaves the group) and waits for the exit.
func (p *pyMember) Stop() { p.signal(syscall.SIGTERM) }

func (p *pyMember) signal(sig syscall.Signal) {
	select {
	case <-p.done:
		return
	default:
	}
	_ = p.cmd.Process.Signal(sig)
	select {
	case <-p.done:
	case <-time.After(30 * time.Second):
		_ = p.cmd.Process.Kill()
		<-p.done
	}
}

func (p *pyMember) stderr() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.errb.String()
}

type lockedBuilder struct {
	mu *sync.Mutex
	b  *strings.Builder
}

func (w *lockedBuilder) Write(b []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.b.Len() < 64<<10 {
		w.b.Write(b)
	}
	return len(b), nil
}

// parseTable reads an aligned table whose first line is exactly the
// columns header (in order): each row's cells are cut at the positions
// where the header's columns start, so cells holding spaces ("Error: ...",
// "host:port  (id)") stay whole.
func parseTable(t *testing.T, out string, header ...string) []map[string]string {
	t.Helper()
	ls := lines(out)
	if len(ls) == 0 {
		t.Fatalf("no table in %q, want header %q", out, header)
	}
	starts := make([]int, len(header))
	from := 0
	for i, h := range header {
		at := strings.Index(ls[0][from:], h)
		if at < 0 || (i == 0 && at != 0) {
			t.Fatalf("header %q is not %q", ls[0], header)
		}
		starts[i] = from + at
		from = starts[i] + len(h)
	}
	if strings.TrimSpace(ls[0][from:]) != "" {
		t.Fatalf("header %q has more columns than %q", ls[0], header)
	}
	var rows []map[string]string
	for _, l := range ls[1:] {
		if l == "" {
			break
		}
		row := map[string]string{}
		for i, h := range header {
			end := len(l)
			if i+1 < len(header) {
				end = min(starts[i+1], len(l))
			}
			if starts[i] > len(l) {
				t.Fatalf("row %q is shorter than header %q", l, ls[0])
			}
			row[h] = strings.TrimSpace(l[starts[i]:end])
		}
		rows = append(rows, row)
	}
	return rows
}

// commit sets group g's committed offsets from outside the group, as an
// admin (or Kafka's reset tool) does.
func commit(t *testing.T, adm *kadm.Client, g string, offsets map[string]map[int32]int64) {
	t.Helper()
	os := kadm.Offsets{}
	for topic, ps := range offsets {
		for p, at := range ps {
			os.Add(kadm.Offset{Topic: topic, Partition: p, At: at, LeaderEpoch: -1})
		}
	}
	resps, err := adm.CommitOffsets(harness.Ctx(t, opTimeout), g, os)
	if err == nil {
		err = resps.Error()
	}
	if err != nil {
		t.Fatalf("commit offsets of %s: %v", g, err)
	}
}

// produceTo writes the values to one partition, waiting for the acks.
func produceTo(t *testing.T, b *harness.Broker, topic string, p int32, values ...string) {
	t.Helper()
	recs := make([]*kgo.Record, len(values))
	for i, v := range values {
		recs[i] = &kgo.Record{Topic: topic, Partition: p, Value: []byte(v)}
	}
	produceRecords(t, b, recs...)
}

func produceRecords(t *testing.T, b *harness.Broker, recs ...*kgo.Record) {
	t.Helper()
	cl := b.Client(kgo.RecordPartitioner(kgo.ManualPartitioner()))
	defer cl.Close()
	if err := cl.ProduceSync(harness.Ctx(t, opTimeout), recs...).FirstErr(); err != nil {
		t.Fatalf("produce: %v", err)
	}
}

// decodeJSON parses a command's whole stdout as one JSON document.
func decodeJSON(t *testing.T, out string, v any) {
	t.Helper()
	dec := json.NewDecoder(strings.NewReader(out))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		t.Fatalf("stdout is not the JSON expected (%v):\n%s", err, out)
	}
	if dec.More() {
		t.Fatalf("stdout holds more than one JSON document:\n%s", out)
	}
}

// usageFails runs weir with a usage mistake: it must exit non-zero
// without touching the cluster, with a "weir: ..." line naming it (cobra
// may print the usage text around it).
func usageFails(t *testing.T, args []string, want ...string) {
	t.Helper()
	r := weir(t, "", args...)
	if r.code == 0 {
		t.Fatalf("weir %q: exit 0, want a usage error\nstdout:\n%s", args, r.stdout)
	}
	for _, l := range lines(r.stderr) {
		if !strings.HasPrefix(l, "weir: ") {
			continue
		}
		for _, w := range want {
			if !strings.Contains(l, w) {
				t.Errorf("weir %q: error %q does not mention %q", args, l, w)
			}
		}
		return
	}
	t.Errorf("weir %q: no \"weir: ...\" line in stderr:\n%s", args, r.stderr)
}
