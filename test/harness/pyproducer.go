package harness

import (
	"bufio"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"
)

// PyProducer is a Python Kafka producer process (a script such as
// test/idempotence/testdata/idem_producer.py) that prints "ack OFFSET
// VALUE" per delivered record and, when it was given a stop file, "sent
// N" last; its acknowledgements go into an AckLog, so the harness's
// waits and exactly-once check serve a non-Go client too. Any other line
// on stdout is recorded as a failure.
type PyProducer struct {
	*AckLog
	t      testing.TB
	cmd    *exec.Cmd
	stderr strings.Builder
	sent   chan int
	exited chan error
	waited chan struct{} // closed once the process is reaped
}

// StartPyProducer runs python with args (the script first); the process
// is killed at the end of the test if it is still running.
func StartPyProducer(t testing.TB, python string, args ...string) *PyProducer {
	t.Helper()
	p := &PyProducer{AckLog: NewAckLog(), t: t, cmd: exec.Command(python, args...),
		sent: make(chan int, 1), exited: make(chan error, 1), waited: make(chan struct{})}
	stdout, err := p.cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	p.cmd.Stderr = &p.stderr
	if err := p.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		p.cmd.Process.Kill()
		<-p.waited // stderr is written until the process is reaped
		if t.Failed() {
			out := p.stderr.String()
			t.Logf("python producer stderr (tail):\n%s", out[max(0, len(out)-16<<10):])
		}
	})
	go func() {
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			f := strings.Fields(sc.Text())
			switch {
			case len(f) == 3 && f[0] == "ack":
				if off, err := strconv.ParseInt(f[1], 10, 64); err == nil {
					p.Ack(f[2], off)
				} else {
					p.Fail(sc.Text())
				}
			case len(f) == 2 && f[0] == "sent":
				n, _ := strconv.Atoi(f[1])
				p.sent <- n
			default:
				p.Fail(sc.Text())
			}
		}
		p.exited <- p.cmd.Wait()
		close(p.waited)
	}()
	return p
}

// Wait waits for the process to exit successfully and fails the test if
// it did not within timeout, exited with an error, or reported a failed
// record.
func (p *PyProducer) Wait(timeout time.Duration) {
	p.t.Helper()
	select {
	case err := <-p.exited:
		if err != nil {
			p.t.Fatalf("producer failed: %v\n%s", err, p.stderr.String())
		}
	case <-time.After(timeout):
		p.t.Fatalf("producer did not finish; %d acknowledged\n%s", p.Count(), p.stderr.String())
	}
	p.RequireNoFailures(p.t, "the producer")
}

// Sent is the count a producer given a stop file printed last; call it
// after Wait.
func (p *PyProducer) Sent() int {
	p.t.Helper()
	select {
	case n := <-p.sent:
		return n
	default:
		p.t.Fatal("the producer printed no \"sent N\" line")
		return 0
	}
}
