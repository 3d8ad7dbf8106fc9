package waitclock

import (
	"context"
	"testing"
	"time"
)

// TestStartTellsTheClock: a wait on a context carrying a clock (or a
// context derived from it, cancellation stripped included) tells it the
// time between Start and stop; without a clock nothing is told.
func TestStartTellsTheClock(t *testing.T) {
	c := &Sum{}
	ctx := With(context.Background(), c)
	derived, cancel := context.WithCancel(context.WithoutCancel(ctx))
	defer cancel()
	for _, wctx := range []context.Context{ctx, derived} {
		before := c.Total()
		began := time.Now()
		stop := Start(wctx)
		time.Sleep(5 * time.Millisecond)
		stop()
		took := time.Since(began)
		if got := c.Total() - before; got < 5*time.Millisecond || got > took {
			t.Errorf("a wait of %v told its clock %v", took, got)
		}
	}
	before := c.Total()
	Start(context.Background())()
	if c.Total() != before {
		t.Error("a wait without a clock told one")
	}
}
