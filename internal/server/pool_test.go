package server

import (
	"context"
	"errors"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// growAsync grows r by n in a goroutine; the channel gets its error.
func growAsync(r *reservation, n int64) <-chan error {
	done := make(chan error, 1)
	go func() {
		_, err := r.grow(context.Background(), n)
		done <- err
	}()
	return done
}

// blocked asserts that a grow has not returned: a bounded check that can
// only fail when the pool lets it through.
func blocked(t *testing.T, done <-chan error, what string) {
	t.Helper()
	select {
	case err := <-done:
		t.Fatalf("%s: grow returned (err %v), want it waiting", what, err)
	case <-time.After(50 * time.Millisecond):
	}
}

func granted(t *testing.T, done <-chan error, what string) {
	t.Helper()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("%s: %v", what, err)
		}
	case <-time.After(waitLimit):
		t.Fatalf("%s: still waiting after %v", what, waitLimit)
	}
}

func TestPoolWaitsWhenFullAndWakesOnRelease(t *testing.T) {
	p := newMemPool(100)
	a, b, c := p.reserve(), p.reserve(), p.reserve()
	granted(t, growAsync(a, 60), "a fits")
	// b does not fit: it takes the overdraft (nobody holds it).
	granted(t, growAsync(b, 60), "b overdraws")
	if got := p.inUse(); got != 120 {
		t.Fatalf("in use %d, want 120", got)
	}
	// c does not fit and the overdraft is b's: c waits.
	done := growAsync(c, 10)
	blocked(t, done, "c while b holds the overdraft")
	// b may keep growing past the budget: its request must complete.
	granted(t, growAsync(b, 30), "b grows in overdraft")
	b.settle()
	// The overdraft is free again, but the pool is past its budget (150
	// of 100): c waits until b's request is answered.
	blocked(t, done, "c while b's settled request is still held")
	b.release()
	granted(t, done, "c after b released")
	c.settle()
	a.release()
	c.release()
	if got := p.inUse(); got != 0 {
		t.Fatalf("in use %d after every release, want 0", got)
	}
}

func TestPoolReleaseLetsWaitersFit(t *testing.T) {
	p := newMemPool(100)
	a, b, c := p.reserve(), p.reserve(), p.reserve()
	granted(t, growAsync(a, 90), "a")
	granted(t, growAsync(b, 20), "b overdraws")
	done := growAsync(c, 50)
	blocked(t, done, "c")
	a.shrinkTo(10) // decoded: a now holds less
	granted(t, done, "c after a shrank")
	if got := p.inUse(); got != 80 {
		t.Fatalf("in use %d, want 80", got)
	}
}

func TestPoolGrowHonoursContext(t *testing.T) {
	p := newMemPool(10)
	a, b := p.reserve(), p.reserve()
	granted(t, growAsync(a, 20), "a overdraws")
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		_, err := b.grow(ctx, 5)
		done <- err
	}()
	blocked(t, done, "b")
	cancel()
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Fatalf("grow after cancel: %v, want context.Canceled", err)
	}
	if b.size() != 0 || p.inUse() != 20 {
		t.Fatalf("a cancelled grow charged: b %d, pool %d", b.size(), p.inUse())
	}
}

func TestPoolUnboundedAndForced(t *testing.T) {
	p := newMemPool(-1)
	r := p.reserve()
	granted(t, growAsync(r, 1<<40), "unbounded")
	p.force(5)
	if got := p.inUse(); got != 1<<40+5 {
		t.Fatalf("in use %d", got)
	}
	p.unforce(5)
	r.release()
	if got := p.inUse(); got != 0 {
		t.Fatalf("in use %d after release", got)
	}

	// A forced charge never waits, even over budget; while it keeps the
	// pool past its budget no reader gets the overdraft, and a release by
	// unforce wakes them.
	q := newMemPool(20)
	q.force(50)
	w := q.reserve()
	done := growAsync(w, 5)
	blocked(t, done, "w while a forced charge keeps the pool past its budget")
	q.unforce(50)
	granted(t, done, "w after the forced charge is returned")
	x := q.reserve()
	done = growAsync(x, 30)
	// x does not fit (5 + 30 > 20), the pool is within budget and the
	// overdraft is free: granted.
	granted(t, done, "x overdraws")
	y := q.reserve()
	done = growAsync(y, 1)
	blocked(t, done, "y while x holds the overdraft")
	x.settle()
	x.release()
	granted(t, done, "y after x is answered")
}

// Many readers growing, settling and releasing at random never push the
// pool past its budget by more than one request's worth, and never leave
// a charge behind.
func TestPoolStaysWithinBudgetPlusOneRequest(t *testing.T) {
	const budget, maxRequest = 1 << 20, 256 << 10
	p := newMemPool(budget)
	var peak atomic.Int64
	var wg sync.WaitGroup
	for g := range 16 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rng := rand.New(rand.NewPCG(uint64(g), 7))
			for range 300 {
				r := p.reserve()
				total := rng.Int64N(maxRequest) + 1
				for got := int64(0); got < total; {
					n := min(total-got, rng.Int64N(32<<10)+1)
					if _, err := r.grow(context.Background(), n); err != nil {
						t.Error(err)
						return
					}
					got += n
					if u := p.inUse(); u > peak.Load() {
						peak.Store(u)
					}
				}
				r.settle()
				r.release()
			}
		}()
	}
	wg.Wait()
	if got := p.inUse(); got != 0 {
		t.Fatalf("in use %d after every release", got)
	}
	if peak.Load() > budget+maxRequest {
		t.Fatalf("peak %d past budget %d plus one request %d", peak.Load(), budget, maxRequest)
	}
	t.Logf("peak %d of budget %d", peak.Load(), budget)
}
