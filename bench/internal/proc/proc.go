package proc

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os/exec"
	"regexp"
	"sync"
	"syscall"
	"time"
)

// Proc is one child process whose stderr and stdout are kept (for error
// messages) and scanned for a readiness line.
type Proc struct {
	Name string
	cmd  *exec.Cmd
	done chan struct{}

	mu     sync.Mutex
	output bytes.Buffer
	ready  chan []string // submatches of the ready pattern, once
}

// Start runs bin with args and returns once a line of its output matches
// ready (its submatches are returned), the process exits, or timeout
// passes (then it is killed).
func Start(name, bin string, args []string, ready *regexp.Regexp, timeout time.Duration) (*Proc, []string, error) {
	p, err := Launch(name, bin, args, ready)
	if err != nil {
		return nil, nil, err
	}
	m, err := p.WaitReady(timeout)
	if err != nil {
		p.Kill()
		return nil, nil, err
	}
	return p, m, nil
}

// Launch starts the process without waiting for it to be ready.
func Launch(name, bin string, args []string, ready *regexp.Regexp) (*Proc, error) {
	cmd := exec.Command(bin, args...)
	pr, pw := io.Pipe()
	cmd.Stdout, cmd.Stderr = pw, pw
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("start %s: %w", name, err)
	}
	p := &Proc{Name: name, cmd: cmd, done: make(chan struct{}), ready: make(chan []string, 1)}
	go func() {
		_ = cmd.Wait()
		pw.Close()
	}()
	go p.scan(pr, ready)
	return p, nil
}

func (p *Proc) scan(r io.Reader, ready *regexp.Regexp) {
	defer close(p.done)
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	sent := false
	for sc.Scan() {
		line := sc.Text()
		p.mu.Lock()
		// Keep the start and the last 64 KiB: enough to explain a failure.
		if p.output.Len() > 1<<20 {
			tail := append([]byte(nil), p.output.Bytes()[p.output.Len()-64<<10:]...)
			p.output.Reset()
			p.output.Write(tail)
		}
		p.output.WriteString(line + "\n")
		p.mu.Unlock()
		if !sent && ready != nil {
			if m := ready.FindStringSubmatch(line); m != nil {
				p.ready <- m
				sent = true
			}
		}
	}
	_, _ = io.Copy(io.Discard, r)
}

// WaitReady waits for the ready line of this run.
func (p *Proc) WaitReady(timeout time.Duration) ([]string, error) {
	t := time.NewTimer(timeout)
	defer t.Stop()
	select {
	case m := <-p.ready:
		return m, nil
	case <-p.done:
		return nil, fmt.Errorf("%s exited before it was ready:\n%s", p.Name, p.Output())
	case <-t.C:
		return nil, fmt.Errorf("%s not ready within %v:\n%s", p.Name, timeout, p.Output())
	}
}

// PID is the process id.
func (p *Proc) PID() int { return p.cmd.Process.Pid }

// Output is what the process printed so far (bounded).
func (p *Proc) Output() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.output.String()
}

// Exited reports whether the process has ended.
func (p *Proc) Exited() bool {
	select {
	case <-p.done:
		return true
	default:
		return false
	}
}

// Stop sends SIGTERM and waits; after timeout it kills the process.
func (p *Proc) Stop(timeout time.Duration) error {
	if p.Exited() {
		return nil
	}
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	t := time.NewTimer(timeout)
	defer t.Stop()
	select {
	case <-p.done:
		return nil
	case <-t.C:
		p.Kill()
		return fmt.Errorf("%s (pid %d) did not exit on SIGTERM within %v", p.Name, p.PID(), timeout)
	}
}

// Kill sends SIGKILL and waits for the process to be gone.
func (p *Proc) Kill() {
	if p.Exited() {
		return
	}
	_ = p.cmd.Process.Signal(syscall.SIGKILL)
	<-p.done
}

// Wait blocks until the process ends or ctx is done.
func (p *Proc) Wait(ctx context.Context) error {
	select {
	case <-p.done:
		return nil
	case <-ctx.Done():
		return errors.Join(ctx.Err(), fmt.Errorf("waiting for %s to exit", p.Name))
	}
}
