package server

import (
	"bytes"
	"encoding/binary"
	"net"
	"slices"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// wantAPIVersions is the answer testAPIs must produce, at version v.
func wantAPIVersions(v int16, errCode int16) []byte {
	resp := kmsg.NewPtrApiVersionsResponse()
	resp.SetVersion(v)
	resp.ErrorCode = errCode
	for _, k := range []int16{0, 2, 3, 10, 12, 14, 18} {
		r := testAPIs[k]
		if k == 0 {
			r[0] = 0 // Produce is listed from v0 for librdkafka (see advertisedMin)
		}
		resp.ApiKeys = append(resp.ApiKeys, kmsg.ApiVersionsResponseApiKey{ApiKey: k, MinVersion: r[0], MaxVersion: r[1]})
	}
	return resp.AppendTo(nil)
}

func TestApiVersionsSupportedVersions(t *testing.T) {
	ts := startServer(t, newTestHandler(), nil)
	c := dial(t, ts.addr)
	for v := int16(0); v <= 3; v++ {
		req := kmsg.NewPtrApiVersionsRequest()
		req.ClientSoftwareName, req.ClientSoftwareVersion = "weir-test", "1.0"
		send(t, c, encodeRequest(req, v, int32(100+v), strp("client")))
		corr, body := readResponse(t, c)
		if corr != int32(100+v) {
			t.Fatalf("v%d: correlation id %d, want %d", v, corr, 100+v)
		}
		// Exact bytes: for v3 this proves there is no tagged-field byte
		// after the correlation id (the response header is never flexible).
		if want := wantAPIVersions(v, 0); !bytes.Equal(body, want) {
			t.Fatalf("v%d: body\n%x\nwant\n%x", v, body, want)
		}
		resp := kmsg.NewPtrApiVersionsResponse()
		resp.SetVersion(v)
		if err := resp.ReadFrom(body); err != nil {
			t.Fatalf("v%d: decode: %v", v, err)
		}
		if resp.ErrorCode != 0 || len(resp.ApiKeys) != len(testAPIs) {
			t.Fatalf("v%d: error %d, %d keys", v, resp.ErrorCode, len(resp.ApiKeys))
		}
	}
	if n := ts.h.total(); n != 0 {
		t.Fatalf("handler called %d times; ApiVersions must be answered by the server", n)
	}
}

func TestApiVersionsNewerVersionFallsBackToV0(t *testing.T) {
	ts := startServer(t, newTestHandler(), nil)
	c := dial(t, ts.addr)
	for i, v := range []int16{4, 5, 300} {
		corr := int32(200 + i)
		var frame []byte
		if v <= 5 {
			req := kmsg.NewPtrApiVersionsRequest()
			req.ClientSoftwareName, req.ClientSoftwareVersion = "weir-test", "1.0"
			frame = encodeRequest(req, v, corr, strp("client"))
		} else {
			// A version from the future: the body is unknown to us and
			// must not matter.
			hdr := binary.BigEndian.AppendUint16(nil, 18)
			hdr = binary.BigEndian.AppendUint16(hdr, uint16(v))
			hdr = binary.BigEndian.AppendUint32(hdr, uint32(corr))
			hdr = binary.BigEndian.AppendUint16(hdr, 0xffff)
			frame = rawFrame(append(hdr, 0xde, 0xad, 0xbe, 0xef))
		}
		send(t, c, frame)
		gotCorr, body := readResponse(t, c)
		if gotCorr != corr {
			t.Fatalf("v%d: correlation id %d, want %d", v, gotCorr, corr)
		}
		if want := wantAPIVersions(0, 35); !bytes.Equal(body, want) {
			t.Fatalf("v%d: body\n%x\nwant v0 format with UNSUPPORTED_VERSION\n%x", v, body, want)
		}
	}
	// The client retries with a version we list, on the same connection.
	send(t, c, encodeRequest(kmsg.NewPtrApiVersionsRequest(), 3, 9, nil))
	if corr, body := readResponse(t, c); corr != 9 || !bytes.Equal(body, wantAPIVersions(3, 0)) {
		t.Fatalf("retry at v3: correlation id %d, body %x", corr, body)
	}
}

func TestFlexibleResponseHasTaggedHeader(t *testing.T) {
	ts := startServer(t, newTestHandler(), nil)
	c := dial(t, ts.addr)
	for _, v := range []int16{1, 8, 9, 12} {
		send(t, c, encodeRequest(kmsg.NewPtrMetadataRequest(), v, int32(v), strp("x")))
		corr, body := readResponse(t, c)
		resp := kmsg.NewPtrMetadataResponse()
		resp.SetVersion(v)
		want := resp.AppendTo(nil)
		if resp.IsFlexible() {
			want = append([]byte{0}, want...) // response header v1
		}
		if corr != int32(v) || !bytes.Equal(body, want) {
			t.Fatalf("Metadata v%d: correlation id %d, body %x, want %x", v, corr, body, want)
		}
	}
	if got := ts.h.count(3); got != 4 {
		t.Fatalf("handler saw %d Metadata requests, want 4", got)
	}
}

func TestRequestContext(t *testing.T) {
	h := newTestHandler()
	ts := startServer(t, h, func(cfg *Config) {
		cfg.Listeners = []Listener{{Name: "INTERNAL", Addr: "127.0.0.1:0"}, {Name: "EXTERNAL", Addr: "127.0.0.1:0"}}
	})
	for _, name := range []string{"INTERNAL", "EXTERNAL"} {
		c := dial(t, ts.srv.Addr(name).String())
		send(t, c, encodeRequest(kmsg.NewPtrMetadataRequest(), 1, 1, nil))
		readResponse(t, c)
		send(t, c, encodeRequest(kmsg.NewPtrMetadataRequest(), 9, 2, strp("my-client")))
		readResponse(t, c)
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if want := []string{"", "my-client", "", "my-client"}; !slices.Equal(h.clientIDs, want) {
		t.Fatalf("client ids %q, want %q", h.clientIDs, want)
	}
	if want := []string{"INTERNAL", "INTERNAL", "EXTERNAL", "EXTERNAL"}; !slices.Equal(h.listeners, want) {
		t.Fatalf("listeners %q, want %q", h.listeners, want)
	}
}

func TestPipelinedRequestsAnsweredInOrder(t *testing.T) {
	ts := startServer(t, newTestHandler(), nil)
	c := dial(t, ts.addr)
	const n = 60
	var frames [][]byte
	var want []int32
	for i := int32(0); i < n; i++ {
		corr := 1000 + i*7
		var req kmsg.Request
		var v int16
		switch i % 3 {
		case 0:
			req, v = kmsg.NewPtrMetadataRequest(), 12
		case 1:
			req, v = kmsg.NewPtrApiVersionsRequest(), 3
		default:
			p := kmsg.NewPtrProduceRequest()
			p.Acks = 1
			req, v = p, 7
		}
		frames = append(frames, encodeRequest(req, v, corr, strp("pipeliner")))
		want = append(want, corr)
	}
	send(t, c, frames...) // all at once: the server reads ahead
	for i, w := range want {
		if corr, _ := readResponse(t, c); corr != w {
			t.Fatalf("response %d: correlation id %d, want %d", i, corr, w)
		}
	}
	if m := ts.h.maxRunning.Load(); m != 1 {
		t.Fatalf("at most %d handler calls ran at once, want 1 (requests on a connection are sequential)", m)
	}
}

func TestNilResponseSendsNothing(t *testing.T) {
	ts := startServer(t, newTestHandler(), nil)
	c := dial(t, ts.addr)
	acks0 := kmsg.NewPtrProduceRequest()
	acks0.Acks = 0
	send(t, c,
		encodeRequest(acks0, 7, 1, nil),
		encodeRequest(acks0, 9, 2, nil),
		encodeRequest(kmsg.NewPtrMetadataRequest(), 4, 3, nil))
	if corr, _ := readResponse(t, c); corr != 3 {
		t.Fatalf("first response has correlation id %d, want 3 (acks=0 produce answers nothing)", corr)
	}
	if got := ts.h.count(0); got != 2 {
		t.Fatalf("handler saw %d produce requests, want 2", got)
	}
}

func TestHandlerContextCancelledOnClientClose(t *testing.T) {
	h := newTestHandler()
	ts := startServer(t, h, nil)
	c := dial(t, ts.addr)
	send(t, c, encodeRequest(kmsg.NewPtrListOffsetsRequest(), 1, 1, nil))
	waitFor(t, h.started, "ListOffsets handler to start")
	c.Close()
	waitFor(t, h.cancelled, "handler context to be cancelled after the client closed")
	expectServing(t, ts.addr)
}

func TestServeStopsConnectionsAndWaitsForHandlers(t *testing.T) {
	h := newTestHandler()
	ts := startServer(t, h, nil)
	c := dial(t, ts.addr)
	send(t, c, encodeRequest(kmsg.NewPtrListOffsetsRequest(), 1, 1, nil))
	waitFor(t, h.started, "ListOffsets handler to start")
	ts.stop(t)
	// Serve has returned, so the handler has returned already.
	select {
	case <-h.cancelled:
	default:
		t.Fatal("Serve returned before the running handler saw its context cancelled")
	}
	if h.running.Load() != 0 {
		t.Fatal("a handler is still running after Serve returned")
	}
	expectClosed(t, c)
	if _, err := dialOnce(ts.addr); err == nil {
		t.Fatal("listener still accepts after Serve returned")
	}
}

func TestCloseStopsServe(t *testing.T) {
	ts := startServer(t, newTestHandler(), nil)
	c := dial(t, ts.addr)
	send(t, c, encodeRequest(kmsg.NewPtrMetadataRequest(), 1, 1, nil))
	readResponse(t, c)
	if err := ts.srv.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	select {
	case err := <-ts.done:
		if err != nil {
			t.Fatalf("Serve returned %v after Close", err)
		}
		close(ts.done)
	case <-time.After(waitLimit):
		t.Fatal("Serve did not return after Close")
	}
	expectClosed(t, c)
}

func TestIdleConnectionClosed(t *testing.T) {
	const idle = 300 * time.Millisecond
	ts := startServer(t, newTestHandler(), func(cfg *Config) { cfg.ConnectionsMaxIdle = idle })
	c := dial(t, ts.addr)
	start := time.Now()
	send(t, c, encodeRequest(kmsg.NewPtrMetadataRequest(), 1, 1, nil))
	readResponse(t, c)
	expectClosed(t, c)
	if el := time.Since(start); el < idle {
		t.Fatalf("connection closed after %v, before the idle limit %v", el, idle)
	}
}

func TestBusyConnectionNotIdle(t *testing.T) {
	// A request in progress for longer than the idle limit (a long-poll
	// fetch, say) does not make the connection idle.
	const idle = 200 * time.Millisecond
	h := newTestHandler()
	h.hold = 4 * idle
	ts := startServer(t, h, func(cfg *Config) { cfg.ConnectionsMaxIdle = idle })
	c := dial(t, ts.addr)
	send(t, c, encodeRequest(kmsg.NewPtrListOffsetsRequest(), 1, 5, nil))
	if corr, _ := readResponse(t, c); corr != 5 {
		t.Fatalf("correlation id %d, want 5", corr)
	}
	select {
	case <-h.cancelled:
		t.Fatal("handler context cancelled while the request was in progress")
	default:
	}
}

func TestHandlerPanicClosesOnlyThatConnection(t *testing.T) {
	ts := startServer(t, newTestHandler(), nil)
	other := dial(t, ts.addr)
	c := dial(t, ts.addr)
	send(t, c, encodeRequest(kmsg.NewPtrFindCoordinatorRequest(), 1, 1, nil))
	expectClosed(t, c)
	send(t, other, encodeRequest(kmsg.NewPtrMetadataRequest(), 1, 2, nil))
	if corr, _ := readResponse(t, other); corr != 2 {
		t.Fatalf("other connection: correlation id %d, want 2", corr)
	}
	expectServing(t, ts.addr)
}

func TestHandlerErrorClosesConnection(t *testing.T) {
	ts := startServer(t, newTestHandler(), nil)
	c := dial(t, ts.addr)
	send(t, c, encodeRequest(kmsg.NewPtrHeartbeatRequest(), 0, 1, nil))
	expectClosed(t, c)
	expectServing(t, ts.addr)
}

func TestWrongResponseKindClosesConnection(t *testing.T) {
	ts := startServer(t, newTestHandler(), nil)
	c := dial(t, ts.addr)
	send(t, c, encodeRequest(kmsg.NewPtrSyncGroupRequest(), 3, 1, nil))
	expectClosed(t, c)
	expectServing(t, ts.addr)
}

func waitFor(t *testing.T, ch <-chan struct{}, what string) {
	t.Helper()
	select {
	case <-ch:
	case <-time.After(waitLimit):
		t.Fatalf("timed out waiting for %s", what)
	}
}

func TestPipelinedLargeRequests(t *testing.T) {
	// More bytes in flight than the read-ahead budget: the reader must
	// pause and resume without losing or reordering anything.
	ts := startServer(t, newTestHandler(), nil)
	c := dial(t, ts.addr)
	const n = 24
	big := bytes.Repeat([]byte{0xab}, 200<<10)
	var frames [][]byte
	for i := int32(0); i < n; i++ {
		p := kmsg.NewPtrProduceRequest()
		p.Acks = 1
		p.Topics = []kmsg.ProduceRequestTopic{{Topic: "t", Partitions: []kmsg.ProduceRequestTopicPartition{{Records: big}}}}
		frames = append(frames, encodeRequest(p, 9, i, nil))
	}
	go func() {
		// Written concurrently with the reads below; a failed write
		// shows up as a missing response.
		_, _ = c.Write(bytes.Join(frames, nil))
	}()
	for i := int32(0); i < n; i++ {
		if corr, _ := readResponse(t, c); corr != i {
			t.Fatalf("response %d: correlation id %d", i, corr)
		}
	}
	if got := ts.h.count(0); got != n {
		t.Fatalf("handler saw %d produce requests, want %d", got, n)
	}
}

// While a large Produce request is handled, the next one is read: an
// idempotent producer's in-flight requests are each larger than the
// read-ahead budget, and reading and handling them in turn halved its
// throughput.
func TestNextLargeRequestReadWhileHandling(t *testing.T) {
	h := newTestHandler()
	h.produceHold, h.produceStarted = make(chan struct{}), make(chan struct{}, 4)
	ts := startServer(t, h, nil)
	c := dial(t, ts.addr)
	big := bytes.Repeat([]byte{0xab}, 2*readAheadBytes)
	var frames [][]byte
	for i := int32(0); i < 3; i++ {
		p := kmsg.NewPtrProduceRequest()
		p.Acks = -1 // never answered by the reader itself (conn.inline)
		p.Topics = []kmsg.ProduceRequestTopic{{Topic: "t", Partitions: []kmsg.ProduceRequestTopicPartition{{Records: big}}}}
		frames = append(frames, encodeRequest(p, 9, i, nil))
	}
	go func() { _, _ = c.Write(bytes.Join(frames, nil)) }() // a failed write shows as a missing response
	waitFor(t, h.produceStarted, "the first Produce to be handled")
	// The first request is held by its handler; the second is read in
	// full meanwhile (its memory charged).
	waitUntil(t, "the second request read while the first is handled", func() bool {
		return ts.srv.pool.inUse() >= int64(2*len(big))
	})
	close(h.produceHold)
	for i := int32(0); i < 3; i++ {
		if corr, _ := readResponse(t, c); corr != i {
			t.Fatalf("response %d: correlation id %d", i, corr)
		}
	}
}

// A client that sends requests and closes at once (an acks=0 producer
// exiting) still has them all handled, as Kafka does; only the answers are
// dropped. The long poll queued first ends when the client leaves instead
// of holding the others up.
func TestRequestsSentBeforeCloseAreHandled(t *testing.T) {
	h := newTestHandler()
	ts := startServer(t, h, nil)
	c := dial(t, ts.addr)
	acks0 := kmsg.NewPtrProduceRequest()
	acks0.Acks = 0
	send(t, c,
		encodeRequest(kmsg.NewPtrListOffsetsRequest(), 1, 1, nil),
		encodeRequest(acks0, 7, 2, nil),
		encodeRequest(acks0, 7, 3, nil),
		encodeRequest(acks0, 7, 4, nil))
	waitFor(t, h.started, "ListOffsets handler to start")
	c.Close()
	waitFor(t, h.cancelled, "the long poll to end after the client closed")
	deadline := time.Now().Add(30 * time.Second)
	for h.count(0) != 3 {
		if time.Now().After(deadline) {
			t.Fatalf("handler saw %d of the 3 produce requests sent before the close", h.count(0))
		}
		time.Sleep(10 * time.Millisecond)
	}
	expectServing(t, ts.addr)
}

// TestStopAcceptingKeepsOpenConnections: after StopAccepting a dial is
// refused, while a connection opened before is still answered until
// Serve's context ends.
func TestStopAcceptingKeepsOpenConnections(t *testing.T) {
	ts := startServer(t, newTestHandler(), nil)
	c := dial(t, ts.addr)
	roundTrip := func(corr int32) {
		t.Helper()
		send(t, c, encodeRequest(kmsg.NewPtrApiVersionsRequest(), 0, corr, strp("client")))
		if got, _ := readResponse(t, c); got != corr {
			t.Fatalf("correlation id %d, want %d", got, corr)
		}
	}
	// Answered first, so the server has accepted it: closing a listener
	// resets the connections still waiting in its backlog.
	roundTrip(6)
	if err := ts.srv.StopAccepting(); err != nil {
		t.Fatal(err)
	}
	if nc, err := net.DialTimeout("tcp", ts.addr, waitLimit); err == nil {
		nc.Close()
		t.Fatal("a dial after StopAccepting was accepted")
	}
	roundTrip(7)
	ts.stop(t) // Serve still returns, the listeners already closed
}
