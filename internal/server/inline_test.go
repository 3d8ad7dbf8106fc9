package server

import (
	"net"
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"
)

func loneProduce(acks int16, corr int32) []byte {
	p := kmsg.NewPtrProduceRequest()
	p.Acks = acks
	return encodeRequest(p, 9, corr, nil)
}

// holdingServer starts a server whose Produce handler holds until
// h.produceHold is closed, and dials it.
func holdingServer(t *testing.T) (*testHandler, *testServer, net.Conn) {
	t.Helper()
	h := newTestHandler()
	h.produceHold, h.produceStarted = make(chan struct{}), make(chan struct{}, 4)
	ts := startServer(t, h, nil)
	return h, ts, dial(t, ts.addr)
}

// heldLoneProduce sends a holdingServer one Produce (correlation id 1)
// with acks and waits for the handler to hold it.
func heldLoneProduce(t *testing.T, acks int16) (*testHandler, *testServer, net.Conn) {
	t.Helper()
	h, ts, c := holdingServer(t)
	send(t, c, loneProduce(acks, 1))
	waitFor(t, h.produceStarted, "the Produce to be handled")
	return h, ts, c
}

// A Produce sent alone, the client waiting for it, is answered by the
// reader; a request arriving meanwhile waits its turn and is answered
// after it, in order.
func TestReaderAnswersLoneProduce(t *testing.T) {
	h, ts, c := heldLoneProduce(t, 1)
	if n := ts.srv.inlined.Load(); n != 1 {
		t.Fatalf("%d requests answered by the reader, want 1 (the lone Produce)", n)
	}
	// Sent while the reader is busy with the Produce: read after it.
	send(t, c, encodeRequest(kmsg.NewPtrMetadataRequest(), 12, 2, nil), loneProduce(1, 3))
	close(h.produceHold)
	for _, want := range []int32{1, 2, 3} {
		if corr, _ := readResponse(t, c); corr != want {
			t.Fatalf("correlation id %d, want %d", corr, want)
		}
	}
	if m := h.maxRunning.Load(); m != 1 {
		t.Fatalf("at most %d handler calls ran at once, want 1", m)
	}
}

// Produce requests pipelined by the client are answered by the reader
// one after the other while the worker stays idle, in order, one at a
// time.
func TestPipelinedProduceAnsweredByReader(t *testing.T) {
	h, ts, c := holdingServer(t)
	send(t, c, loneProduce(1, 1), loneProduce(1, 2), loneProduce(0, 3), loneProduce(1, 4))
	waitFor(t, h.produceStarted, "the first Produce to be handled")
	close(h.produceHold)
	for _, want := range []int32{1, 2, 4} { // acks=0 answers nothing
		if corr, _ := readResponse(t, c); corr != want {
			t.Fatalf("correlation id %d, want %d", corr, want)
		}
	}
	if n := ts.srv.inlined.Load(); n != 4 {
		t.Fatalf("%d requests answered by the reader, want 4", n)
	}
	if m := h.maxRunning.Load(); m != 1 {
		t.Fatalf("at most %d handler calls ran at once, want 1", m)
	}
}

// A Produce read right behind a request for the worker is answered after
// it, whichever goroutine takes it.
func TestProduceBehindWorkerRequestInOrder(t *testing.T) {
	ts := startServer(t, newTestHandler(), nil)
	c := dial(t, ts.addr)
	send(t, c, encodeRequest(kmsg.NewPtrMetadataRequest(), 12, 1, nil), loneProduce(1, 2))
	for _, want := range []int32{1, 2} {
		if corr, _ := readResponse(t, c); corr != want {
			t.Fatalf("correlation id %d, want %d", corr, want)
		}
	}
}

// Only acks 0 and 1 are answered by the reader: an acks=-1 Produce may
// wait for followers, and the reader must go on reading meanwhile.
func TestAcksAllProduceGoesToWorker(t *testing.T) {
	ts := startServer(t, newTestHandler(), nil)
	c := dial(t, ts.addr)
	send(t, c, loneProduce(-1, 1))
	if corr, _ := readResponse(t, c); corr != 1 {
		t.Fatalf("correlation id %d, want 1", corr)
	}
	if n := ts.srv.inlined.Load(); n != 0 {
		t.Fatalf("%d requests answered by the reader, want 0", n)
	}
}

// advisedHandler advises every acks 1 and -1 Produce as waiting or not.
type advisedHandler struct {
	*testHandler
	mayWait bool
}

func (h advisedHandler) ProduceMayWait(*kmsg.ProduceRequest) bool { return h.mayWait }

// A Produce the handler advises cannot wait is answered by the reader;
// one that may wait (acks=-1 waiting for followers, or any acks on a
// leader whose log refuses writes) goes to the worker, and what follows
// it waits its turn.
func TestAdvisedProduce(t *testing.T) {
	for _, acks := range []int16{-1, 1} {
		for _, mayWait := range []bool{false, true} {
			h := newTestHandler()
			ts := startServerWith(t, advisedHandler{h, mayWait}, h, nil)
			c := dial(t, ts.addr)
			send(t, c, loneProduce(acks, 1), loneProduce(acks, 2), loneProduce(0, 3), loneProduce(acks, 4))
			for _, want := range []int32{1, 2, 4} {
				if corr, _ := readResponse(t, c); corr != want {
					t.Fatalf("correlation id %d, want %d", corr, want)
				}
			}
			want := int64(4)
			if mayWait {
				want = 0 // the acks=0 one waits its turn behind the worker's
			}
			if n := ts.srv.inlined.Load(); n != want {
				t.Errorf("acks %d, may wait %v: %d requests answered by the reader, want %d", acks, mayWait, n, want)
			}
		}
	}
}

// A lone acks=0 Produce handled by the reader sends nothing, and the
// connection goes on.
func TestReaderHandlesLoneAcksZero(t *testing.T) {
	h, ts, c := heldLoneProduce(t, 0)
	close(h.produceHold)
	send(t, c, encodeRequest(kmsg.NewPtrMetadataRequest(), 12, 2, nil))
	if corr, _ := readResponse(t, c); corr != 2 {
		t.Fatalf("first response has correlation id %d, want 2 (acks=0 answers nothing)", corr)
	}
	if n := ts.srv.inlined.Load(); n != 1 {
		t.Fatalf("%d requests answered by the reader, want 1", n)
	}
}

// The client leaving while the reader handles its Produce: the Produce
// is still handled, and the server goes on serving others.
func TestClientGoneDuringReaderProduce(t *testing.T) {
	h, ts, c := heldLoneProduce(t, 1)
	c.Close()
	close(h.produceHold)
	waitUntil(t, "the Produce handled", func() bool { return h.count(0) == 1 && h.running.Load() == 0 })
	expectServing(t, ts.addr)
}
