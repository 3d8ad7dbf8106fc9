package group

import (
	"fmt"
	"math/rand/v2"
	"testing"
)

func topicSet(specs map[string]int32) map[TopicID]topicMeta {
	out := map[TopicID]topicMeta{}
	for n, p := range specs {
		out[tid(n)] = topicMeta{name: n, id: tid(n), partitions: p}
	}
	return out
}

func subscribe(names ...string) map[TopicID]bool {
	out := map[TopicID]bool{}
	for _, n := range names {
		out[tid(n)] = true
	}
	return out
}

// checkValid: every partition of a subscribed topic is assigned exactly
// once, and only to a member subscribing to it.
func checkValid(t *testing.T, members []assignMember, topics map[TopicID]topicMeta, out map[string]partSet) {
	t.Helper()
	owner := map[tidp]string{}
	subs := map[string]map[TopicID]bool{}
	wanted := map[TopicID]bool{}
	for _, m := range members {
		subs[m.id] = m.topics
		for id := range m.topics {
			wanted[id] = true
		}
	}
	for id, s := range out {
		for t2, ps := range s {
			for _, p := range ps {
				if !subs[id][t2] {
					t.Fatalf("%s got %s-%d without subscribing", id, topics[t2].name, p)
				}
				if o, dup := owner[tidp{t2, p}]; dup {
					t.Fatalf("%s-%d given to %s and %s", topics[t2].name, p, o, id)
				}
				owner[tidp{t2, p}] = id
			}
		}
	}
	for id := range wanted {
		for p := int32(0); p < topics[id].partitions; p++ {
			if _, ok := owner[tidp{id, p}]; !ok {
				t.Fatalf("%s-%d unassigned", topics[id].name, p)
			}
		}
	}
}

func spread(out map[string]partSet) (lo, hi int) {
	lo = 1 << 30
	for _, s := range out {
		lo, hi = min(lo, s.count()), max(hi, s.count())
	}
	return lo, hi
}

// moved counts partitions whose owner changed between two assignments
// (partitions new or gone are not counted).
func moved(before, after map[string]partSet) int {
	owner := map[tidp]string{}
	for id, s := range before {
		for t, ps := range s {
			for _, p := range ps {
				owner[tidp{t, p}] = id
			}
		}
	}
	n := 0
	for id, s := range after {
		for t, ps := range s {
			for _, p := range ps {
				if o, ok := owner[tidp{t, p}]; ok && o != id {
					n++
				}
			}
		}
	}
	return n
}

func withCurrent(members []assignMember, cur map[string]partSet) []assignMember {
	out := make([]assignMember, len(members))
	for i, m := range members {
		m.current = cur[m.id]
		out[i] = m
	}
	return out
}

func TestUniformBalancedAndSticky(t *testing.T) {
	topics := topicSet(map[string]int32{"t1": 7, "t2": 5})
	var members []assignMember
	for i := range 3 {
		members = append(members, assignMember{id: fmt.Sprintf("m%d", i), topics: subscribe("t1", "t2")})
	}
	out := assign(AssignorUniform, members, topics)
	checkValid(t, members, topics, out)
	if lo, hi := spread(out); lo != 4 || hi != 4 {
		t.Fatalf("12 partitions over 3: %d..%d", lo, hi)
	}
	// Same input, same answer: nothing moves.
	again := assign(AssignorUniform, withCurrent(members, out), topics)
	if n := moved(out, again); n != 0 {
		t.Fatalf("reassigning an unchanged group moved %d partitions", n)
	}
	// A fourth member takes exactly its share, from the others.
	members = append(withCurrent(members, out), assignMember{id: "m3", topics: subscribe("t1", "t2")})
	joined := assign(AssignorUniform, members, topics)
	checkValid(t, members, topics, joined)
	if lo, hi := spread(joined); lo != 3 || hi != 3 {
		t.Fatalf("12 partitions over 4: %d..%d", lo, hi)
	}
	if n := moved(out, joined); n != 3 {
		t.Fatalf("a join moved %d partitions, want 3 (the newcomer's share)", n)
	}
	// A member leaves: only its partitions move.
	members = withCurrent(members, joined)
	left := assign(AssignorUniform, members[1:], topics)
	checkValid(t, members[1:], topics, left)
	stay := map[string]partSet{}
	for id, s := range joined {
		if id != members[0].id {
			stay[id] = s
		}
	}
	if n := moved(stay, left); n != 0 {
		t.Fatalf("a leave moved %d partitions of the remaining members", n)
	}
	if lo, hi := spread(left); lo != 4 || hi != 4 {
		t.Fatalf("after leave: %d..%d", lo, hi)
	}
}

