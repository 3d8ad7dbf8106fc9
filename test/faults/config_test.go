package faults

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/weir-project/weir/test/harness"
)

// TestInvalidConfigRefusesToStart runs the binary with one bad value at a
// time: it must exit non-zero, without starting, naming the key.
func TestInvalidConfigRefusesToStart(t *testing.T) {
	for _, tc := range []struct{ key, value string }{
		{"log.segment.bytes", "abc"},
		{"log.segment.bytes", "1"}, // below Kafka's minimum of 14
		{"message.max.bytes", "-5"},
		{"log.retention.hours", "1.5h"},
		{"num.partitions", "0"},
		{"auto.create.topics.enable", "maybe"},
		{"socket.request.max.bytes", "99999999999999"},
		{"log.index.interval.bytes", ""},
	} {
		t.Run(tc.key+"="+tc.value, func(t *testing.T) {
			out, err := runServe(t, "--override", tc.key+"="+tc.value)
			assertRefused(t, err, out, tc.key)
		})
	}

	t.Run("invalid value in server.properties", func(t *testing.T) {
		props := filepath.Join(t.TempDir(), "server.properties")
		if err := os.WriteFile(props, []byte("# test\nlog.segment.bytes=abc\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		out, err := runServe(t, props)
		assertRefused(t, err, out, "log.segment.bytes")
	})
}

// TestUnknownConfigKeyOnlyWarns: Kafka ignores keys it does not know (they
// may belong to plugins); so do we, with a warning naming the key.
func TestUnknownConfigKeyOnlyWarns(t *testing.T) {
	b := harness.StartBroker(t, "no.such.weir.key=42")
	var warned bool
	for _, line := range strings.Split(b.Output(), "\n") {
		if strings.Contains(line, "level=WARN") && strings.Contains(line, "no.such.weir.key") {
			warned = true
		}
	}
	if !warned {
		t.Errorf("no warning naming the unknown key:\n%s", b.Output())
	}
	assertServes(t, b)
}

// runServe runs `weir serve` on loopback ports with a fresh data dir plus
// args, returning its output once it exits. A broker that starts despite
// the bad input is killed when the deadline passes, failing the test.
func runServe(t *testing.T, args ...string) (string, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), opTimeout)
	defer cancel()
	all := append([]string{"serve",
		"--override", "log.dirs=" + t.TempDir(),
		"--override", "listeners=PLAINTEXT://127.0.0.1:0,CONTROLLER://127.0.0.1:0",
	}, args...)
	cmd := exec.CommandContext(ctx, harness.Bin(), all...)
	out, err := cmd.CombinedOutput()
	if ctx.Err() != nil {
		t.Fatalf("weir %v did not exit within %s (it should refuse to start):\n%s", args, opTimeout, out)
	}
	return string(out), err
}

func assertRefused(t *testing.T, err error, out, key string) {
	t.Helper()
	var exit *exec.ExitError
	switch {
	case err == nil:
		t.Fatalf("weir exited 0 with a bad %s:\n%s", key, out)
	case !errors.As(err, &exit):
		t.Fatalf("run weir: %v", err)
	}
	if strings.Contains(out, "weir started") {
		t.Errorf("weir started before refusing the bad %s:\n%s", key, out)
	}
	if !strings.Contains(out, key) {
		t.Errorf("exit %d, but the message does not name %s:\n%s", exit.ExitCode(), key, out)
	}
}
