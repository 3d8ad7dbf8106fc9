package groups

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"

	"github.com/weir-project/weir/test/harness"
)

// python is the interpreter that sees the Debian client packages.
const python = "/usr/bin/python3"

// proc is a consumer group member in its own process (kcat or a Python
// client) that reports every record it reads on stdout.
type proc struct {
	name string
	cmd  *exec.Cmd
	done chan struct{}

	mu     sync.Mutex
	read   map[string]int // value -> times read
	stderr strings.Builder
}

// starter starts one member of a group on a topic.
type starter func(t *testing.T, b *harness.Broker, name, groupID, topic string) *proc

func startProc(t *testing.T, name string, cmd *exec.Cmd, parse func(line string) (string, bool)) *proc {
	t.Helper()
	p := &proc{name: name, cmd: cmd, done: make(chan struct{}), read: map[string]int{}}
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = &lockedWriter{mu: &p.mu, b: &p.stderr}
	if err := cmd.Start(); err != nil {
		t.Fatalf("start %s: %v", name, err)
	}
	go func() {
		defer close(p.done)
		sc := bufio.NewScanner(out)
		sc.Buffer(make([]byte, 64<<10), 1<<20)
		for sc.Scan() {
			if v, ok := parse(sc.Text()); ok {
				p.mu.Lock()
				p.read[v]++
				p.mu.Unlock()
			}
		}
		cmd.Wait()
	}()
	t.Cleanup(func() { p.signal(syscall.SIGKILL) })
	return p
}

type lockedWriter struct {
	mu *sync.Mutex
	b  *strings.Builder
}

func (w *lockedWriter) Write(b []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.b.Len() < 64<<10 {
		w.b.Write(b)
	}
	return len(b), nil
}

// signal sends sig to the process (by PID) and waits for it to exit.
func (p *proc) signal(sig syscall.Signal) {
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

func (p *proc) snapshot() map[string]int {
	p.mu.Lock()
	defer p.mu.Unlock()
	out := make(map[string]int, len(p.read))
	for k, v := range p.read {
		out[k] = v
	}
	return out
}

func (p *proc) logs() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	s := p.stderr.String()
	if len(s) > 3000 {
		s = "..." + s[len(s)-3000:]
	}
	return s
}

func pyStarter(client string) starter {
	return func(t *testing.T, b *harness.Broker, name, groupID, topic string) *proc {
		t.Helper()
		spec, _ := json.Marshal(map[string]any{
			"client": client, "bootstrap": b.Addr, "topic": topic, "group": groupID,
			"name": name, "session_ms": sessionMs,
		})
		return startProc(t, name, exec.Command(python, "testdata/member.py", string(spec)), func(line string) (string, bool) {
			var r struct {
				V string `json:"v"`
			}
			if json.Unmarshal([]byte(line), &r) != nil {
				return "", false
			}
			return r.V, true
		})
	}
}

// kcatStarter runs kcat's balanced consumer (-G), committing
// automatically every 100 ms.
func kcatStarter(t *testing.T, b *harness.Broker, name, groupID, topic string) *proc {
	t.Helper()
	cmd := exec.Command("kcat", "-b", b.Addr, "-G", groupID, "-q", "-u",
		"-f", "%p %o %s\n",
		"-X", "client.id="+name,
		"-X", "session.timeout.ms="+strconv.Itoa(sessionMs),
		"-X", "heartbeat.interval.ms=500",
		"-X", "auto.offset.reset=earliest",
		"-X", "enable.auto.commit=true",
		"-X", "auto.commit.interval.ms=100",
		"-X", "fetch.wait.max.ms=200",
		topic)
	return startProc(t, name, cmd, func(line string) (string, bool) {
		f := strings.Fields(line)
		if len(f) != 3 {
			return "", false
		}
		return f[2], true
	})
}

func needTool(t *testing.T, name string, check *exec.Cmd) {
	t.Helper()
	if err := check.Run(); err != nil {
		t.Skipf("%s not usable here (%v); scripts/install-test-deps.sh installs it", name, err)
	}
}