func TestUniformHeterogeneous(t *testing.T) {
	topics := topicSet(map[string]int32{"a": 6, "b": 2})
	members := []assignMember{
		{id: "x", topics: subscribe("a")},
		{id: "y", topics: subscribe("a", "b")},
		{id: "z", topics: subscribe("b")},
	}
	out := assign(AssignorUniform, members, topics)
	checkValid(t, members, topics, out)
	// 8 partitions, 3 members: y can trade with both, so the spread is
	// at most one between members that share a topic.
	if lo, hi := spread(out); hi-lo > 1 {
		t.Fatalf("spread %d..%d: %v", lo, hi, out)
	}
}

func TestUniformRandomized(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for iter := range 200 {
		specs := map[string]int32{}
		names := []string{}
		for i := range 1 + rng.IntN(4) {
			n := fmt.Sprintf("t%d", i)
			specs[n] = int32(1 + rng.IntN(12))
			names = append(names, n)
		}
		topics := topicSet(specs)
		homogeneous := rng.IntN(2) == 0
		var members []assignMember
		for i := range 1 + rng.IntN(6) {
			var sub []string
			for _, n := range names {
				if homogeneous || rng.IntN(2) == 0 {
					sub = append(sub, n)
				}
			}
			members = append(members, assignMember{id: fmt.Sprintf("m%d", i), topics: subscribe(sub...)})
		}
		for _, name := range Assignors {
			out := assign(name, members, topics)
			checkValid(t, members, topics, out)
			if name == AssignorUniform && homogeneous {
				if lo, hi := spread(out); hi-lo > 1 {
					t.Fatalf("iteration %d: homogeneous uniform spread %d..%d", iter, lo, hi)
				}
			}
			// Feeding the result back changes nothing.
			if n := moved(out, assign(name, withCurrent(members, out), topics)); n != 0 {
				t.Fatalf("iteration %d %s: stable input moved %d partitions", iter, name, n)
			}
		}
	}
}

func TestRangeAssignor(t *testing.T) {
	topics := topicSet(map[string]int32{"a": 5, "b": 5})
	members := []assignMember{{id: "m1", topics: subscribe("a", "b")}, {id: "m0", topics: subscribe("a", "b")}}
	out := assign(AssignorRange, members, topics)
	checkValid(t, members, topics, out)
	// Ordered by member id: m0 gets the first range, of both topics
	// (co-partitioning).
	for _, n := range []string{"a", "b"} {
		if got := fmt.Sprint(out["m0"][tid(n)]); got != "[0 1 2]" {
			t.Fatalf("m0 %s = %s", n, got)
		}
		if got := fmt.Sprint(out["m1"][tid(n)]); got != "[3 4]" {
			t.Fatalf("m1 %s = %s", n, got)
		}
	}
	// A third member: quotas 2,2,1; members keep what fits their quota.
	members = append(withCurrent(members, out), assignMember{id: "m2", topics: subscribe("a", "b")})
	joined := assign(AssignorRange, members, topics)
	checkValid(t, members, topics, joined)
	for _, n := range []string{"a", "b"} {
		if len(joined["m0"][tid(n)]) != 2 || len(joined["m1"][tid(n)]) != 2 || len(joined["m2"][tid(n)]) != 1 {
			t.Fatalf("%s quotas: %v", n, joined)
		}
	}
	if n := moved(out, joined); n != 2 {
		t.Fatalf("join moved %d partitions, want 2", n)
	}
}
