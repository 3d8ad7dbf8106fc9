// Package harness runs the real weir binary for black-box tests: started
// on loopback ports with a temp data dir, driven by real Kafka clients
// (franz-go, kcat, kafka-python, confluent-kafka-python). Every process a
// test starts is stopped by PID when the test ends.
//
// A test package calls harness.Main from its TestMain, which builds the
// binary once (with the race detector) for the whole package.
package harness

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

// weirBin is the binary under test, built once by Main.
var weirBin string

// Bin is the path of the weir binary built by Main.
func Bin() string { return weirBin }

// Main builds the weir binary (module root found from the working
// directory), runs the package's tests, and removes the binary.
func Main(m *testing.M) {
	dir, err := os.MkdirTemp("", "weir-test-bin")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	weirBin = filepath.Join(dir, "weir")
	build := exec.Command("go", "build", "-race", "-o", weirBin, "github.com/weir-project/weir/cmd/weir")
	build.Stdout, build.Stderr = os.Stderr, os.Stderr
	if err := build.Run(); err != nil {
		fmt.Fprintln(os.Stderr, "build weir:", err)
		os.Exit(1)
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// startTimeout bounds how long a broker may take to come up on a slow,
// shared machine.
const startTimeout = 60 * time.Second

// Broker is one running weir process.
type Broker struct {
	t         testing.TB
	Dir       string   // log dir
	Overrides []string // --override values used at every start
	// Env is added to the process's environment at every start (a
	// test's hook, e.g. WEIR_TEST_ROLL_FLUSH_GATE); set it before the
	// start it is for.
	Env      []string
	fdLimit  int    // RLIMIT_NOFILE of the process, 0 = inherited (limits.go)
	Addr     string // client listener host:port
	CtrlAddr string // controller listener host:port
	// MetricsURL is the metrics listener (http://host:port), "" unless
	// started with metrics.listener (e.g. MetricsListener).
	MetricsURL string

	mu      sync.Mutex
	cmd     *exec.Cmd
	done    chan struct{}
	started chan map[string]string // the bound listeners, once this run logged "weir started"
	stopped bool                   // paused (SIGSTOP) by Pause

	// Cluster nodes only.
	nodeID     int32
	voter      bool // a controller: voterAddr is its controller listener
	voterAddr  string
	brokerOnly bool
	output     bytes.Buffer // stderr of every run, for failure messages
}

// StartBroker starts a single-node broker on ephemeral loopback ports with
// a fresh data dir; extra overrides ("key=value") are applied.
func StartBroker(t testing.TB, overrides ...string) *Broker {
	t.Helper()
	return startBroker(&Broker{t: t, Dir: t.TempDir()}, overrides)
}

// StartBrokerEnv is StartBroker with env ("KEY=value") added to the
// process's environment, at this start and later ones until b.Env is
// changed.
func StartBrokerEnv(t testing.TB, env []string, overrides ...string) *Broker {
	t.Helper()
	return startBroker(&Broker{t: t, Dir: t.TempDir(), Env: env}, overrides)
}

// startBroker applies the default overrides to b and starts it.
func startBroker(b *Broker, overrides []string) *Broker {
	t := b.t
	t.Helper()
	b.Overrides = append([]string{
		"log.dirs=" + b.Dir,
		"listeners=PLAINTEXT://127.0.0.1:0,CONTROLLER://127.0.0.1:0",
	}, overrides...)
	b.start()
	t.Cleanup(b.Kill)
	return b
}

var (
	listenerRE = regexp.MustCompile(`listener\.(\w+)=(\S+)`)
	metricsRE  = regexp.MustCompile(` metrics=(\S+)`)
)

// MetricsListener is the override that turns the metrics listener on at a
// free loopback port (see Broker.MetricsURL).
const MetricsListener = "metrics.listener=http://127.0.0.1:0"

func (b *Broker) start() {
	b.t.Helper()
	b.launch()
	b.awaitStarted()
}

// launch starts the process without waiting for it to serve (the nodes
// of a cluster come up together: none serves before a quorum exists).
func (b *Broker) launch() {
	b.t.Helper()
	args := []string{"serve"}
	for _, o := range b.Overrides {
		args = append(args, "--override", o)
	}
	if b.Addr != "" {
		// Restart on the same ports so clients find the broker again.
		listeners := "listeners=PLAINTEXT://" + b.Addr + ",CONTROLLER://" + b.CtrlAddr
		if b.brokerOnly {
			listeners = "listeners=PLAINTEXT://" + b.Addr
		}
		args = append(args, "--override", listeners)
	}
	cmd := b.command(args)
	stderr, err := cmd.StderrPipe()
	if err != nil {
		b.t.Fatal(err)
	}
	cmd.Stdout = io.Discard
	if err := cmd.Start(); err != nil {
		b.t.Fatalf("start weir: %v", err)
	}
	done := make(chan struct{})
	started := make(chan map[string]string, 1)
	go func() {
		defer close(done)
		sc := bufio.NewScanner(stderr)
		sc.Buffer(make([]byte, 64<<10), 1<<20)
		sent := false
		for sc.Scan() {
			line := sc.Text()
			b.mu.Lock()
			b.output.WriteString(line + "\n")
			b.mu.Unlock()
			if !sent && strings.Contains(line, "weir started") {
				addrs := map[string]string{}
				for _, m := range listenerRE.FindAllStringSubmatch(line, -1) {
					addrs[m[1]] = m[2]
				}
				if m := metricsRE.FindStringSubmatch(line); m != nil {
					addrs["metrics"] = m[1]
				}
				started <- addrs
				sent = true
			}
		}
		cmd.Wait()
	}()
	b.mu.Lock()
	b.cmd, b.done, b.started, b.stopped = cmd, done, started, false
	b.mu.Unlock()
}

// awaitStarted waits for the launched process to log "weir started" and
// records its bound addresses.
func (b *Broker) awaitStarted() {
	b.t.Helper()
	b.mu.Lock()
	done, started := b.done, b.started
	b.mu.Unlock()
	select {
	case addrs := <-started:
		b.Addr, b.CtrlAddr, b.MetricsURL = addrs["PLAINTEXT"], addrs["CONTROLLER"], addrs["metrics"]
	case <-done:
		b.t.Fatalf("weir exited before it started:\n%s", b.Output())
	case <-time.After(startTimeout):
		b.Kill()
		b.t.Fatalf("weir did not start within %s:\n%s", startTimeout, b.Output())
	}
}

// Output is everything the broker logged so far.
func (b *Broker) Output() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.output.String()
}

// PID is the running process's id.
func (b *Broker) PID() int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.cmd.Process.Pid
}

