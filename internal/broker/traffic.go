package broker

import "sync/atomic"

// Traffic is this broker's record bytes in (appended for producers) and
// out (sent to consumers) since it started, all topics together: the
// totals of the metrics' BytesInPerSec and BytesOutPerSec, counted at the
// same two events (the eventObserver calls) with one atomic add each,
// whether or not the metrics listener is on. The process that runs the
// broker owns it and reads it (the web console's throughput graph) at
// no cost that grows with topics or partitions.
type Traffic struct {
	in, out atomic.Int64
}

// Totals is the bytes in and out so far.
func (t *Traffic) Totals() (in, out int64) { return t.in.Load(), t.out.Load() }

// trafficObserver adds the produce and fetch events to a Traffic and
// passes every event on.
type trafficObserver struct {
	eventObserver
	traffic *Traffic
}

func (o trafficObserver) Produced(topic string, bytes, records int64) {
	o.traffic.in.Add(bytes)
	o.eventObserver.Produced(topic, bytes, records)
}

func (o trafficObserver) Fetched(topic string, bytes int64) {
	o.traffic.out.Add(bytes)
	o.eventObserver.Fetched(topic, bytes)
}
