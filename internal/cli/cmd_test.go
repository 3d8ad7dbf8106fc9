package cli

import (
	"bytes"
	"context"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/spf13/cobra"
	"github.com/twmb/franz-go/pkg/kgo"
)

// runCLI runs the client commands under a throwaway root, as cmd/weir
// would, and returns what they printed.
func runCLI(t *testing.T, stdin string, args ...string) (stdout, stderr string, err error) {
	t.Helper()
	root := &cobra.Command{Use: "weir", SilenceErrors: true}
	root.AddCommand(Commands()...)
	var out, errOut bytes.Buffer
	root.SetOut(&out)
	root.SetErr(&errOut)
	root.SetIn(strings.NewReader(stdin))
	root.SetArgs(args)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	err = root.ExecuteContext(ctx)
	return out.String(), errOut.String(), err
}

func TestCommandsPresent(t *testing.T) {
	names := map[string]bool{}
	for _, c := range Commands() {
		names[c.Name()] = true
		if c.Name() == "consume" || c.Name() == "produce" {
			for _, f := range []string{"bootstrap-server", "client-id", "request-timeout", "connect-timeout"} {
				if c.Flags().Lookup(f) == nil {
					t.Errorf("%s has no --%s", c.Name(), f)
				}
			}
		}
	}
	for _, want := range []string{"topic", "produce", "consume", "bench"} {
		if !names[want] {
			t.Errorf("missing command %q", want)
		}
	}
}

// TestFlagValidation runs commands with bad flags against a bootstrap
// server nobody could reach: each must fail on the flag, before any
// network, with the flag named in one line.
func TestFlagValidation(t *testing.T) {
	nowhere := "--bootstrap-server=192.0.2.1:9"
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"produce", "t", "--acks", "2", nowhere}, "--acks"},
		{[]string{"produce", "t", "--compression", "brotli", nowhere}, "--compression"},
		{[]string{"produce", "t", "--partitioner", "random", nowhere}, "--partitioner"},
		{[]string{"produce", "t", "--header", "nokv", nowhere}, "--header"},
		{[]string{"produce", "t", "--partition", "1", "--partitioner", "round-robin", nowhere}, "exclude"},
		{[]string{"produce", "t", "--idempotent", "--acks", "1", nowhere}, "--idempotent"},
		{[]string{"produce", "t", "--bootstrap-server", "localhost"}, "host:port"},
		{[]string{"produce", "t", "--bootstrap-server", " , "}, "no broker"},
		{[]string{"produce", "t", "--request-timeout", "0s", nowhere}, "--request-timeout"},
		{[]string{"consume", "t", "--connect-timeout", "0s", nowhere}, "--connect-timeout"},
		{[]string{"consume", "t", "--format", "avro", nowhere}, "--format"},
		{[]string{"consume", "t", "--offset", "5", nowhere}, "--partition"},
		{[]string{"consume", "t", "--from-beginning", "--from-time", "0", nowhere}, "exclude"},
		{[]string{"consume", "t", "--from-time", "yesterday", nowhere}, "--from-time"},
		{[]string{"consume", "t", "--partition", "1,1", nowhere}, "twice"},
		{[]string{"consume", "t", "--partition", "-3", nowhere}, "--partition"},
		{[]string{"consume", "t", "--max-messages", "-1", nowhere}, "--max-messages"},
		{[]string{"topic", "create", "x", "--partitions", "0", nowhere}, "--partitions"},
		{[]string{"topic", "create", "x", "--replication-factor", "-2", nowhere}, "--replication-factor"},
		{[]string{"topic", "create", "x", "--config", "retention.ms", nowhere}, "--config"},
		{[]string{"topic", "alter-config", "x", nowhere}, "nothing to do"},
		{[]string{"topic", "alter-config", "x", "--set", "a=1", "--delete", "a", nowhere}, "twice"},
		{[]string{"bench", "produce", "--num-records", "10", nowhere}, "--topic"},
		{[]string{"bench", "produce", "--topic", "t", nowhere}, "--num-records"},
		{[]string{"bench", "produce", "--topic", "t", "--num-records", "1", "--acks", "x", nowhere}, "--acks"},
		{[]string{"bench", "produce", "--topic", "t", "--num-records", "1", "--acks", "1", "--max-in-flight", "0", nowhere}, "--max-in-flight"},
		{[]string{"bench", "produce", "--topic", "t", "--num-records", "1", "--max-in-flight", "1", nowhere}, "--max-in-flight"},
		{[]string{"bench", "produce", "--topic", "t", "--num-records", "1", "--max-in-flight", "6", nowhere}, "--max-in-flight"},
		{[]string{"bench", "consume", "--topic", "t", nowhere}, "--num-records"},
		{[]string{"bench", "consume", "--topic", "t", "--num-records", "1", "--timeout", "0s", nowhere}, "--timeout"},
	} {
		start := time.Now()
		_, _, err := runCLI(t, "", tc.args...)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%q: error %v, want one mentioning %q", tc.args, err, tc.want)
			continue
		}
		if strings.Contains(err.Error(), "\n") {
			t.Errorf("%q: error spans lines: %q", tc.args, err)
		}
		if el := time.Since(start); el > 5*time.Second {
			t.Errorf("%q: took %v; validation must not touch the network", tc.args, el)
		}
	}
}

