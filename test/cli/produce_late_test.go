package cli_test

import (
	"bytes"
	"context"
	"errors"
	"io"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/weir-project/weir/test/harness"
)

// TestProduceLateLineToUnknownTopic: a line read after the records before
// it already failed for a topic that does not exist fails as fast as they
// did. kgo gives such a record a fresh wait, retried at its metadata
// minimum age, and at kgo's default (5 s) it failed only after 20 s.
// The same slow path was taken at random when a later line was produced
// before kgo's metadata loop picked up the first line's urgent trigger.
func TestProduceLateLineToUnknownTopic(t *testing.T) {
	b := harness.StartBroker(t, "auto.create.topics.enable=false", harness.MetricsListener)
	before := metadataRequests(t, b)

	ctx, cancel := context.WithTimeout(context.Background(), cmdTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, harness.Bin(), "produce", "nosuch", bootstrap(b))
	cmd.WaitDelay = 5 * time.Second
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	var waitErr error
	exited := make(chan struct{})
	go func() { waitErr = cmd.Wait(); close(exited) }()
	defer func() { cancel(); <-exited }() // stopped by PID (CommandContext) if the test ends early

	if _, err := io.WriteString(stdin, "a\n"); err != nil {
		t.Fatal(err)
	}
	// kgo fails line 1 at the 5th UNKNOWN_TOPIC_OR_PARTITION answer, asks
	// 8 times in quick succession in all, then keeps asking at its minimum
	// age. Past 10 requests (a couple are the client's own first ones)
	// line 1 has failed.
	harness.WaitFor(t, time.Minute, "line 1's metadata retries", func() bool {
		return metadataRequests(t, b)-before >= 10
	})
	if _, err := io.WriteString(stdin, "b\n"); err != nil {
		t.Fatal(err)
	}
	stdin.Close()
	start := time.Now()
	<-exited
	elapsed := time.Since(start)
	var exit *exec.ExitError
	if !errors.As(waitErr, &exit) {
		t.Fatalf("produce: %v, want a failure; stderr %q", waitErr, errb.String())
	}
	want := "weir: produce to \"nosuch\": 2 of 2 records failed, the first (line 1): UNKNOWN_TOPIC_OR_PARTITION"
	if !strings.HasPrefix(errb.String(), want) || out.String() != "" {
		t.Errorf("produce printed %q, stderr %q; want stderr %q...", out.String(), errb.String(), want)
	}
	if elapsed > failFast {
		t.Errorf("line 2 took %s to fail, want under %s", elapsed, failFast)
	}
}

// metadataRequests is how many Metadata requests the broker has answered.
func metadataRequests(t *testing.T, b *harness.Broker) int {
	t.Helper()
	return int(harness.ScrapeMetrics(t, b.MetricsURL).Sum("kafka_network_requestmetrics_requests_total",
		map[string]string{"request": "Metadata"}))
}
