package cli_test

import (
	"bufio"
	"bytes"
	"os/exec"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/weir-project/weir/test/harness"
)

// logAttrRE is one key=value of slog's text format; a value with spaces,
// quotes or '=' is quoted.
var logAttrRE = regexp.MustCompile(`(?:^|\s)([A-Za-z_][\w.\-]*)=("(?:[^"\\]|\\.)*"|\S*)`)

// repeatedKeys is the keys a log line holds more than once.
func repeatedKeys(line string) []string {
	seen := map[string]int{}
	var out []string
	for _, m := range logAttrRE.FindAllStringSubmatch(line, -1) {
		if seen[m[1]]++; seen[m[1]] == 2 {
			out = append(out, m[1])
		}
	}
	return out
}

// TestBrokerLogAttributes: no line of the broker's log names the same
// attribute twice (a logger With'd twice, as component=metadata
// component=metadata and listener=CONTROLLER listener=CONTROLLER were).
// The broker runs at debug level, through topic, produce, group and
// delete traffic and a clean shutdown, to log from as many places as it
// can.
func TestBrokerLogAttributes(t *testing.T) {
	cmd := exec.Command(harness.Bin(), "serve", "--log-level=debug",
		"--override", "log.dirs="+t.TempDir(),
		"--override", "listeners=PLAINTEXT://127.0.0.1:0,CONTROLLER://127.0.0.1:0")
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	var (
		mu     sync.Mutex
		logged bytes.Buffer
	)
	started := make(chan string, 1)
	exited := make(chan struct{})
	go func() {
		defer close(exited)
		sc := bufio.NewScanner(stderr)
		sc.Buffer(make([]byte, 64<<10), 1<<20)
		for sc.Scan() {
			mu.Lock()
			logged.WriteString(sc.Text() + "\n")
			mu.Unlock()
			if m := regexp.MustCompile(`weir started.* listener\.PLAINTEXT=(\S+)`).FindStringSubmatch(sc.Text()); m != nil {
				started <- m[1]
			}
		}
		cmd.Wait()
	}()
	stop := func(sig syscall.Signal) {
		cmd.Process.Signal(sig)
		select {
		case <-exited:
		case <-time.After(60 * time.Second):
			cmd.Process.Kill()
			<-exited
			t.Errorf("broker did not exit on %v within 60s", sig)
		}
	}
	t.Cleanup(func() { stop(syscall.SIGKILL) })

	var bs string
	select {
	case addr := <-started:
		bs = "--bootstrap-server=" + addr
	case <-exited:
		t.Fatalf("broker exited before it started:\n%s", logged.String())
	case <-time.After(60 * time.Second):
		t.Fatal("broker did not start within 60s")
	}
	ok(t, "", "topic", "create", "logs", "--partitions=2", bs)
	ok(t, "a\nb\nc\n", "produce", "logs", bs)
	ok(t, "", "consume", "logs", "--group=g", "--from-beginning", "--max-messages=3", "--timeout=60s", bs)
	ok(t, "", "group", "describe", "g", bs)
	ok(t, "", "topic", "delete", "logs", bs)
	failsFast(t, "", []string{"topic", "create", "bad", "--config=cleanup.policy=x", bs})
	stop(syscall.SIGTERM)

	mu.Lock()
	defer mu.Unlock()
	n := 0
	for _, line := range strings.Split(logged.String(), "\n") {
		if keys := repeatedKeys(line); len(keys) > 0 {
			t.Errorf("attributes %q repeated in: %s", keys, line)
		}
		if strings.Contains(line, "level=DEBUG") {
			n++
		}
	}
	if n == 0 {
		t.Errorf("no debug line logged: --log-level=debug did not take")
	}
}
