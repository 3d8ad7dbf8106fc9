package verify

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"
)

func newTestNemesis(overlap int) *nemesis {
	n := &nemesis{o: Options{Nodes: 3, Overlap: overlap}, held: map[int32]string{}, heldParts: map[tp]bool{},
		main: TopicInfo{Name: "verify", Partitions: 3}}
	n.cond = sync.NewCond(&n.mu)
	n.health = func(context.Context, time.Duration) (time.Duration, error) { return 0, nil }
	return n
}

// Two faults never hold one node; a node is free again once its fault
// healed.
func TestClaimHoldsANodeOnce(t *testing.T) {
	n := newTestNemesis(2)
	n.starting = FaultKill
	if err := n.claim(2); err != nil {
		t.Fatal(err)
	}
	held := n.claiming
	n.claiming, n.starting = claims{}, FaultPause
	if err := n.claim(2); !errors.Is(err, errHeld) {
		t.Fatalf("second claim of node 2: %v, want errHeld", err)
	}
	if err := n.claim(3); err != nil {
		t.Fatal(err)
	}
	n.release(held, false)
	if err := n.claim(2); err != nil {
		t.Fatalf("after the release: %v", err)
	}
}

// room admits Overlap faults, and waits for a heal past that.
func TestRoomWaitsForAHeal(t *testing.T) {
	n := newTestNemesis(2)
	ctx := t.Context()
	for i := range 2 {
		if !n.room(ctx, FaultKill) {
			t.Fatal("no room")
		}
		n.set(i, "fault")
	}
	done := make(chan bool)
	go func() { done <- n.room(ctx, FaultPause) }()
	n.set(0, "")
	n.release(claims{}, false)
	if !<-done {
		t.Fatal("no room after a heal")
	}
}

// A fault that loses unflushed writes waits while another is in force,
// and room gives up when the run ends.
func TestRoomKeepsLossesApart(t *testing.T) {
	n := newTestNemesis(3)
	checks := 0
	n.health = func(context.Context, time.Duration) (time.Duration, error) {
		checks++
		return 0, nil
	}
	if !n.room(t.Context(), FaultPower) {
		t.Fatal("no room for the first power loss")
	}
	n.set(0, "power")
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan bool)
	go func() { done <- n.room(ctx, FaultCascade) }()
	cancel()
	if <-done {
		t.Fatal("a second loss of unflushed writes started beside the first")
	}
	n.set(0, "")
	n.release(claims{}, true)
	// With nothing in force, the cluster must still be healthy first:
	// the node that lost its page cache may still be catching up.
	before := checks
	if !n.room(t.Context(), FaultPower) {
		t.Fatal("no room once the first loss healed")
	}
	if checks != before+1 {
		t.Fatalf("%d health checks before the second loss, want 1", checks-before)
	}
}

// A partition being moved is not moved again until that move healed: the
// second would change the target the first waits for.
func TestClaimPartPassesOverHeldPartitions(t *testing.T) {
	n := newTestNemesis(3)
	first, err := n.claimPart(2)
	if err != nil || first != (tp{"verify", 2}) {
		t.Fatalf("first claim: %v %v", first, err)
	}
	held := n.claiming
	second, err := n.claimPart(2)
	if err != nil || second != (tp{"verify", 0}) {
		t.Fatalf("second claim of partition 2: %v %v, want partition 0", second, err)
	}
	if _, err := n.claimPart(1); err != nil {
		t.Fatal(err)
	}
	if _, err := n.claimPart(0); !errors.Is(err, errHeld) {
		t.Fatalf("every partition held: %v, want errHeld", err)
	}
	n.release(held, false)
	if again, err := n.claimPart(0); err != nil || again != first {
		t.Fatalf("after the release: %v %v, want %v", again, err, first)
	}
}
