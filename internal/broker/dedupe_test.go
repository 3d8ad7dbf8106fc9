package broker

import (
	"reflect"
	"testing"
)

func TestDistinct(t *testing.T) {
	items := []string{"a", "b", "a", "c", "b", "a"}
	idx, rep := distinct(items, identity)
	// a, b, c in order of first appearance, each at its last position.
	if want := []int{5, 4, 3}; !reflect.DeepEqual(idx, want) {
		t.Fatalf("idx %v, want %v", idx, want)
	}
	if want := map[string]bool{"a": true, "b": true}; !reflect.DeepEqual(rep, want) {
		t.Fatalf("repeated %v, want %v", rep, want)
	}
	if _, rep := distinct([]string{"x", "y"}, identity); rep != nil {
		t.Fatalf("no duplicates: repeated %v, want nil", rep)
	}
}

func TestDistinctPartitions(t *testing.T) {
	type part struct {
		p   int32
		val string
	}
	type topic struct {
		name  string
		parts []part
	}
	in := []topic{
		{"t", []part{{0, "a"}, {1, "b"}}},
		{"u", []part{{0, "c"}}},
		{"t", []part{{0, "d"}, {2, "e"}}},
		{"v", nil},
	}
	out, rep := distinctPartitions(in, func(t topic) topicKey { return topicByName(t.name) },
		func(t topic) []part { return t.parts }, func(p part) int32 { return p.p })
	got := map[string][]part{}
	var order []string
	for _, g := range out {
		order = append(order, g.topic.name)
		got[g.topic.name] = g.parts
	}
	if want := []string{"t", "u", "v"}; !reflect.DeepEqual(order, want) {
		t.Fatalf("topics %v, want %v", order, want)
	}
	// t-0 keeps its last copy, in the place of its first.
	if want := []part{{0, "d"}, {1, "b"}, {2, "e"}}; !reflect.DeepEqual(got["t"], want) {
		t.Fatalf("t: %v, want %v", got["t"], want)
	}
	if len(got["v"]) != 0 {
		t.Fatalf("v: %v, want no partitions", got["v"])
	}
	if want := map[partitionKey]bool{{topicByName("t"), 0}: true}; !reflect.DeepEqual(rep, want) {
		t.Fatalf("repeated %v, want %v", rep, want)
	}
}