func TestArgCounts(t *testing.T) {
	for _, args := range [][]string{
		{"produce"},
		{"produce", "a", "b"},
		{"consume"},
		{"topic", "create"},
		{"topic", "delete"},
		{"topic", "alter-config"},
	} {
		if _, _, err := runCLI(t, "", args...); err == nil {
			t.Errorf("%q: want an argument error", args)
		}
	}
}

// deadBroker returns a loopback address where nothing listens.
func deadBroker(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	return addr
}

// noBroker checks err is the one line that says no broker answered at
// addr, and that it came at once (a refused connection needs no wait).
func noBroker(t *testing.T, err error, addr string, took time.Duration) {
	t.Helper()
	want := "no broker reachable at " + addr + ": "
	if err == nil || !strings.HasPrefix(err.Error(), want) || !strings.Contains(err.Error(), "refused") ||
		strings.Contains(err.Error(), "\n") {
		t.Errorf("got %v, want one line starting %q", err, want)
	}
	if took > 15*time.Second {
		t.Errorf("took %v to find that nothing listens", took)
	}
}

// With no broker, admin commands fail at once with one line saying so.
func TestTopicListNoBroker(t *testing.T) {
	addr, start := deadBroker(t), time.Now()
	_, _, err := runCLI(t, "", "topic", "list", "--bootstrap-server", addr)
	noBroker(t, err, addr, time.Since(start))
}

// With no broker, produce fails before reading a line, not after the
// delivery timeout, and tells it once.
func TestProduceNoBroker(t *testing.T) {
	addr, start := deadBroker(t), time.Now()
	_, stderr, err := runCLI(t, "a\nb\nc\n", "produce", "t", "--bootstrap-server", addr)
	noBroker(t, err, addr, time.Since(start))
	if stderr != "" {
		t.Errorf("stderr %q besides the error", stderr)
	}
}

// A line without the key separator stops the producer with the line
// number (before any record is sent: the client needs no broker).
func TestProduceMissingKeySeparator(t *testing.T) {
	o := &produceOptions{topic: "t", keySep: ":", client: clientFlags{requestTimeout: time.Second}}
	cl, err := kgo.NewClient(kgo.SeedBrokers(deadBroker(t)))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	var out, errOut bytes.Buffer
	err = runProduce(context.Background(), cl, o, nil, strings.NewReader("nokey\n"), &out, &errOut)
	if err == nil || !strings.Contains(err.Error(), `line 1: no key separator ":"`) {
		t.Fatalf("got %v, want a missing separator error for line 1", err)
	}
}

// consume without a broker is an error at once, --timeout or not.
func TestConsumeNoBroker(t *testing.T) {
	for _, extra := range [][]string{nil, {"--timeout", "500ms"}} {
		addr, start := deadBroker(t), time.Now()
		stdout, stderr, err := runCLI(t, "", append([]string{"consume", "t", "--bootstrap-server", addr}, extra...)...)
		noBroker(t, err, addr, time.Since(start))
		if stdout != "" || stderr != "" {
			t.Errorf("%q: stdout %q stderr %q besides the error", extra, stdout, stderr)
		}
	}
}

// bench consume without a broker fails at once, before its idle timeout.
func TestBenchConsumeNoBroker(t *testing.T) {
	addr, start := deadBroker(t), time.Now()
	stdout, _, err := runCLI(t, "", "bench", "consume", "--topic", "t", "--num-records", "5",
		"--bootstrap-server", addr, "--timeout", "1m")
	noBroker(t, err, addr, time.Since(start))
	if stdout != "" {
		t.Errorf("stdout %q", stdout)
	}
}
