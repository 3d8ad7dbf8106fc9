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
	r := New(func() error {
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
			if err := r.Do(context.Background()); err != nil {
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
	r := New(func() error { <-release; return boom })
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := r.Do(ctx); !errors.Is(err, context.Canceled) {
		t.Fatalf("Do with an ended context: %v", err)
	}
	done := make(chan error)
	go func() { done <- r.Do(context.Background()) }()
	close(release)
	if err := <-done; !errors.Is(err, boom) {
		t.Fatalf("Do: %v, want the run's error", err)
	}
}
