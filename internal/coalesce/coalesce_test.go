package coalesce

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// TestEachCallerGetsALaterRun: every caller's run began after it asked
// (the state it saw at the call is what the run read or older), and
// callers that ask together share runs.
func TestEachCallerGetsALaterRun(t *testing.T) {
	var state, runs atomic.Int64
	var seen sync.Map // run number -> the state it read
	r := NewErr(func() error {
		n := runs.Add(1)
		seen.Store(n, state.Load())
		time.Sleep(time.Millisecond)
		return nil
	})
	var wg sync.WaitGroup
	const callers = 200
	for range callers {
		wg.Go(func() {
			mine := state.Add(1)
			if _, err := r.Do(context.Background()); err != nil {
				t.Error(err)
				return
			}
			// Some run that finished before Do returned read mine.
			ok := false
			seen.Range(func(_, v any) bool {
				ok = ok || v.(int64) >= mine
				return !ok
			})
			if !ok {
				t.Errorf("no run read state %d", mine)
			}
		})
	}
	wg.Wait()
	if n := runs.Load(); n >= callers {
		t.Errorf("%d runs for %d concurrent callers: nothing shared", n, callers)
	}
	t.Logf("%d runs for %d callers", runs.Load(), callers)
}

// TestErrorsAndContext: a run's error reaches its callers; a caller whose
// context ends stops waiting.
func TestErrorsAndContext(t *testing.T) {
	boom := errors.New("boom")
	release := make(chan struct{})
	r := NewErr(func() error { <-release; return boom })
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := r.Do(ctx); !errors.Is(err, context.Canceled) {
		t.Fatalf("Do with an ended context: %v", err)
	}
	done := make(chan error)
	go func() { _, err := r.Do(context.Background()); done <- err }()
	close(release)
	if err := <-done; !errors.Is(err, boom) {
		t.Fatalf("Do: %v, want the run's error", err)
	}
}

// TestRoundsCarryTheirResult: one run is out at a time; callers arriving
// while it is out share the next one, which starts after they arrived,
// so none of them gets a result read before its call. (It was the commit
// probe's test, broker's catch-up, before the probe used this package.)
func TestRoundsCarryTheirResult(t *testing.T) {
	var calls atomic.Int64
	started := make(chan uint64, 4)
	release := make(chan struct{})
	p := New(func() (uint64, error) {
		n := uint64(calls.Add(1))
		started <- n
		<-release
		return n * 100, nil
	})
	ctx := context.Background()
	first := make(chan uint64, 1)
	go func() {
		v, err := p.Do(ctx)
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
			v, err := p.Do(ctx)
			if err != nil {
				t.Error(err)
			}
			later[i] = v
		})
	}
	deadline := time.Now().Add(10 * time.Second)
	for p.Waiting() != 3 {
		if time.Now().After(deadline) {
			t.Fatal("three callers did not join the next round in 10 s")
		}
		time.Sleep(time.Millisecond)
	}
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
	if v, _ := p.Do(ctx); v != 300 {
		t.Fatalf("caller after the waves got %d, want 300", v)
	}
}

// TestCallerGivesUp: a caller's context ends its wait, not the shared
// run, whose result the next caller gets.
func TestCallerGivesUp(t *testing.T) {
	release := make(chan struct{})
	p := New(func() (uint64, error) { <-release; return 7, nil })
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel()
	if _, err := p.Do(ctx); err == nil {
		t.Fatal("Do returned before the run answered or the context ended")
	}
	close(release)
	if v, err := p.Do(context.Background()); err != nil || v != 7 {
		t.Fatalf("after the slow run: %d, %v", v, err)
	}
}
