package server

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// waitLimit bounds every wait in these tests: generous, because the
// machine is slow and shared.
const waitLimit = 20 * time.Second

// testAPIs is what the test handler claims to support. ApiVersions is
// capped at v3 so that v4 exercises the KIP-511 fallback.
var testAPIs = map[int16][2]int16{
	0:  {3, 9},  // Produce
	2:  {0, 5},  // ListOffsets: blocks until its context ends
	3:  {0, 12}, // Metadata
	10: {0, 4},  // FindCoordinator: panics
	12: {0, 4},  // Heartbeat: returns an error
	14: {0, 5},  // SyncGroup: answers with the wrong response type
	18: {0, 3},  // ApiVersions
}

// testHandler answers Metadata and Produce with empty responses (nothing
// for acks=0), blocks ListOffsets until its context is cancelled or hold
// elapses (a wait it tells RequestContext.Waited), panics on
// FindCoordinator, fails Heartbeat and answers SyncGroup with a Metadata
// response. It counts calls and the highest number of concurrent calls.
type testHandler struct {
	mu        sync.Mutex
	calls     map[int16]int
	clientIDs []string
	listeners []string

	running    atomic.Int32
	maxRunning atomic.Int32

	hold      time.Duration // ListOffsets: answer after this long (0: only on cancel)
	bigTopics int           // Metadata: answer with this many 200-byte topic names
	started   chan struct{} // ListOffsets: receives when a call starts
	cancelled chan struct{} // ListOffsets: receives when a call saw its ctx end

	fetch func(*kmsg.FetchRequest) kmsg.Response // Fetch: the answer (region_test.go)

	// produceHold, when set, holds every Produce call until it is closed;
	// produceStarted then receives when a call starts.
	produceHold    chan struct{}
	produceStarted chan struct{}
}

func newTestHandler() *testHandler {
	return &testHandler{
		calls:     make(map[int16]int),
		started:   make(chan struct{}, 16),
		cancelled: make(chan struct{}, 16),
	}
}

func (h *testHandler) Handle(ctx context.Context, rc *RequestContext, req kmsg.Request) (kmsg.Response, error) {
	n := h.running.Add(1)
	defer h.running.Add(-1)
	for {
		m := h.maxRunning.Load()
		if n <= m || h.maxRunning.CompareAndSwap(m, n) {
			break
		}
	}
	h.mu.Lock()
	h.calls[req.Key()]++
	h.clientIDs = append(h.clientIDs, rc.ClientID)
	h.listeners = append(h.listeners, rc.Listener)
	h.mu.Unlock()

	switch r := req.(type) {
	case *kmsg.MetadataRequest:
		resp := r.ResponseKind().(*kmsg.MetadataResponse)
		for i := range h.bigTopics {
			t := kmsg.NewMetadataResponseTopic()
			t.Topic = kmsg.StringPtr(fmt.Sprintf("%0200d", i))
			resp.Topics = append(resp.Topics, t)
		}
		return resp, nil
	case *kmsg.ProduceRequest:
		if h.produceHold != nil {
			h.produceStarted <- struct{}{}
			<-h.produceHold
		}
		if r.Acks == 0 {
			return nil, nil
		}
		return r.ResponseKind(), nil
	case *kmsg.ListOffsetsRequest:
		rc.SetSubname("ListOffsetsHeld")
		h.started <- struct{}{}
		var timeout <-chan time.Time
		if h.hold > 0 {
			timeout = time.After(h.hold)
		}
		waitStart := time.Now()
		select {
		case <-ctx.Done():
			h.cancelled <- struct{}{}
			return nil, ctx.Err()
		case <-timeout:
			// A wait, as the broker's Waiter reports its own.
			rc.Waited(time.Since(waitStart))
			return r.ResponseKind(), nil
		}
	case *kmsg.FetchRequest:
		if h.fetch != nil {
			return h.fetch(r), nil
		}
	case *kmsg.FindCoordinatorRequest:
		panic("test handler: FindCoordinator always panics")
	case *kmsg.HeartbeatRequest:
		return nil, errors.New("test handler: Heartbeat always fails")
	case *kmsg.SyncGroupRequest:
		return kmsg.NewPtrMetadataResponse(), nil // the wrong kind
	}
	return nil, fmt.Errorf("test handler: unexpected %s", kmsg.NameForKey(req.Key()))
}

func (h *testHandler) count(key int16) int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.calls[key]
}

func (h *testHandler) total() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	n := 0
	for _, c := range h.calls {
		n += c
	}
	return n
}

// testServer is a running Server with the means to stop it.
type testServer struct {
	srv    *Server
	h      *testHandler
	addr   string
	cancel context.CancelFunc
	done   chan error
}

// startServer starts a server on 127.0.0.1:0 with testAPIs and h; edit
// changes the config first. The server is stopped at test cleanup.
func startServer(t testing.TB, h *testHandler, edit func(*Config)) *testServer {
	t.Helper()
	return startServerWith(t, h, h, edit)
}

