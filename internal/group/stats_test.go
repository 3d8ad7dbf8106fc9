package group

import (
	"testing"
	"time"
)

func TestStatsCountsStatesAndOffsets(t *testing.T) {
	c := &Coordinator{groups: map[string]*group{}}
	now := time.Now()
	a := newGroup("a", 0, now)
	a.offsets[tp{"t", 1}] = Offset{Offset: 7}
	b := newGroup("b", 0, now)
	b.transition(Stable, now)
	d := newGroup("d", 0, now)
	d.transition(Dead, now)
	d.offsets[tp{"t", 0}] = Offset{Offset: 1}
	c.groups["a"], c.groups["b"], c.groups["d"] = a, b, d
	st := c.Stats()
	if st.States[Empty.String()] != 1 || st.States[Stable.String()] != 1 || len(st.States) != 2 {
		t.Fatalf("states %v", st.States)
	}
	if len(st.Offsets) != 1 || st.Offsets[0] != (CommittedOffset{Group: "a", Topic: "t", Partition: 1, Offset: 7}) {
		t.Fatalf("offsets %v", st.Offsets)
	}
}