// Kill sends SIGKILL and waits for the process to exit.
func (b *Broker) Kill() { b.signal(syscall.SIGKILL) }

// Stop sends SIGTERM (clean shutdown) and waits; SIGKILL after a minute.
func (b *Broker) Stop() { b.signal(syscall.SIGTERM) }

func (b *Broker) signal(sig syscall.Signal) {
	b.mu.Lock()
	cmd, done := b.cmd, b.done
	b.mu.Unlock()
	if cmd == nil {
		return
	}
	select {
	case <-done:
		return
	default:
	}
	cmd.Process.Signal(sig)
	select {
	case <-done:
	case <-time.After(60 * time.Second):
		cmd.Process.Kill()
		<-done
		b.t.Errorf("weir did not exit on %v within 60s", sig)
	}
}

// Restart starts the broker again on the same ports and data dir.
func (b *Broker) Restart() {
	b.t.Helper()
	b.start()
}

// Client returns a franz-go client for the broker, closed when the test
// ends. Idempotent writes are on, as in franz-go and Java's producer; like
// Java's, the client turns them off by itself when the options ask for
// acks other than all (franz-go would refuse such a configuration).
func (b *Broker) Client(opts ...kgo.Opt) *kgo.Client {
	b.t.Helper()
	all := append([]kgo.Opt{
		kgo.SeedBrokers(b.Addr),
		kgo.RetryTimeout(30 * time.Second),
	}, opts...)
	c, err := kgo.NewClient(all...)
	if err != nil && strings.Contains(err.Error(), "idempotency requires acks=all") {
		c, err = kgo.NewClient(append(all, kgo.DisableIdempotentWrite())...)
	}
	if err != nil {
		b.t.Fatal(err)
	}
	b.t.Cleanup(c.Close)
	return c
}

// WaitFor polls cond until it holds or the deadline passes.
func WaitFor(t testing.TB, timeout time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %s waiting for %s", timeout, what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// Ctx is a context bounded well inside the suite's timeout.
func Ctx(t testing.TB, d time.Duration) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	t.Cleanup(cancel)
	return ctx
}

// ExitCode is the exit status of the last run once it has exited (-1 if
// it died from a signal), and false while it is still running.
func (b *Broker) ExitCode() (int, bool) {
	b.mu.Lock()
	cmd, done := b.cmd, b.done
	b.mu.Unlock()
	if cmd == nil {
		return 0, false
	}
	select {
	case <-done:
		// done is closed after cmd.Wait returned, so ProcessState is set.
		return cmd.ProcessState.ExitCode(), true
	default:
		return 0, false
	}
}

// OutputSince is what the broker logged from byte off of Output onwards,
// and the new end; tests polling the log use it to avoid copying it all.
func (b *Broker) OutputSince(off int) (string, int) {
	b.mu.Lock()
	defer b.mu.Unlock()
	n := b.output.Len()
	if off < 0 || off > n {
		off = n
	}
	return string(b.output.Bytes()[off:]), n
}
