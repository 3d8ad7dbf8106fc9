// Package cli_test drives the weir command-line client (topic, produce,
// consume, bench) as a subprocess against a real broker, and checks what it
// did with independent clients (franz-go, kadm, kcat).
package cli_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os/exec"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/weir-project/weir/test/harness"
)

func TestMain(m *testing.M) { harness.Main(m) }

// Generous bounds: the machine is slow and shared, and both the broker and
// the CLI run with the race detector.
const (
	opTimeout  = 60 * time.Second
	cmdTimeout = 90 * time.Second
)

// result is what one run of the weir binary did.
type result struct {
	stdout, stderr string
	code           int
	elapsed        time.Duration
}

// weir runs the binary with args and stdin, bounded by cmdTimeout so a
// hanging command fails the test instead of the suite.
func weir(t *testing.T, stdin string, args ...string) result {
	t.Helper()
	return run(t, stdin, harness.Bin(), args...)
}

// run runs any program the same way (kcat too).
func run(t *testing.T, stdin, name string, args ...string) result {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), cmdTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.WaitDelay = 5 * time.Second
	cmd.Stdin = strings.NewReader(stdin)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	start := time.Now()
	err := cmd.Run()
	r := result{stdout: out.String(), stderr: errb.String(), elapsed: time.Since(start)}
	if ctx.Err() != nil {
		t.Fatalf("%s %q did not finish within %s\nstdout:\n%s\nstderr:\n%s", name, args, cmdTimeout, r.stdout, r.stderr)
	}
	var exit *exec.ExitError
	switch {
	case errors.As(err, &exit):
		r.code = exit.ExitCode()
	case err != nil:
		t.Fatalf("run %s %q: %v", name, args, err)
	}
	return r
}

// ok runs weir and fails the test unless it exits 0.
func ok(t *testing.T, stdin string, args ...string) result {
	t.Helper()
	r := weir(t, stdin, args...)
	if r.code != 0 {
		t.Fatalf("weir %q: exit %d\nstdout:\n%s\nstderr:\n%s", args, r.code, r.stdout, r.stderr)
	}
	return r
}

// failsWith runs weir expecting a non-zero exit and a single stderr line
// "weir: ..." that contains every one of want; it returns that line.
func failsWith(t *testing.T, stdin string, args []string, want ...string) string {
	t.Helper()
	r := weir(t, stdin, args...)
	if r.code == 0 {
		t.Fatalf("weir %q: exit 0, want failure\nstdout:\n%s\nstderr:\n%s", args, r.stdout, r.stderr)
	}
	line := strings.TrimSuffix(r.stderr, "\n")
	if line == "" || strings.Contains(line, "\n") || !strings.HasPrefix(line, "weir: ") {
		t.Fatalf("weir %q: stderr is not one \"weir: ...\" line:\n%s", args, r.stderr)
	}
	for _, w := range want {
		if !strings.Contains(line, w) {
			t.Errorf("weir %q: error %q does not mention %q", args, line, w)
		}
	}
	return line
}

// lines splits output into its lines, without the final empty one.
func lines(s string) []string {
	s = strings.TrimSuffix(s, "\n")
	if s == "" {
		return nil
	}
	return strings.Split(s, "\n")
}

func newAdmin(t *testing.T, b *harness.Broker) *kadm.Client {
	t.Helper()
	return kadm.NewClient(b.Client())
}

// createTopic creates a topic through kadm, independently of the CLI.
func createTopic(t *testing.T, adm *kadm.Client, name string, partitions int32) {
	t.Helper()
	resp, err := adm.CreateTopic(harness.Ctx(t, opTimeout), partitions, 1, nil, name)
	if err == nil {
		err = resp.Err
	}
	if err != nil {
		t.Fatalf("create topic %s: %v", name, err)
	}
}

// endOffsets is the end offset of every partition of topic, by kadm.
func endOffsets(t *testing.T, adm *kadm.Client, topic string) map[int32]int64 {
	t.Helper()
	lo, err := adm.ListEndOffsets(harness.Ctx(t, opTimeout), topic)
	if err != nil {
		t.Fatalf("list end offsets of %s: %v", topic, err)
	}
	out := map[int32]int64{}
	lo.Each(func(o kadm.ListedOffset) {
		if o.Err != nil {
			t.Fatalf("end offset of %s[%d]: %v", topic, o.Partition, o.Err)
		}
		out[o.Partition] = o.Offset
	})
	return out
}

func sum(m map[int32]int64) int64 {
	var n int64
	for _, v := range m {
		n += v
	}
	return n
}

// consumeAll reads n records of topic from the start with a fresh franz-go
// client, failing the test if they do not arrive in time or more arrive.
func consumeAll(t *testing.T, b *harness.Broker, topic string, n int) []*kgo.Record {
	t.Helper()
	cl := b.Client(kgo.ConsumeTopics(topic), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
		kgo.FetchMaxWait(200*time.Millisecond))
	defer cl.Close()
	ctx := harness.Ctx(t, opTimeout)
	var recs []*kgo.Record
	for len(recs) < n {
		fs := cl.PollFetches(ctx)
		if ctx.Err() != nil {
			t.Fatalf("consume %s: got %d of %d records within %s", topic, len(recs), n, opTimeout)
		}
		fs.EachError(func(tp string, p int32, err error) { t.Logf("fetch %s[%d]: %v", tp, p, err) })
		recs = append(recs, fs.Records()...)
	}
	if len(recs) > n {
		t.Fatalf("consume %s: got %d records, want %d", topic, len(recs), n)
	}
	slices.SortFunc(recs, func(a, b *kgo.Record) int {
		if a.Partition != b.Partition {
			return int(a.Partition - b.Partition)
		}
		return int(a.Offset - b.Offset)
	})
	return recs
}

// javaPartition is where Java's default partitioner puts a keyed record.
func javaPartition(key string, partitions int32) int32 {
	return harness.JavaPartition([]byte(key), partitions)
}

func bootstrap(b *harness.Broker) string { return "--bootstrap-server=" + b.Addr }

func fmtHeaders(hs []kgo.RecordHeader) string {
	var parts []string
	for _, h := range hs {
		parts = append(parts, fmt.Sprintf("%s=%s", h.Key, h.Value))
	}
	return strings.Join(parts, ",")
}
