package harness

import (
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"sync"
	"testing"
	"time"
)

// StartBrokerFDLimit is StartBroker with the process's RLIMIT_NOFILE set
// to fdLimit, soft and hard, at every start. Both matter: Go raises the
// soft limit to the hard one when a program starts.
func StartBrokerFDLimit(t testing.TB, fdLimit int, overrides ...string) *Broker {
	t.Helper()
	return startBroker(&Broker{t: t, Dir: t.TempDir(), fdLimit: fdLimit}, overrides)
}

// command is the weir process to run with args. Under an fd limit, a
// shell sets the limit and execs weir, so the PID is weir's.
func (b *Broker) command(args []string) *exec.Cmd {
	var cmd *exec.Cmd
	if b.fdLimit <= 0 {
		cmd = exec.Command(weirBin, args...)
	} else {
		script := "ulimit -n " + strconv.Itoa(b.fdLimit) + ` && exec "$0" "$@"`
		cmd = exec.Command("sh", append([]string{"-c", script, weirBin}, args...)...)
	}
	if len(b.Env) > 0 {
		cmd.Env = append(os.Environ(), b.Env...)
	}
	return cmd
}

// OpenFDs is the number of descriptors the running broker has open, read
// from /proc/<pid>/fd.
func (b *Broker) OpenFDs() (int, error) {
	ents, err := os.ReadDir(fmt.Sprintf("/proc/%d/fd", b.PID()))
	if err != nil {
		return 0, fmt.Errorf("count open files of weir: %w", err)
	}
	return len(ents), nil
}

// RSS is the running broker's resident set size in bytes (VmRSS).
func (b *Broker) RSS() (int64, error) { return RSS(b.PID()) }

// ResourceWatch samples a broker's open descriptors and RSS in the
// background and keeps the largest values seen. A test reads them with
// Max and asserts on them; Exceeded closes once a sample passes a limit,
// so an attack loop can stop early instead of hurting the machine. A
// guard (Watch) also kills the broker at once past a limit and fails the
// test.
type ResourceWatch struct {
	b        *Broker
	maxFDs   int
	maxRSS   int64
	kill     bool
	mu       sync.Mutex
	peakFDs  int
	peakRSS  int64
	exceeded chan struct{}
	why      string
	stop     chan struct{}
	done     chan struct{}
}

// WatchResources samples b every 10ms until the test ends (or Stop).
// maxFDs and maxRSS are the limits Exceeded reports on (0 = none).
// Samples taken while the broker is restarting are skipped.
func (b *Broker) WatchResources(t testing.TB, maxFDs int, maxRSS int64) *ResourceWatch {
	w := &ResourceWatch{b: b, maxFDs: maxFDs, maxRSS: maxRSS, exceeded: make(chan struct{}), stop: make(chan struct{}), done: make(chan struct{})}
	go w.run()
	t.Cleanup(w.Stop)
	return w
}

// Watch guards the machine while a test attacks b: past maxRSS or maxFDs
// the broker is killed at once, and the test fails at its end.
func (b *Broker) Watch(t testing.TB, maxRSS int64, maxFDs int) *ResourceWatch {
	w := &ResourceWatch{b: b, maxFDs: maxFDs, maxRSS: maxRSS, kill: true, exceeded: make(chan struct{}), stop: make(chan struct{}), done: make(chan struct{})}
	go w.run()
	t.Cleanup(func() {
		w.Stop()
		if why := w.Why(); why != "" {
			t.Errorf("broker killed to protect the machine: %s", why)
		}
	})
	return w
}

func (w *ResourceWatch) run() {
	defer close(w.done)
	tick := time.NewTicker(10 * time.Millisecond)
	defer tick.Stop()
	for {
		select {
		case <-w.stop:
			return
		case <-tick.C:
		}
		w.Sample()
		if w.kill && w.Why() != "" {
			return // killed: a restarted broker is not killed again
		}
	}
}

// Sample takes one sample now (also done in the background).
func (w *ResourceWatch) Sample() {
	fds, ferr := w.b.OpenFDs()
	rss, rerr := w.b.RSS()
	w.mu.Lock()
	defer func() {
		exceeded := w.why != ""
		w.mu.Unlock()
		if exceeded && w.kill {
			w.b.Kill()
		}
	}()
	if ferr == nil {
		w.peakFDs = max(w.peakFDs, fds)
		if w.maxFDs > 0 && fds >= w.maxFDs {
			w.exceedLocked(fmt.Sprintf("%d open descriptors, limit %d", fds, w.maxFDs))
		}
	}
	if rerr == nil {
		w.peakRSS = max(w.peakRSS, rss)
		if w.maxRSS > 0 && rss >= w.maxRSS {
			w.exceedLocked(fmt.Sprintf("RSS %d bytes, limit %d", rss, w.maxRSS))
		}
	}
}

func (w *ResourceWatch) exceedLocked(why string) {
	if w.why == "" {
		w.why = why
		close(w.exceeded)
	}
}

// Max returns the largest descriptor count and RSS seen so far.
func (w *ResourceWatch) Max() (fds int, rss int64) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.peakFDs, w.peakRSS
}

// Exceeded is closed once a sample passed a limit; Why says which.
func (w *ResourceWatch) Exceeded() <-chan struct{} { return w.exceeded }

// Why describes the first limit passed, "" if none.
func (w *ResourceWatch) Why() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.why
}

// Stop ends the sampling (idempotent).
func (w *ResourceWatch) Stop() {
	select {
	case <-w.stop:
	default:
		close(w.stop)
	}
	<-w.done
}
