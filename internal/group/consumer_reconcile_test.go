package group

import "testing"

func ps(parts ...int32) partSet {
	if len(parts) == 0 {
		return partSet{}
	}
	return partSet{tid("t"): parts}
}

func assignedAt(epoch int32, parts ...int32) memberAssignment {
	a := newMemberAssignment()
	a.epoch, a.assigned = epoch, ps(parts...)
	for _, p := range parts {
		a.since[tidp{tid("t"), p}] = epoch
	}
	return a
}

func nobody(tidp) bool { return false }

func TestReconcileRevokesBeforeMoving(t *testing.T) {
	cur := assignedAt(3, 0, 1, 2)
	// Target epoch 4 takes 2 away and gives 3.
	next := reconcile(cur, 4, ps(0, 1, 3), ps(0, 1, 2), nobody)
	if next.state != memberUnrevoked || next.epoch != 3 || !next.assigned.equal(ps(0, 1)) || !next.pending.equal(ps(2)) {
		t.Fatalf("first step %+v", next)
	}
	// Still reporting 2: nothing moves.
	if again := reconcile(next, 4, ps(0, 1, 3), ps(0, 1, 2), nobody); !again.equal(next) {
		t.Fatalf("moved while the member still owns a revoked partition: %+v", again)
	}
	// A keepalive (owned unknown) does not confirm the revocation either.
	if again := reconcile(next, 4, ps(0, 1, 3), nil, nobody); !again.equal(next) {
		t.Fatalf("moved on a keepalive: %+v", again)
	}
	// Released: epoch 4, and the new partition with it.
	done := reconcile(next, 4, ps(0, 1, 3), ps(0, 1), nobody)
	if done.state != memberStable || done.epoch != 4 || done.prevEpoch != 3 || !done.assigned.equal(ps(0, 1, 3)) || len(done.pending) != 0 {
		t.Fatalf("after release %+v", done)
	}
	// Partitions kept remember when they were given; the new one is 4.
	if done.since[tidp{tid("t"), 0}] != 3 || done.since[tidp{tid("t"), 3}] != 4 {
		t.Fatalf("since %v", done.since)
	}
}

func TestReconcileWaitsForUnreleasedPartitions(t *testing.T) {
	cur := assignedAt(1, 0)
	ownedElsewhere := func(k tidp) bool { return k.p == 1 }
	next := reconcile(cur, 2, ps(0, 1, 2), ps(0), ownedElsewhere)
	if next.state != memberUnreleased || next.epoch != 2 || !next.assigned.equal(ps(0, 2)) {
		t.Fatalf("with an unreleased partition %+v", next)
	}
	// Once the other member lets go, it is assigned.
	done := reconcile(next, 2, ps(0, 1, 2), ps(0, 2), nobody)
	if done.state != memberStable || !done.assigned.equal(ps(0, 1, 2)) {
		t.Fatalf("after release %+v", done)
	}
}

func TestReconcileSkipsRevocationOfPartitionsNotOwned(t *testing.T) {
	// The member already dropped partition 2 on its own (it reports
	// only 0): no revocation round is needed.
	cur := assignedAt(5, 0, 2)
	next := reconcile(cur, 6, ps(0), ps(0), nobody)
	if next.state != memberStable || next.epoch != 6 || !next.assigned.equal(ps(0)) {
		t.Fatalf("%+v", next)
	}
}
