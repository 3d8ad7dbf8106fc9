package broker

import (
	"testing"
	"time"
)

type countingEvents struct{ produced, fetched, isr, other int }

func (c *countingEvents) Produced(string, int64, int64) { c.produced++ }
func (c *countingEvents) Fetched(string, int64)         { c.fetched++ }
func (c *countingEvents) ISRChanged(int, int)           { c.isr++ }
func (c *countingEvents) ReplicatedOut(string, int64)   { c.other++ }
func (c *countingEvents) ReplicatedIn(string, int64)    { c.other++ }
func (c *countingEvents) LogFlushed(time.Duration)      { c.other++ }

// The traffic totals add up every topic's bytes, and the metrics still
// see each event.
func TestTrafficObserver(t *testing.T) {
	var tr Traffic
	next := &countingEvents{}
	o := trafficObserver{eventObserver: next, traffic: &tr}
	o.Produced("a", 100, 2)
	o.Produced("b", 50, 1)
	o.Fetched("a", 30)
	o.ISRChanged(2, 1)
	o.ReplicatedIn("a", 10)
	o.ReplicatedOut("a", 10)
	o.LogFlushed(time.Millisecond)
	if in, out := tr.Totals(); in != 150 || out != 30 {
		t.Errorf("totals in %d out %d, want 150 and 30", in, out)
	}
	if next.produced != 2 || next.fetched != 1 || next.isr != 1 || next.other != 3 {
		t.Errorf("passed on %+v", *next)
	}
}
