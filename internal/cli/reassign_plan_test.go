package cli

import (
	"slices"
	"testing"
)

func TestPlanAddBrokerMovesAShare(t *testing.T) {
	var parts []planPartition
	for p := range int32(6) {
		parts = append(parts, planPartition{Topic: "t", Partition: p, Replicas: []int32{p%3 + 1, (p+1)%3 + 1, (p+2)%3 + 1}})
	}
	brokers := []planBroker{{ID: 1}, {ID: 2}, {ID: 3}, {ID: 4}}
	got, err := plan(parts, brokers, true)
	if err != nil {
		t.Fatal(err)
	}
	load, leads, moved := map[int32]int{}, map[int32]int{}, 0
	for i, r := range got {
		if len(r) != 3 {
			t.Fatalf("partition %d: %v", i, r)
		}
		for _, b := range r {
			load[b]++
			if !slices.Contains(parts[i].Replicas, b) {
				moved++
			}
		}
		leads[r[0]]++
	}
	for b := int32(1); b <= 4; b++ {
		if load[b] < 4 || load[b] > 5 {
			t.Errorf("broker %d holds %d replicas: %v", b, load[b], got)
		}
		if leads[b] > 2 {
			t.Errorf("broker %d leads %d partitions: %v", b, leads[b], got)
		}
	}
	if moved != load[4] {
		t.Errorf("%d replicas moved, but broker 4 only gained %d: more moves than needed", moved, load[4])
	}
}

func TestPlanDrainAndRacks(t *testing.T) {
	parts := []planPartition{
		{Topic: "a", Partition: 0, Replicas: []int32{1, 2}},
		{Topic: "a", Partition: 1, Replicas: []int32{2, 1}},
		{Topic: "b", Partition: 0, Replicas: []int32{1}},
	}
	brokers := []planBroker{{ID: 2, Rack: "r1"}, {ID: 3, Rack: "r1"}, {ID: 4, Rack: "r2"}}
	got, err := plan(parts, brokers, true)
	if err != nil {
		t.Fatal(err)
	}
	for i, r := range got {
		if slices.Contains(r, 1) {
			t.Errorf("partition %d still on the drained broker: %v", i, r)
		}
		if len(r) == 2 && !slices.Contains(r, 4) {
			t.Errorf("partition %d not spread over both racks: %v", i, r)
		}
	}
	if _, err := plan([]planPartition{{Topic: "c", Replicas: []int32{1, 2, 3}}}, brokers[:2], true); err == nil {
		t.Error("rf 3 over two brokers planned")
	}
}
