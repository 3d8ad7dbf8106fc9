package group

import (
	"slices"
	"strings"
)

// The server-side assignors of KIP-848. Both are sticky: they start from
// the current target assignment and move as few partitions as balance
// requires, so that a member joining or leaving disturbs the others as
// little as possible.

// Names of the server-side assignors; the first is the default, as in
// Kafka's group.consumer.assignors.
const (
	AssignorUniform = "uniform"
	AssignorRange   = "range"
)

// Assignors lists the server-side assignors, default first.
var Assignors = []string{AssignorUniform, AssignorRange}

func knownAssignor(name string) bool { return slices.Contains(Assignors, name) }

// assignMember is one member as an assignor sees it.
type assignMember struct {
	id      string
	topics  map[TopicID]bool // subscribed topics that exist
	current partSet          // its current target assignment
}

// assign runs assignor name over members (in any order) and topics.
func assign(name string, members []assignMember, topics map[TopicID]topicMeta) map[string]partSet {
	members = slices.Clone(members)
	slices.SortFunc(members, func(a, b assignMember) int { return strings.Compare(a.id, b.id) })
	if name == AssignorRange {
		return assignRange(members, topics)
	}
	return assignUniform(members, topics)
}

// sortedTopicIDs orders topic ids by topic name, for deterministic output.
func sortedTopicIDs(topics map[TopicID]topicMeta) []TopicID {
	ids := make([]TopicID, 0, len(topics))
	for id := range topics {
		ids = append(ids, id)
	}
	slices.SortFunc(ids, func(a, b TopicID) int { return strings.Compare(topics[a].name, topics[b].name) })
	return ids
}

// assignUniform spreads all subscribed partitions evenly: every member
// ends with as many partitions as any other member it could trade with,
// plus or minus one. Partitions a member already has are kept unless
// they are needed to even things out.
func assignUniform(members []assignMember, topics map[TopicID]topicMeta) map[string]partSet {
	out := make(map[string]partSet, len(members))
	owner := map[tidp]int{} // partition -> index into members
	count := make([]int, len(members))
	for i, m := range members {
		out[m.id] = partSet{}
		// Sticky: keep what is still valid and not claimed already.
		for _, id := range sortedKeys(m.current) {
			t, ok := topics[id]
			if !ok || !m.topics[id] {
				continue
			}
			for _, p := range m.current[id] {
				k := tidp{id, p}
				if _, taken := owner[k]; taken || p >= t.partitions {
					continue
				}
				owner[k] = i
				out[m.id].add(id, p)
				count[i]++
			}
		}
	}
	// Every partition nobody kept goes to the least loaded subscriber.
	for _, id := range sortedTopicIDs(topics) {
		for p := int32(0); p < topics[id].partitions; p++ {
			k := tidp{id, p}
			if _, ok := owner[k]; ok {
				continue
			}
			best := -1
			for i, m := range members {
				if m.topics[id] && (best < 0 || count[i] < count[best]) {
					best = i
				}
			}
			if best < 0 {
				continue // nobody subscribes to it
			}
			owner[k] = best
			out[members[best].id].add(id, p)
			count[best]++
		}
	}
	// Even out: move one partition at a time from a fuller member to an
	// emptier one that subscribes to it, fullest and emptiest first. Each
	// move lowers the sum of squared counts, so this ends.
	for moveOne(members, out, count) {
	}
	return out
}

// moveOne makes the best single balancing move, if there is one.
func moveOne(members []assignMember, out map[string]partSet, count []int) bool {
	order := make([]int, len(members))
	for i := range order {
		order[i] = i
	}
	slices.SortStableFunc(order, func(a, b int) int { return count[b] - count[a] })
	for _, from := range order {
		for j := len(order) - 1; j >= 0; j-- {
			to := order[j]
			if count[from] <= count[to]+1 {
				break
			}
			src := out[members[from].id]
			// Give away the highest partition of the last topic the
			// receiver subscribes to: the lowest ones tend to stay put.
			ids := sortedKeys(src)
			for ti := len(ids) - 1; ti >= 0; ti-- {
				id := ids[ti]
				if !members[to].topics[id] {
					continue
				}
				ps := src[id]
				p := ps[len(ps)-1]
				src.remove(id, p)
				out[members[to].id].add(id, p)
				count[from]--
				count[to]++
				return true
			}
		}
	}
	return false
}

// assignRange gives each subscriber of a topic a range of its partitions:
// with n subscribers (ordered by member id) and p partitions, the first
// p%n get p/n+1 partitions, the others p/n. Members keep the partitions
// they had up to that quota; the rest are handed out in order.
func assignRange(members []assignMember, topics map[TopicID]topicMeta) map[string]partSet {
	out := make(map[string]partSet, len(members))
	for _, m := range members {
		out[m.id] = partSet{}
	}
	for _, id := range sortedTopicIDs(topics) {
		n := topics[id].partitions
		var subs []int
		for i, m := range members {
			if m.topics[id] {
				subs = append(subs, i)
			}
		}
		if len(subs) == 0 || n <= 0 {
			continue
		}
		quota := make([]int32, len(subs))
		for j := range subs {
			quota[j] = n / int32(len(subs))
			if int32(j) < n%int32(len(subs)) {
				quota[j]++
			}
		}
		taken := make([]bool, n)
		got := make([]int32, len(subs))
		for j, i := range subs {
			for _, p := range members[i].current[id] {
				if p < n && !taken[p] && got[j] < quota[j] {
					taken[p] = true
					got[j]++
					out[members[i].id].add(id, p)
				}
			}
		}
		j := 0
		for p := int32(0); p < n; p++ {
			if taken[p] {
				continue
			}
			for got[j] >= quota[j] {
				j++
			}
			got[j]++
			out[members[subs[j]].id].add(id, p)
		}
	}
	return out
}

func sortedKeys(s partSet) []TopicID {
	ids := make([]TopicID, 0, len(s))
	for id := range s {
		ids = append(ids, id)
	}
	slices.SortFunc(ids, func(a, b TopicID) int { return slices.Compare(a[:], b[:]) })
	return ids
}
