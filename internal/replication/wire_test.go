package replication

import (
	"context"
	"encoding/binary"
	"errors"
	"io"
	"net"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// The wire client against a scripted TCP peer, for what a real leader
// never sends: answers that break the protocol must fail the request with
// an error (never hang, never allocate what a corrupt size asks for), and
// the next request must start on a new connection. The real leader is
// tested in test/replication.

// wirePeer answers each request frame with what answer returns (bytes
// written as they are, then the connection is closed if hangUp; no bytes
// close it at once). It serves ApiVersions itself unless answer does.
type wirePeer struct {
	ln     net.Listener
	answer peerAnswer
	wg     sync.WaitGroup
	mu     sync.Mutex
	conns  int
	fetchV int16 // the newest Fetch version offered
}

type peerAnswer func(key kmsg.Key, version int16, corr int32) (out []byte, hangUp bool)

func startWirePeer(t *testing.T, answer peerAnswer) *wirePeer {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &wirePeer{ln: ln, answer: answer, fetchV: MaxFetchVersion}
	p.wg.Add(1)
	go p.accept()
	t.Cleanup(func() { ln.Close(); p.wg.Wait() })
	return p
}

func (p *wirePeer) accept() {
	defer p.wg.Done()
	for {
		c, err := p.ln.Accept()
		if err != nil {
			return
		}
		p.mu.Lock()
		p.conns++
		p.mu.Unlock()
		p.wg.Add(1)
		go p.serve(c)
	}
}

func (p *wirePeer) serve(c net.Conn) {
	defer p.wg.Done()
	defer c.Close()
	for {
		var size [4]byte
		if _, err := io.ReadFull(c, size[:]); err != nil {
			return
		}
		body := make([]byte, binary.BigEndian.Uint32(size[:]))
		if _, err := io.ReadFull(c, body); err != nil {
			return
		}
		key := kmsg.Key(binary.BigEndian.Uint16(body))
		version := int16(binary.BigEndian.Uint16(body[2:]))
		corr := int32(binary.BigEndian.Uint32(body[4:]))
		out, hangUp := p.answer(key, version, corr)
		if out == nil && key == kmsg.ApiVersions {
			out = p.apiVersions(version, corr)
		}
		if out == nil {
			return
		}
		if _, err := c.Write(out); err != nil || hangUp {
			return
		}
	}
}

func (p *wirePeer) setFetchV(v int16) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.fetchV = v
}

func (p *wirePeer) dials() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.conns
}

// apiVersions offers Fetch v4 up to fetchV and OffsetForLeaderEpoch v0-v4.
func (p *wirePeer) apiVersions(version int16, corr int32) []byte {
	p.mu.Lock()
	fetchV := p.fetchV
	p.mu.Unlock()
	resp := kmsg.NewPtrApiVersionsResponse()
	resp.SetVersion(version)
	for _, k := range []struct{ key, min, max int16 }{
		{kmsg.ApiVersions.Int16(), 0, 3},
		{kmsg.Fetch.Int16(), 4, fetchV},
		{kmsg.OffsetForLeaderEpoch.Int16(), 0, 4},
	} {
		if k.max < k.min {
			continue
		}
		ak := kmsg.NewApiVersionsResponseApiKey()
		ak.ApiKey, ak.MinVersion, ak.MaxVersion = k.key, k.min, k.max
		resp.ApiKeys = append(resp.ApiKeys, ak)
	}
	return frame(corr, false, resp.AppendTo(nil))
}

// frame is a response frame: size, correlation id, the header's empty
// tags if flexible, then body.
func frame(corr int32, flexible bool, body []byte) []byte {
	out := binary.BigEndian.AppendUint32(nil, 0)
	out = binary.BigEndian.AppendUint32(out, uint32(corr))
	if flexible {
		out = append(out, 0)
	}
	out = append(out, body...)
	binary.BigEndian.PutUint32(out, uint32(len(out)-4))
	return out
}

