package controller

import (
	"context"
	"testing"
	"time"
)

// TestAwaitApplied: the wait ends once every eligible broker has reported
// the index, and does not wait for a fenced broker, nor past ctx.
func TestAwaitApplied(t *testing.T) {
	s, q, clock := newService(t)
	e2 := register(t, s, 2, 1)
	e3 := register(t, s, 3, 1)
	heartbeat(t, s, 2, e2, e2, false)
	heartbeat(t, s, 3, e3, e3, false)
	target := int64(q.Image().Index()) + 5

	done := make(chan struct{})
	go func() {
		s.AwaitApplied(ctx(t), []int32{2, 3, 9}, target) // 9: never registered
		close(done)
	}()
	ended := func() bool {
		select {
		case <-done:
			return true
		default:
			return false
		}
	}
	heartbeat(t, s, 2, e2, target, false)
	if ended() {
		t.Fatal("the wait ended with broker 3 behind")
	}
	heartbeat(t, s, 3, e3, target-1, false)
	if ended() {
		t.Fatal("the wait ended with broker 3 one index behind")
	}
	heartbeat(t, s, 3, e3, target, false)
	<-done // waits on the offsets' channel: no poll, no timer

	// A broker that is fenced (its session expired) is not waited for.
	target += 10
	clock.advance(3 * time.Second)
	heartbeat(t, s, 2, e2, target, false) // 2 stays live; 3 is silent
	s.expireSessions(ctx(t))
	if b, _ := q.Image().Broker(3); !b.Fenced {
		t.Fatal("broker 3 not fenced")
	}
	s.AwaitApplied(ctx(t), []int32{2, 3}, target)

	// A live broker behind holds the wait until ctx ends.
	heartbeat(t, s, 2, e2, target, false)
	c, cancel := context.WithTimeout(ctx(t), 50*time.Millisecond)
	defer cancel()
	s.AwaitApplied(c, []int32{2}, target+1)
	if c.Err() == nil {
		t.Fatal("AwaitApplied returned before ctx ended with broker 2 behind")
	}
}
