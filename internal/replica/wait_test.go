package replica

import (
	"context"
	"testing"
	"time"

	"github.com/weir-project/weir/internal/waitclock"
)

// TestWaitTellsItsClock: every wait on a context carrying a clock, woken
// by its partition, by its expiry or by the context's end, tells the
// clock how long it blocked; a wait without a clock tells nobody.
func TestWaitTellsItsClock(t *testing.T) {
	p := openPartition(t)
	if _, err := p.Update(State{LeaderID: 1, Replicas: []int32{1}, LeaderEpoch: 0, ISR: []int32{1}, MinISR: 1}); err != nil {
		t.Fatal(err)
	}
	c := &waitclock.Sum{}
	ctx := waitclock.With(context.Background(), c)
	w := NewWaiter()
	defer w.Done()
	w.Watch(p, HighWatermark)

	// Woken by an append: a notification already pending returns at once.
	if _, err := p.AppendAsLeader(batch(t, 1), -1); err != nil {
		t.Fatal(err)
	}
	if !w.Wait(ctx, nil) {
		t.Fatal("a pending notification did not wake the wait")
	}
	// Expired, or cancelled (a derived context still carries the clock):
	// the clock is told the time blocked, which is within the time the
	// call took.
	const delay = 30 * time.Millisecond
	check := func(what string, wait func() bool) {
		t.Helper()
		before, start := c.Total(), time.Now()
		if wait() {
			t.Fatalf("%s: woken with nothing changed", what)
		}
		took := time.Since(start)
		if got := c.Total() - before; got <= 0 || got > took {
			t.Errorf("%s: a wait of %v told its clock %v", what, took, got)
		}
	}
	check("expired", func() bool { return w.Wait(ctx, time.After(delay)) })
	check("cancelled", func() bool {
		cctx, cancel := context.WithCancel(ctx)
		defer cancel()
		time.AfterFunc(delay, cancel)
		return w.Wait(cctx, nil)
	})
	// No clock: nothing told.
	before := c.Total()
	if w.Wait(context.Background(), time.After(time.Millisecond)) {
		t.Fatal("woken with nothing changed")
	}
	if got := c.Total(); got != before {
		t.Errorf("a wait without a clock moved it by %v", got-before)
	}
}
