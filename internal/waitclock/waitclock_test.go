package waitclock

import (
	"context"
	"sync/atomic"
	"testing"
	"time"
)

type clock struct{ waited atomic.Int64 }

func (c *clock) Waited(d time.Duration) { c.waited.Add(int64(d)) }

// TestStartTellsTheClock: a wait on a context carrying a clock (or a
// context derived from it, cancellation stripped included) tells it the
// time between Start and stop; without a clock nothing is told.
func TestStartTellsTheClock(t *testing.T) {
	c := &clock{}
	ctx := With(context.Background(), c)
	derived, cancel := context.WithCancel(context.WithoutCancel(ctx))
	defer cancel()
	for _, wctx := range []context.Context{ctx, derived} {
		before := time.Duration(c.waited.Load())
		began := time.Now()
		stop := Start(wctx)
		time.Sleep(5 * time.Millisecond)
		stop()
		took := time.Since(began)
		if got := time.Duration(c.waited.Load()) - before; got < 5*time.Millisecond || got > took {
			t.Errorf("a wait of %v told its clock %v", took, got)
		}
	}
	before := c.waited.Load()
	Start(context.Background())()
	if c.waited.Load() != before {
		t.Error("a wait without a clock told one")
	}
}
