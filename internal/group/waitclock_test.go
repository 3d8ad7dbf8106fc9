package group

import (
	"context"
	"testing"
	"time"

	"github.com/weir-project/weir/internal/waitclock"
)

// TestJoinWaitTellsTheRequestClock: a JoinGroup held until the group's
// rebalance completes tells its request's wait clock how long it was
// held (the broker counts it as remote time), within the call's time.
func TestJoinWaitTellsTheRequestClock(t *testing.T) {
	e := newEnv(t, 3*time.Second)
	clock := &waitclock.Sum{}
	ctx := waitclock.With(context.Background(), clock)
	start := time.Now()
	done := make(chan JoinResult, 1)
	go func() { done <- e.c.Join(ctx, joinReq("g", "", "c1")) }()
	const limit = 30 * time.Second
	deadline := time.Now().Add(limit)
	for {
		if d, err := e.c.DescribeGroup("g"); err == nil && d.State == PreparingRebalance && len(d.Members) == 1 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the join never reached the group")
		}
		time.Sleep(time.Millisecond)
	}
	// Held while the initial rebalance delay runs, here on the fake clock.
	e.clock.Advance(3 * time.Second)
	var r JoinResult
	select {
	case r = <-done:
	case <-time.After(limit):
		t.Fatal("the join was not answered when the delay ended")
	}
	took := time.Since(start)
	if r.Err != nil {
		t.Fatalf("join: %v", r.Err)
	}
	if got := clock.Total(); got <= 0 || got > took {
		t.Errorf("a join held in a %v call told its clock %v", took, got)
	}
}
