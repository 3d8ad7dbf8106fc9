package broker

import "testing"

type countingEvents struct{ produced, fetched, isr int }

func (c *countingEvents) Produced(string, int64, int64) { c.produced++ }
func (c *countingEvents) Fetched(string, int64)         { c.fetched++ }
func (c *countingEvents) ISRChanged(int, int)           { c.isr++ }

// The traffic totals add up every topic's bytes, and the metrics still
// see each event.
func TestTrafficObserver(t *testing.T) {
	var tr Traffic
	next := &countingEvents{}
	o := trafficObserver{next: next, traffic: &tr}
	o.Produced("a", 100, 2)
	o.Produced("b", 50, 1)
	o.Fetched("a", 30)
	o.ISRChanged(2, 1)
	if in, out := tr.Totals(); in != 150 || out != 30 {
		t.Errorf("totals in %d out %d, want 150 and 30", in, out)
	}
	if next.produced != 2 || next.fetched != 1 || next.isr != 1 {
		t.Errorf("passed on %+v", *next)
	}
}
