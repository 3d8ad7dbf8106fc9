package group

// Reconciliation moves a member's current assignment towards its target
// one step at a time, as Kafka's CurrentAssignmentBuilder does. The rule
// that makes it safe: a partition is given to a member only once no other
// member owns it, and a member gives a partition up (stops reporting it
// in its heartbeats) before it may move to a new epoch. So no partition
// is ever owned by two members at once.

// reconcile returns the member's next assignment.
//
//   - targetEpoch and target are the member's target assignment.
//   - owned is what the member reported owning in this heartbeat; nil if
//     it did not say (a keepalive heartbeat), which counts as "still owns
//     everything".
//   - ownedByOther tells whether another member still owns a partition.
func reconcile(cur memberAssignment, targetEpoch int32, target partSet, owned partSet, ownedByOther func(tidp) bool) memberAssignment {
	switch cur.state {
	case memberStable:
		if cur.epoch == targetEpoch {
			return cur
		}
		return nextAssignment(cur, cur.epoch, targetEpoch, target, owned, ownedByOther)
	case memberUnrevoked:
		if ownsAny(owned, cur.pending) {
			return cur // still waiting for the member to let go
		}
		return nextAssignment(cur, cur.epoch, targetEpoch, target, owned, ownedByOther)
	case memberUnreleased:
		return nextAssignment(cur, cur.epoch, targetEpoch, target, owned, ownedByOther)
	default:
		return cur
	}
}

// ownsAny reports whether the member still owns any partition of s. A
// member that did not report its partitions is assumed to own them all.
func ownsAny(owned partSet, s partSet) bool {
	if len(s) == 0 {
		return false
	}
	if owned == nil {
		return true
	}
	for id, ps := range owned {
		for _, p := range ps {
			if s.has(id, p) {
				return true
			}
		}
	}
	return false
}

// nextAssignment computes the member's next state from its assigned
// partitions: keep what is still in the target, revoke the rest, and add
// the target's partitions nobody else owns.
func nextAssignment(cur memberAssignment, memberEpoch, targetEpoch int32, target partSet, owned partSet, ownedByOther func(tidp) bool) memberAssignment {
	keep, revoke, add := partSet{}, partSet{}, partSet{}
	unreleased := false
	for id, ps := range cur.assigned {
		for _, p := range ps {
			if target.has(id, p) {
				keep.add(id, p)
			} else {
				revoke.add(id, p)
			}
		}
	}
	for id, ps := range target {
		for _, p := range ps {
			if keep.has(id, p) {
				continue
			}
			// A partition this member itself still has pending
			// revocation is not "owned by another".
			if ownedByOther(tidp{id, p}) && !cur.pending.has(id, p) {
				unreleased = true
				continue
			}
			add.add(id, p)
		}
	}
	since := func(parts ...partSet) map[tidp]int32 {
		out := map[tidp]int32{}
		for _, s := range parts {
			for id, ps := range s {
				for _, p := range ps {
					k := tidp{id, p}
					if e, ok := cur.since[k]; ok {
						out[k] = e
					} else {
						out[k] = targetEpoch
					}
				}
			}
		}
		return out
	}
	next := memberAssignment{prevEpoch: cur.prevEpoch}
	switch {
	case len(revoke) > 0 && ownsAny(owned, revoke):
		// Stay in the current epoch until the member confirms the
		// revocation by no longer reporting those partitions.
		next.state, next.epoch = memberUnrevoked, memberEpoch
		next.assigned, next.pending = keep, revoke
		next.since = since(keep, revoke)
	default:
		for id, ps := range add {
			for _, p := range ps {
				keep.add(id, p)
			}
		}
		next.state, next.epoch = memberStable, targetEpoch
		if unreleased {
			next.state = memberUnreleased
		}
		next.assigned, next.pending = keep, partSet{}
		next.since = since(keep)
	}
	if next.epoch != cur.epoch {
		next.prevEpoch = cur.epoch
	}
	return next
}