// startServerWith starts a server on handler, which wraps h.
func startServerWith(t testing.TB, handler Handler, h *testHandler, edit func(*Config)) *testServer {
	t.Helper()
	cfg := Config{
		Listeners: []Listener{{Name: "PLAINTEXT", Addr: "127.0.0.1:0"}},
		APIs:      testAPIs,
	}
	if edit != nil {
		edit(&cfg)
	}
	// Logs go to the test's output: shown for failures and with -v.
	logger := slog.New(slog.NewTextHandler(t.Output(), &slog.HandlerOptions{Level: slog.LevelDebug}))
	srv, err := New(cfg, handler, logger)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	ts := &testServer{srv: srv, h: h, addr: srv.Addr(cfg.Listeners[0].Name).String(), cancel: cancel, done: make(chan error, 1)}
	go func() { ts.done <- srv.Serve(ctx) }()
	t.Cleanup(func() { ts.stop(t) })
	return ts
}

// stop cancels Serve and waits for it to return.
func (ts *testServer) stop(t testing.TB) {
	t.Helper()
	ts.cancel()
	select {
	case err, ok := <-ts.done:
		if ok && err != nil {
			t.Errorf("Serve returned %v", err)
		}
		if ok {
			close(ts.done)
		}
	case <-time.After(waitLimit):
		t.Fatalf("Serve did not return within %v of cancel", waitLimit)
	}
}

func dial(t testing.TB, addr string) net.Conn {
	t.Helper()
	c, err := net.DialTimeout("tcp", addr, waitLimit)
	if err != nil {
		t.Fatalf("dial %s: %v", addr, err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// encodeRequest builds a request frame by hand: header v1, or v2 (with an
// empty tagged-field section) for flexible versions. clientID nil sends a
// null client id.
func encodeRequest(req kmsg.Request, version int16, corr int32, clientID *string) []byte {
	req.SetVersion(version)
	b := []byte{0, 0, 0, 0}
	b = binary.BigEndian.AppendUint16(b, uint16(req.Key()))
	b = binary.BigEndian.AppendUint16(b, uint16(version))
	b = binary.BigEndian.AppendUint32(b, uint32(corr))
	if clientID == nil {
		b = binary.BigEndian.AppendUint16(b, 0xffff)
	} else {
		b = binary.BigEndian.AppendUint16(b, uint16(len(*clientID)))
		b = append(b, *clientID...)
	}
	if req.IsFlexible() {
		b = append(b, 0)
	}
	b = req.AppendTo(b)
	binary.BigEndian.PutUint32(b, uint32(len(b)-4))
	return b
}

// rawFrame prefixes body with its size.
func rawFrame(body []byte) []byte {
	return append(binary.BigEndian.AppendUint32(nil, uint32(len(body))), body...)
}

func send(t testing.TB, c net.Conn, frames ...[]byte) {
	t.Helper()
	if err := c.SetWriteDeadline(time.Now().Add(waitLimit)); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Write(bytes.Join(frames, nil)); err != nil {
		t.Fatalf("write: %v", err)
	}
}

// readResponse reads one response frame and splits off the correlation id.
func readResponse(t testing.TB, c net.Conn) (int32, []byte) {
	t.Helper()
	if err := c.SetReadDeadline(time.Now().Add(waitLimit)); err != nil {
		t.Fatal(err)
	}
	var prefix [4]byte
	if _, err := io.ReadFull(c, prefix[:]); err != nil {
		t.Fatalf("read response size: %v", err)
	}
	size := binary.BigEndian.Uint32(prefix[:])
	if size < 4 || size > 1<<20 {
		t.Fatalf("response size %d out of range", size)
	}
	frame := make([]byte, size)
	if _, err := io.ReadFull(c, frame); err != nil {
		t.Fatalf("read response: %v", err)
	}
	return int32(binary.BigEndian.Uint32(frame)), frame[4:]
}

// expectClosed asserts that the server closes c without sending anything.
func expectClosed(t *testing.T, c net.Conn) {
	t.Helper()
	if err := c.SetReadDeadline(time.Now().Add(waitLimit)); err != nil {
		t.Fatal(err)
	}
	var b [1]byte
	n, err := c.Read(b[:])
	var ne net.Error
	switch {
	case n > 0:
		t.Fatalf("expected the connection closed, got data %#x", b[0])
	case errors.As(err, &ne) && ne.Timeout():
		t.Fatalf("connection still open after %v", waitLimit)
	case err == nil:
		t.Fatal("expected the connection closed, read returned no error")
	}
}

// expectServing asserts that a fresh connection gets an ApiVersions answer.
func expectServing(t *testing.T, addr string) {
	t.Helper()
	c := dial(t, addr)
	send(t, c, encodeRequest(kmsg.NewPtrApiVersionsRequest(), 0, 77, nil))
	corr, body := readResponse(t, c)
	if corr != 77 {
		t.Fatalf("correlation id %d, want 77", corr)
	}
	resp := kmsg.NewPtrApiVersionsResponse()
	resp.SetVersion(0)
	if err := resp.ReadFrom(body); err != nil || resp.ErrorCode != 0 {
		t.Fatalf("ApiVersions v0 on a fresh connection: err %v, code %d", err, resp.ErrorCode)
	}
}

func strp(s string) *string { return &s }

// dialOnce dials without failing the test, for asserting a refusal.
func dialOnce(addr string) (net.Conn, error) {
	c, err := net.DialTimeout("tcp", addr, waitLimit)
	if err == nil {
		c.Close()
	}
	return c, err
}
