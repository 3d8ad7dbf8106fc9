package cli

import (
	"context"
	"fmt"
	"io"
	"sync"
	"time"

	"github.com/spf13/cobra"
)

// mib is what Kafka's perf tools call a MB.
const mib = 1024 * 1024

func newBenchCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "bench",
		Short: "Measure produce and consume throughput and latency",
		Args:  cobra.NoArgs,
	}
	cmd.AddCommand(newBenchProduceCmd(), newBenchConsumeCmd())
	return cmd
}

// throttle paces a producer to a target rate like Kafka's
// ThroughputThrottler: it sleeps only once it is at least a millisecond
// ahead, so fast rates are met in small bursts instead of one tiny sleep
// per record.
type throttle struct {
	perSec float64 // <= 0: unlimited
	start  time.Time
}

const throttleSlack = time.Millisecond

// wait blocks until sending record number sent (from 0) is on schedule.
func (t throttle) wait(ctx context.Context, sent int64) error {
	if t.perSec <= 0 {
		return nil
	}
	due := t.start.Add(time.Duration(float64(sent) / t.perSec * float64(time.Second)))
	ahead := time.Until(due)
	if ahead < throttleSlack {
		return nil
	}
	timer := time.NewTimer(ahead)
	defer timer.Stop()
	select {
	case <-timer.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// ticker calls fn every interval until stop is called; stop waits for a
// running fn to finish so the final report never interleaves with it.
func ticker(interval time.Duration, fn func()) (stop func()) {
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		t := time.NewTicker(interval)
		defer t.Stop()
		for {
			select {
			case <-t.C:
				fn()
			case <-done:
				return
			}
		}
	}()
	return func() {
		close(done)
		wg.Wait()
	}
}

// rate returns n per second over d, 0 for an empty interval.
func rate(n float64, d time.Duration) float64 {
	if d <= 0 {
		return 0
	}
	return n / d.Seconds()
}

// writeLine prints a report line; a failed write of a report is not worth
// failing the benchmark for.
func writeLine(w io.Writer, format string, args ...any) {
	_, _ = fmt.Fprintf(w, format+"\n", args...)
}
