package verify

import (
	"slices"
	"testing"
)

// A move keeps the replication factor and changes what it was drawn to
// change: with no node outside the set, a follower comes to the front;
// otherwise the leader or a follower gives its place to an outsider.
func TestMoveTarget(t *testing.T) {
	for _, c := range []struct {
		order  []int32
		leader int32
		ids    []int32
		d      draws
		want   []int32
	}{
		// Three nodes: the drawn follower (of 2 and 3) leads the list.
		{[]int32{1, 2, 3}, 1, []int32{1, 2, 3}, draws{pick: 0}, []int32{2, 1, 3}},
		{[]int32{1, 2, 3}, 1, []int32{1, 2, 3}, draws{pick: 1}, []int32{3, 1, 2}},
		// The leader need not be first; the list may stay as it was, and
		// the election then moves the leadership to the first.
		{[]int32{1, 2, 3}, 2, []int32{1, 2, 3}, draws{pick: 0}, []int32{1, 2, 3}},
		{[]int32{1, 2, 3}, 2, []int32{1, 2, 3}, draws{pick: 1}, []int32{3, 1, 2}},
		// Five nodes: the leader replaced in its place...
		{[]int32{2, 4, 5}, 2, []int32{1, 2, 3, 4, 5}, draws{pick: 0}, []int32{1, 4, 5}},
		{[]int32{2, 4, 5}, 2, []int32{1, 2, 3, 4, 5}, draws{pick: 3}, []int32{3, 4, 5}},
		// ...or a follower.
		{[]int32{2, 4, 5}, 2, []int32{1, 2, 3, 4, 5}, draws{follower: true, pick: 1}, []int32{2, 4, 1}},
	} {
		got := moveTarget(c.order, c.leader, c.ids, c.d)
		if !slices.Equal(got, c.want) {
			t.Errorf("moveTarget(%v, leader %d, %v, %+v) = %v, want %v", c.order, c.leader, c.ids, c.d, got, c.want)
		}
	}
}
