package cli

import (
	"bytes"
	"context"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/spf13/cobra"
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
			for _, f := range []string{"bootstrap-server", "client-id", "request-timeout"} {
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

// With no broker, admin commands give up after --request-timeout with one
// line saying what failed.
func TestTopicListNoBroker(t *testing.T) {
	_, _, err := runCLI(t, "", "topic", "list", "--bootstrap-server", deadBroker(t), "--request-timeout", "1s")
	if err == nil || !strings.HasPrefix(err.Error(), "list topics: ") || strings.Contains(err.Error(), "\n") {
		t.Fatalf("got %v, want a one-line list topics error", err)
	}
}

// With no broker, every record fails after the delivery timeout and
// produce says how many failed.
func TestProduceNoBroker(t *testing.T) {
	_, stderr, err := runCLI(t, "a\nb\nc\n", "produce", "t", "--bootstrap-server", deadBroker(t), "--request-timeout", "1s")
	if err == nil || !strings.Contains(err.Error(), `produce to "t": 3 of 3 records failed`) {
		t.Fatalf("got %v, want 3 of 3 records failed", err)
	}
	if !strings.Contains(stderr, "line 1: ") {
		t.Errorf("stderr %q does not name the failed line", stderr)
	}
}

// A line without the key separator stops the producer with the line number.
func TestProduceMissingKeySeparator(t *testing.T) {
	_, _, err := runCLI(t, "nokey\n", "produce", "t", "--key-separator", ":",
		"--bootstrap-server", deadBroker(t), "--request-timeout", "1s")
	if err == nil || !strings.Contains(err.Error(), `line 1: no key separator ":"`) {
		t.Fatalf("got %v, want a missing separator error for line 1", err)
	}
}

// consume with --timeout stops by itself when nothing arrives, reports
// the total, and is not an error.
func TestConsumeIdleTimeoutNoBroker(t *testing.T) {
	start := time.Now()
	stdout, stderr, err := runCLI(t, "", "consume", "t", "--bootstrap-server", deadBroker(t), "--timeout", "500ms")
	if err != nil {
		t.Fatalf("consume: %v", err)
	}
	if stdout != "" || !strings.Contains(stderr, "Processed a total of 0 messages") {
		t.Errorf("stdout %q stderr %q", stdout, stderr)
	}
	if el := time.Since(start); el > 30*time.Second {
		t.Errorf("idle timeout of 500ms took %v", el)
	}
}

// bench consume without records fails after its idle timeout, still
// printing its summary line.
func TestBenchConsumeNoBroker(t *testing.T) {
	stdout, _, err := runCLI(t, "", "bench", "consume", "--topic", "t", "--num-records", "5",
		"--bootstrap-server", deadBroker(t), "--timeout", "500ms")
	if err == nil || !strings.Contains(err.Error(), "0 of 5 records") {
		t.Fatalf("got %v, want 0 of 5 records", err)
	}
	if !strings.HasPrefix(stdout, "0 records consumed, 0.00 MB") {
		t.Errorf("summary %q", stdout)
	}
}
