package harness

import (
	"bytes"
	"context"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
)

// RunCLI runs the weir binary's client command args against b and returns
// its stdout; a failure (or a minute without finishing) fails the test.
func RunCLI(t testing.TB, b *Broker, args ...string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	args = append(args, "--bootstrap-server", b.Addr)
	cmd := exec.CommandContext(ctx, Bin(), args...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("weir %s: %v\n%s%s", strings.Join(args, " "), err, stdout.String(), stderr.String())
	}
	return stdout.String()
}

// Committed is group g's committed offsets of topic, by partition.
func Committed(t testing.TB, adm *kadm.Client, g, topic string) map[int32]int64 {
	t.Helper()
	resp, err := adm.FetchOffsets(Ctx(t, 60*time.Second), g)
	if err == nil {
		err = resp.Error()
	}
	if err != nil {
		t.Fatalf("fetch offsets of %s: %v", g, err)
	}
	out := map[int32]int64{}
	for p, o := range resp[topic] {
		out[p] = o.At
	}
	return out
}