func wireClientTo(t *testing.T, addr string) LeaderClient {
	t.Helper()
	d := &WireDialer{Resolve: func(int32) (string, bool) { return addr, true }, LocalID: 2,
		DialTimeout: 5 * time.Second, RequestTimeout: 5 * time.Second}
	c, err := d.Dial(context.Background(), 1)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

func fetchReq() *kmsg.FetchRequest {
	req := kmsg.NewPtrFetchRequest()
	req.MaxWaitMillis, req.MinBytes, req.MaxBytes = 0, 1, 1<<20
	return req
}

// A good answer decodes at the negotiated version; each bad one fails its
// request with a protocol error and the next request dials again.
func TestWireClientBadAnswers(t *testing.T) {
	good := func(corr int32) []byte {
		resp := kmsg.NewPtrFetchResponse()
		resp.SetVersion(MaxFetchVersion)
		resp.SessionID = 7
		return frame(corr, true, resp.AppendTo(nil))
	}
	var mode string
	var mu sync.Mutex
	p := startWirePeer(t, func(key kmsg.Key, version int16, corr int32) ([]byte, bool) {
		if key != kmsg.Fetch {
			return nil, false
		}
		mu.Lock()
		defer mu.Unlock()
		switch mode {
		case "huge size":
			return binary.BigEndian.AppendUint32(nil, 1<<30), false // and nothing after it
		case "negative size":
			return binary.BigEndian.AppendUint32(nil, 0xffffffff), false
		case "wrong correlation":
			return good(corr + 1), false
		case "truncated body":
			b := good(corr)
			binary.BigEndian.PutUint32(b, uint32(len(b)-4+2)) // two bytes short, then EOF
			return b, true
		case "garbage body":
			return frame(corr, true, []byte{0xff, 0xff, 0xff}), false
		case "close":
			return nil, false
		}
		return good(corr), false
	})
	c := wireClientTo(t, p.ln.Addr().String())
	ctx := context.Background()
	resp, err := c.Fetch(ctx, fetchReq())
	if err != nil || resp.Version != MaxFetchVersion || resp.SessionID != 7 {
		t.Fatalf("good answer: %+v, %v", resp, err)
	}
	for _, m := range []string{"huge size", "negative size", "wrong correlation", "truncated body", "garbage body", "close"} {
		mu.Lock()
		mode = m
		mu.Unlock()
		before := p.dials()
		done := make(chan error, 1)
		go func() { _, err := c.Fetch(ctx, fetchReq()); done <- err }()
		select {
		case err = <-done:
		case <-time.After(30 * time.Second):
			t.Fatalf("%s: the request hangs", m)
		}
		if err == nil {
			t.Fatalf("%s: answer accepted", m)
		}
		if m != "close" && m != "truncated body" && !errors.Is(err, errProtocol) {
			t.Fatalf("%s: %v, want a protocol error", m, err)
		}
		mu.Lock()
		mode = ""
		mu.Unlock()
		if _, err := c.Fetch(ctx, fetchReq()); err != nil {
			t.Fatalf("after %s: %v", m, err)
		}
		if got := p.dials(); got != before+1 {
			t.Fatalf("after %s: %d dials, want the bad connection replaced by one new one", m, got-before)
		}
	}
}

// A leader that does not serve Fetch at any version we speak is an
// UNSUPPORTED_VERSION error, and a lower newest version is used as is.
func TestWireClientNegotiatesVersions(t *testing.T) {
	var got atomic.Int32
	p := startWirePeer(t, func(key kmsg.Key, version int16, corr int32) ([]byte, bool) {
		if key != kmsg.Fetch {
			return nil, false
		}
		got.Store(int32(version))
		resp := kmsg.NewPtrFetchResponse()
		resp.SetVersion(version)
		return frame(corr, resp.IsFlexible(), resp.AppendTo(nil)), false
	})
	p.setFetchV(11)
	c := wireClientTo(t, p.ln.Addr().String())
	if _, err := c.Fetch(context.Background(), fetchReq()); err != nil || got.Load() != 11 {
		t.Fatalf("fetch at v%d: %v, want v11", got.Load(), err)
	}
	p.setFetchV(3) // below the offered minimum: no Fetch at all
	c = wireClientTo(t, p.ln.Addr().String())
	_, err := c.Fetch(context.Background(), fetchReq())
	if !errors.Is(err, kerr.UnsupportedVersion) || !strings.Contains(err.Error(), "Fetch") {
		t.Fatalf("fetch from a leader without Fetch: %v", err)
	}
}

// A cancelled request returns at once with the context's error, even while
// the leader holds it, and closes the connection.
func TestWireClientCancel(t *testing.T) {
	hold := make(chan struct{})
	held := make(chan struct{}, 1)
	p := startWirePeer(t, func(key kmsg.Key, _ int16, _ int32) ([]byte, bool) {
		if key == kmsg.Fetch {
			held <- struct{}{}
			<-hold // never answers
		}
		return nil, false
	})
	// Registered after the peer's cleanup, so it runs first: the peer
	// waits for its connections, one of which is held here.
	t.Cleanup(func() { close(hold) })
	c := wireClientTo(t, p.ln.Addr().String())
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	req := fetchReq()
	req.MaxWaitMillis = int32(time.Hour.Milliseconds())
	go func() { _, err := c.Fetch(ctx, req); done <- err }()
	select {
	case <-held: // the leader holds the fetch: cancel now
	case <-time.After(30 * time.Second):
		t.Fatal("the fetch never reached the leader")
	}
	cancel()
	select {
	case err := <-done:
		if !errors.Is(err, context.Canceled) {
			t.Fatalf("cancelled fetch: %v", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("a cancelled fetch hangs")
	}
}

// FuzzDecodeResponse: whatever a leader's bytes are, decoding a Fetch,
// OffsetForLeaderEpoch or ApiVersions answer returns (an error for bad
// ones) without panicking, and a good answer's record batches lie inside
// the frame.
func FuzzDecodeResponse(f *testing.F) {
	fetch := kmsg.NewPtrFetchResponse()
	fetch.SetVersion(MaxFetchVersion)
	ft := kmsg.NewFetchResponseTopic()
	fp := kmsg.NewFetchResponseTopicPartition()
	fp.HighWatermark, fp.RecordBatches = 3, []byte("batches")
	ft.Partitions = append(ft.Partitions, fp)
	fetch.Topics = append(fetch.Topics, ft)
	f.Add(uint8(0), frame(1, true, fetch.AppendTo(nil))[4:])
	epochs := kmsg.NewPtrOffsetForLeaderEpochResponse()
	epochs.SetVersion(4)
	f.Add(uint8(1), frame(1, true, epochs.AppendTo(nil))[4:])
	versions := kmsg.NewPtrApiVersionsResponse()
	versions.SetVersion(3)
	f.Add(uint8(2), frame(1, false, versions.AppendTo(nil))[4:])
	f.Add(uint8(0), []byte{0, 0, 0, 1, 0x81, 0x80, 0x80, 0x80, 0x08})
	f.Fuzz(func(t *testing.T, which uint8, body []byte) {
		var req kmsg.Request
		switch which % 3 {
		case 0:
			req = kmsg.NewPtrFetchRequest()
			req.SetVersion(int16(which/3) % (MaxFetchVersion + 1))
		case 1:
			req = kmsg.NewPtrOffsetForLeaderEpochRequest()
			req.SetVersion(int16(which/3) % 5)
		default:
			req = kmsg.NewPtrApiVersionsRequest()
			req.SetVersion(int16(which/3) % 4)
		}
		resp := req.ResponseKind()
		if err := decodeResponse(req, resp, body, 1); err != nil {
			return
		}
		if fr, ok := resp.(*kmsg.FetchResponse); ok {
			for _, t2 := range fr.Topics {
				for _, p := range t2.Partitions {
					if len(p.RecordBatches) > len(body) {
						t.Fatalf("%d batch bytes from a %d-byte frame", len(p.RecordBatches), len(body))
					}
				}
			}
		}
	})
}
