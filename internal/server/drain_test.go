package server

import (
	"context"
	"testing"
	"time"
)

// Drain returns once the requests in flight on every connection are
// answered, and not before: the held Produce keeps it waiting (up to its
// context), and once released it is answered on its open connection.
// Requests keep being read and answered meanwhile, and a connection that
// closes with a request unanswered no longer counts.
func TestDrainWaitsForRequestsInFlight(t *testing.T) {
	h, ts, c := heldLoneProduce(t, 1)
	short, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	if ts.srv.Drain(short) {
		t.Fatal("Drain returned with a Produce held")
	}
	drained := make(chan bool, 1)
	go func() { drained <- ts.srv.Drain(context.Background()) }()
	close(h.produceHold)
	if corr, _ := readResponse(t, c); corr != 1 {
		t.Fatalf("correlation id %d, want 1", corr)
	}
	select {
	case ok := <-drained:
		if !ok {
			t.Fatal("Drain failed after the answer")
		}
	case <-time.After(waitLimit):
		t.Fatal("Drain did not return once the Produce was answered")
	}
	if n := ts.srv.busy.Load(); n != 0 {
		t.Fatalf("%d requests counted in flight after the answer", n)
	}

	// A connection closed by the client while its request is held.
	h2, ts2, c2 := heldLoneProduce(t, 1)
	c2.Close()
	close(h2.produceHold)
	ctx, cancel2 := context.WithTimeout(context.Background(), waitLimit)
	defer cancel2()
	if !ts2.srv.Drain(ctx) {
		t.Fatalf("Drain still waiting for a request of a closed connection (%d counted)", ts2.srv.busy.Load())
	}
}
