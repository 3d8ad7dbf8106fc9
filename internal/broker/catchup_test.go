package broker

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// TestCommitProbeCoalesces: one probe is out at a time; callers arriving
// while it is out share the next one, which starts after they arrived,
// so none of them gets a commit index read before its call.
func TestCommitProbeCoalesces(t *testing.T) {
	var calls atomic.Int64
	started := make(chan uint64, 4)
	release := make(chan struct{})
	p := &commitProbe{ask: func(context.Context) (uint64, error) {
		n := uint64(calls.Add(1))
		started <- n
		<-release
		return n * 100, nil
	}}
	ctx := context.Background()
	first := make(chan uint64, 1)
	go func() {
		v, err := p.get(ctx)
		if err != nil {
			t.Error(err)
		}
		first <- v
	}()
	if n := <-started; n != 1 {
		t.Fatalf("first probe is call %d", n)
	}
	// Three callers arrive while probe 1 is out.
	var wg sync.WaitGroup
	later := make([]uint64, 3)
	for i := range later {
		wg.Go(func() {
			v, err := p.get(ctx)
			if err != nil {
				t.Error(err)
			}
			later[i] = v
		})
	}
	waitFor(t, func() bool {
		p.mu.Lock()
		defer p.mu.Unlock()
		return p.pending != nil && p.pending.callers == 3
	})
	release <- struct{}{}
	if v := <-first; v != 100 {
		t.Fatalf("first caller got %d, want probe 1's 100", v)
	}
	if n := <-started; n != 2 {
		t.Fatalf("second probe is call %d", n)
	}
	release <- struct{}{}
	wg.Wait()
	for i, v := range later {
		if v != 200 {
			t.Errorf("caller %d arriving during probe 1 got %d, want probe 2's 200", i, v)
		}
	}
	if n := calls.Load(); n != 2 {
		t.Fatalf("%d probes for 4 callers in two waves, want 2", n)
	}
	// Idle again: a new caller starts a new probe.
	go func() { <-started; release <- struct{}{} }()
	if v, _ := p.get(ctx); v != 300 {
		t.Fatalf("caller after the waves got %d, want 300", v)
	}
}

// TestCommitProbeCallerGivesUp: a caller's context ends its wait, not the
// shared probe.
func TestCommitProbeCallerGivesUp(t *testing.T) {
	release := make(chan struct{})
	p := &commitProbe{ask: func(context.Context) (uint64, error) { <-release; return 7, nil }}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel()
	if _, err := p.get(ctx); err == nil {
		t.Fatal("get returned before the probe answered or the context ended")
	}
	close(release)
	if v, err := p.get(context.Background()); err != nil || v != 7 {
		t.Fatalf("after the slow probe: %d, %v", v, err)
	}
}

func TestReconciledIndex(t *testing.T) {
	var r reconciledIndex
	v, ch := r.next()
	if v != 0 {
		t.Fatalf("start at %d", v)
	}
	if r.Advance(0) {
		t.Fatal("advanced to the same index")
	}
	select {
	case <-ch:
		t.Fatal("woken without a change")
	default:
	}
	if !r.Advance(5) || r.Load() != 5 {
		t.Fatal("no advance to 5")
	}
	<-ch // closed by the advance
	if r.Advance(3) || r.Load() != 5 {
		t.Fatal("went back to 3")
	}
	_, ch = r.next()
	r.Advance(6)
	<-ch
}

func waitFor(t *testing.T, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatal("condition not met in 10 s")
		}
		time.Sleep(time.Millisecond)
	}
}