// TestExternalClientGroups runs each external client as two processes in
// one group: they split the partitions, read every record exactly once,
// a member killed with SIGKILL loses its partitions to the other after
// the session timeout, and a fresh process resumes at the committed
// offsets.
func TestExternalClientGroups(t *testing.T) {
	b := startBroker(t)
	adm := newAdmin(t, b)
	for _, tc := range []struct {
		name  string
		start starter
		check *exec.Cmd
	}{
		{"kafka-python", pyStarter("kafka-python"), exec.Command(python, "-c", "import kafka")},
		{"confluent", pyStarter("confluent"), exec.Command(python, "-c", "import confluent_kafka")},
		{"kcat", kcatStarter, exec.Command("kcat", "-V")},
	} {
		t.Run(tc.name, func(t *testing.T) {
			needTool(t, tc.name, tc.check)
			testProcGroup(t, b, adm, tc.name, tc.start)
		})
	}
}

func testProcGroup(t *testing.T, b *harness.Broker, adm *kadm.Client, client string, start starter) {
	const partitions = 4
	topic, groupID := "ext-"+client, "ext-g-"+client
	createTopic(t, adm, topic, partitions)
	ps := []*proc{
		start(t, b, client+"-0", groupID, topic),
		start(t, b, client+"-1", groupID, topic),
	}
	defer func() {
		if t.Failed() {
			for _, p := range ps {
				t.Logf("%s stderr:\n%s", p.name, p.logs())
			}
		}
	}()
	waitStable(t, adm, groupID, topic, partitions, 2)

	first := produce(t, b, topic, "a", 200)
	waitRead(t, ps, first, "first batch")
	for _, p := range ps {
		if len(p.snapshot()) == 0 {
			t.Errorf("%s read nothing: the partitions were not shared", p.name)
		}
	}
	waitCommitted(t, adm, groupID, topic, 200)

	// SIGKILL one member: no LeaveGroup; its session must run out.
	ps[0].signal(syscall.SIGKILL)
	killed := ps[0].snapshot()
	second := produce(t, b, topic, "b", 200)
	waitRead(t, ps[1:], second, "second batch after a member was killed")
	if got := ps[0].snapshot(); len(got) != len(killed) {
		t.Errorf("the killed member read on")
	}
	waitStable(t, adm, groupID, topic, partitions, 1)
	waitCommitted(t, adm, groupID, topic, 400)
	// Nothing of the first batch was read again.
	for _, p := range ps {
		for v, n := range p.snapshot() {
			if n != 1 {
				t.Errorf("%s read %s %d times", p.name, v, n)
			}
		}
	}
	ps[1].signal(syscall.SIGTERM)

	// A fresh member resumes at the committed offsets.
	third := produce(t, b, topic, "c", 40)
	fresh := start(t, b, client+"-fresh", groupID, topic)
	ps = append(ps, fresh)
	waitRead(t, []*proc{fresh}, third, "third batch by a fresh member")
	for v := range fresh.snapshot() {
		if !strings.HasPrefix(v, "c-") {
			t.Errorf("fresh member re-read committed record %s", v)
			break
		}
	}
	fresh.signal(syscall.SIGTERM)
}

// waitRead waits until the processes together read every value exactly
// once (a value read twice fails at once).
func waitRead(t *testing.T, ps []*proc, values []string, what string) {
	t.Helper()
	harness.WaitFor(t, 90*time.Second, what, func() bool {
		seen := map[string]string{}
		for _, p := range ps {
			for v, n := range p.snapshot() {
				if n > 1 {
					t.Fatalf("%s read %s %d times", p.name, v, n)
				}
				if other, dup := seen[v]; dup {
					t.Fatalf("%s read by both %s and %s", v, other, p.name)
				}
				seen[v] = p.name
			}
		}
		for _, v := range values {
			if seen[v] == "" {
				return false
			}
		}
		return true
	})
}

// waitCommitted waits until the group's committed offsets of topic sum
// to n.
func waitCommitted(t *testing.T, adm *kadm.Client, groupID, topic string, n int64) {
	t.Helper()
	harness.WaitFor(t, 60*time.Second, fmt.Sprintf("%d offsets committed", n), func() bool {
		resp, err := adm.FetchOffsets(harness.Ctx(t, opTimeout), groupID)
		if err != nil {
			return false
		}
		var total int64
		for _, o := range resp[topic] {
			total += o.At
		}
		return total == n
	})
}
