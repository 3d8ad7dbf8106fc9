package cli

import (
	"bytes"
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"
)

func TestThrottle(t *testing.T) {
	cancelled, cancel := context.WithCancel(context.Background())
	cancel()
	// Unlimited never waits, even with a dead context.
	if err := (throttle{perSec: -1, start: time.Now()}).wait(cancelled, 1e9); err != nil {
		t.Errorf("unlimited: %v", err)
	}
	th := throttle{perSec: 100, start: time.Now()}
	// Record 0 is due at the start: no wait.
	if err := th.wait(cancelled, 0); err != nil {
		t.Errorf("record 0: %v", err)
	}
	// Record 1000 at 100/s is due 10s in: it must want to wait, which a
	// cancelled context turns into an error.
	if err := th.wait(cancelled, 1000); !errors.Is(err, context.Canceled) {
		t.Errorf("record 1000: %v, want it to wait", err)
	}
	// Behind schedule: no wait.
	late := throttle{perSec: 100, start: time.Now().Add(-time.Hour)}
	if err := late.wait(cancelled, 1000); err != nil {
		t.Errorf("behind schedule: %v", err)
	}
}

func TestProduceStatsLines(t *testing.T) {
	t0 := time.Unix(1000, 0)
	st := &produceStats{start: t0, windowStart: t0}
	for i := 1; i <= 100; i++ {
		st.done(time.Duration(i)*time.Millisecond, 1024, nil)
	}
	st.done(time.Second, 1024, errors.New("boom")) // failures are not latencies
	var out bytes.Buffer
	st.progress(&out, t0.Add(2*time.Second))
	if want := "100 records sent, 50.0 records/sec (0.05 MB/sec), 50.50 ms avg latency, 100.00 ms max latency.\n"; out.String() != want {
		t.Errorf("progress %q, want %q", out.String(), want)
	}
	out.Reset()
	for i := 0; i < 100; i++ {
		st.done(time.Millisecond, 1024, nil)
	}
	st.final(&out, t0.Add(4*time.Second))
	// Exact nearest-rank percentiles are 1, 90, 98 and 100 ms; the
	// histogram reports its bucket middles, within 1/128 of those.
	want := "200 records sent, 50.0 records/sec (0.05 MB/sec), 25.75 ms avg latency, 100.00 ms max latency, " +
		"1.00 ms 50th, 89.60 ms 95th, 97.79 ms 99th, 99.84 ms 99.9th.\n"
	if out.String() != want {
		t.Errorf("final %q, want %q", out.String(), want)
	}
	if st.failed != 1 || st.firstErr == nil {
		t.Errorf("failed %d, first %v", st.failed, st.firstErr)
	}
}

func TestConsumeStatsLines(t *testing.T) {
	t0 := time.Unix(1000, 0)
	st := &consumeStats{start: t0, windowStart: t0}
	st.add(1000, 1000*mib/100)
	var out bytes.Buffer
	st.progress(&out, t0.Add(time.Second))
	if want := "1000 records consumed, 1000.0 records/sec (10.00 MB/sec).\n"; out.String() != want {
		t.Errorf("progress %q, want %q", out.String(), want)
	}
	out.Reset()
	st.add(1000, 1000*mib/100)
	st.final(&out, t0.Add(4*time.Second))
	if want := "2000 records consumed, 20.00 MB, 5.00 MB/sec, 500.0 records/sec, 4.000 s elapsed.\n"; out.String() != want {
		t.Errorf("final %q, want %q", out.String(), want)
	}
}

func TestTickerStopWaits(t *testing.T) {
	var calls atomic.Int64
	stop := ticker(time.Millisecond, func() { calls.Add(1) })
	deadline := time.Now().Add(30 * time.Second)
	for calls.Load() < 3 && time.Now().Before(deadline) {
		time.Sleep(time.Millisecond)
	}
	stop()
	after := calls.Load()
	if after < 3 {
		t.Fatalf("ticker ran %d times", after)
	}
	// After stop returns, fn never runs again.
	time.Sleep(20 * time.Millisecond)
	if calls.Load() != after {
		t.Error("ticker fired after stop")
	}
}

func TestBenchPayload(t *testing.T) {
	p := benchPayload(4096, 7)
	if len(p) != 4096 {
		t.Fatalf("len %d", len(p))
	}
	seen := map[byte]bool{}
	for _, c := range p {
		if c < 'A' || c > 'Z' {
			t.Fatalf("byte %q outside A-Z", c)
		}
		seen[c] = true
	}
	if len(seen) < 20 {
		t.Errorf("only %d distinct letters: not random", len(seen))
	}
}
