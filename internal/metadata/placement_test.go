package metadata

import (
	"errors"
	"slices"
	"testing"
)

func TestRackAlternatedOrder(t *testing.T) {
	brokers := []placementBroker{{1, "b"}, {2, "a"}, {3, "b"}, {4, "a"}, {5, "c"}, {6, "a"}}
	ring, racks := rackAlternated(brokers)
	var ids []int32
	for _, b := range ring {
		ids = append(ids, b.id)
	}
	// a: 2 4 6, b: 1 3, c: 5 -> one of each rack in turn.
	if want := []int32{2, 1, 5, 4, 3, 6}; !slices.Equal(ids, want) || racks != 3 {
		t.Fatalf("ring %v racks %d, want %v 3", ids, racks, want)
	}
	if ring, racks := rackAlternated([]placementBroker{{1, ""}, {2, ""}}); racks != 1 || ring[0].id != 1 {
		t.Fatalf("no racks: %v %d", ring, racks)
	}
}

// checkPlacement checks the properties place promises: rf distinct
// brokers per partition, leaders exactly balanced over whole rounds, and
// each partition on as many racks as it can be.
func checkPlacement(t *testing.T, brokers []placementBroker, asg [][]int32, rf int) (leaders, replicas map[int32]int) {
	t.Helper()
	rackOf := map[int32]string{}
	racks := map[string]bool{}
	for _, b := range brokers {
		rackOf[b.id] = b.rack
		racks[b.rack] = true
	}
	leaders, replicas = map[int32]int{}, map[int32]int{}
	for p, r := range asg {
		if len(r) != rf {
			t.Fatalf("partition %d: %v, want %d replicas", p, r, rf)
		}
		used := map[string]bool{}
		for j, id := range r {
			if slices.Contains(r[:j], id) {
				t.Fatalf("partition %d repeats broker %d: %v", p, id, r)
			}
			used[rackOf[id]] = true
			replicas[id]++
		}
		if want := min(rf, len(racks)); len(used) != want {
			t.Fatalf("partition %d %v spans %d racks, want %d", p, r, len(used), want)
		}
		leaders[r[0]]++
	}
	return leaders, replicas
}

func TestPlaceRackAware(t *testing.T) {
	layouts := map[string][]placementBroker{
		"3 racks of 2": {{1, "a"}, {2, "a"}, {3, "b"}, {4, "b"}, {5, "c"}, {6, "c"}},
		"2 racks of 2": {{1, "x"}, {2, "y"}, {3, "x"}, {4, "y"}},
		"uneven":       {{1, "a"}, {2, "a"}, {3, "a"}, {4, "b"}},
		"some no rack": {{1, ""}, {2, "a"}, {3, ""}, {4, "a"}},
	}
	for name, brokers := range layouts {
		n := len(brokers)
		for rf := 1; rf <= n; rf++ {
			for start := range n {
				asg := place(brokers, 0, 4*n, rf, start)
				leaders, replicas := checkPlacement(t, brokers, asg, rf)
				for _, b := range brokers {
					if leaders[b.id] != 4 {
						t.Fatalf("%s rf=%d start=%d: leaders %v", name, rf, start, leaders)
					}
				}
				if name == "3 racks of 2" || name == "2 racks of 2" {
					// Even racks: replicas as even as leaders.
					lo, hi := 1<<30, 0
					for _, b := range brokers {
						lo, hi = min(lo, replicas[b.id]), max(hi, replicas[b.id])
					}
					if hi-lo > 2 {
						t.Fatalf("%s rf=%d start=%d: replicas per broker %v", name, rf, start, replicas)
					}
				}
			}
		}
	}
}

func TestPlaceRackAwareContinuesNumbering(t *testing.T) {
	brokers := []placementBroker{{1, "a"}, {2, "b"}, {3, "a"}, {4, "b"}, {5, "c"}}
	all := place(brokers, 0, 12, 3, 2)
	tail := place(brokers, 5, 7, 3, 2)
	for i, r := range tail {
		if !slices.Equal(r, all[5+i]) {
			t.Fatalf("partition %d placed %v when added later, %v when created", 5+i, r, all[5+i])
		}
	}
}

func TestPlacementOnlyOnEligibleBrokers(t *testing.T) {
	m := newMachine(t)
	epochs := m.live(1, 2, 3, 4)
	m.ok(cmdFenceBroker, fenceBrokerCmd{brokerRef{2, epochs[2]}})
	m.ok(cmdBeginControlledShutdown, controlledShutdownCmd{brokerRef{3, epochs[3]}})
	m.register(5, 1, "") // registered, never unfenced
	got := m.im.placementBrokers()
	if len(got) != 2 || got[0].id != 1 || got[1].id != 4 {
		t.Fatalf("placement brokers %v, want 1 and 4", got)
	}
	if _, err := brokersFor(m.im, 3); !errors.Is(err, ErrInvalidReplicationFactor) {
		t.Fatalf("rf 3 over 2 eligible brokers: %v", err)
	}
	brokers, err := brokersFor(m.im, 2)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range place(brokers, 0, 10, 2, 1) {
		for _, id := range r {
			if id != 1 && id != 4 {
				t.Fatalf("replica on broker %d: %v", id, r)
			}
		}
	}
}
