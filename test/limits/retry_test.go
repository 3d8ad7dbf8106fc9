package limits

import (
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/weir-project/weir/test/harness"
)

// TestFailedPartitionOpenIsRetried: a partition whose log cannot be opened
// (here: a file where its directory belongs) comes up by itself soon after
// the cause is removed, with no metadata change to prompt it, and the
// broker says so once when it starts failing and once when it recovers.
func TestFailedPartitionOpenIsRetried(t *testing.T) {
	b, _ := startBroker(t)
	c := b.Dial()
	mustCreate(t, c, "retry", 1)
	unblock := block(t, b, "retry", 1)
	off := len(b.Output())
	// The new partition exists once the controller recorded it, as in
	// Kafka; its replica cannot be opened yet.
	if code := createPartitions(c, false, "retry", 2).ErrorCode; code != 0 {
		t.Errorf("grow with a blocked partition: %v, want NONE", kerr.ErrorForCode(code))
	}
	expectCode(t, "produce to the blocked partition", produceOne(t, c, "retry", 1).ErrorCode, kerr.LeaderNotAvailable)
	harness.WaitFor(t, opTimeout, "the failure logged", func() bool {
		out, _ := b.OutputSince(off)
		return strings.Contains(out, "retrying with backoff")
	})

	// Only raw Produce and Metadata (which creates nothing) from here on:
	// nothing changes the metadata, so only the retry can open it.
	unblock()
	start := time.Now()
	harness.WaitFor(t, 15*time.Second, "the partition up without a metadata change", func() bool {
		return produceOne(t, c, "retry", 1).ErrorCode == 0
	})
	t.Logf("partition up %s after its directory was freed", time.Since(start).Round(time.Millisecond))
	harness.WaitFor(t, opTimeout, "the recovery logged", func() bool {
		out, _ := b.OutputSince(off)
		return strings.Contains(out, "in line with the metadata again")
	})
	out, _ := b.OutputSince(off)
	if n := strings.Count(out, "retrying with backoff"); n != 1 {
		t.Fatalf("failure logged %d times, want once per streak:\n%s", n, out)
	}
	expectCode(t, "produce to the first partition", produceOne(t, c, "retry", 0).ErrorCode, nil)
}
