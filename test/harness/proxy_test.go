package harness

import (
	"bytes"
	"crypto/rand"
	"encoding/binary"
	"errors"
	"io"
	"net"
	"os"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kbin"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// ioTimeout bounds one socket operation of these tests: it only turns a
// hang into a failure, no result depends on it.
const ioTimeout = time.Minute

// echoServer is a loopback target that sends back what it reads and
// closes a connection after its client's end of stream.
type echoServer struct {
	ln       net.Listener
	accepted atomic.Int64
	wg       sync.WaitGroup
	mu       sync.Mutex
	conns    []net.Conn
}

func startEcho(t *testing.T) *echoServer {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	e := &echoServer{ln: ln}
	e.wg.Add(1)
	go func() {
		defer e.wg.Done()
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			e.accepted.Add(1)
			e.mu.Lock()
			e.conns = append(e.conns, c)
			e.mu.Unlock()
			e.wg.Add(1)
			go func() { defer e.wg.Done(); io.Copy(c, c); c.Close() }()
		}
	}()
	t.Cleanup(func() {
		ln.Close()
		e.mu.Lock()
		for _, c := range e.conns {
			c.Close()
		}
		e.mu.Unlock()
		e.wg.Wait()
	})
	return e
}

func (e *echoServer) Addr() string { return e.ln.Addr().String() }

func dial(t *testing.T, addr string) net.Conn {
	t.Helper()
	c, err := net.DialTimeout("tcp", addr, ioTimeout)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

func send(t *testing.T, c net.Conn, b []byte) {
	t.Helper()
	c.SetWriteDeadline(time.Now().Add(ioTimeout))
	if _, err := c.Write(b); err != nil {
		t.Fatalf("write: %v", err)
	}
}

func recv(t *testing.T, c net.Conn, n int) []byte {
	t.Helper()
	c.SetReadDeadline(time.Now().Add(ioTimeout))
	b := make([]byte, n)
	if _, err := io.ReadFull(c, b); err != nil {
		t.Fatalf("read %d bytes: %v", n, err)
	}
	return b
}

// nothingToRead fails if c has bytes ready. It is only called when the
// proxy accounts for every byte sent as held or dropped, so none can be
// on their way.
func nothingToRead(t *testing.T, c net.Conn) {
	t.Helper()
	c.SetReadDeadline(time.Now())
	var b [1]byte
	n, err := c.Read(b[:])
	if !errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatalf("read %d bytes (%v), want nothing", n, err)
	}
}

// wantRefused wants a connection to addr refused: reset while connecting
// or closed right after.
func wantRefused(t *testing.T, addr string) {
	t.Helper()
	c, err := net.DialTimeout("tcp", addr, ioTimeout)
	if err != nil {
		return
	}
	defer c.Close()
	wantClosed(t, c)
}

// wantClosed reads c until it ends, which must be soon and not by timeout.
func wantClosed(t *testing.T, c net.Conn) {
	t.Helper()
	c.SetReadDeadline(time.Now().Add(ioTimeout))
	_, err := io.Copy(io.Discard, c)
	if errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatal("connection still open")
	}
}

func TestProxyPassesBothWaysAndEndsOfStream(t *testing.T) {
	p := StartProxy(t, startEcho(t).Addr())
	c := dial(t, p.Addr())
	data := make([]byte, 1<<20)
	rand.Read(data)
	go c.Write(data) // the echo can only go back as fast as it is read
	if got := recv(t, c, len(data)); !bytes.Equal(got, data) {
		t.Fatal("echo through the proxy differs")
	}
	// A half close reaches the target, whose close comes back.
	c.(*net.TCPConn).CloseWrite()
	wantClosed(t, c)
	WaitFor(t, ioTimeout, "the proxy to forget the connection", func() bool { live, _ := p.Conns(); return live == 0 })
}

func TestProxyHoldResume(t *testing.T) {
	for _, d := range []Direction{ToTarget, FromTarget} {
		p := StartProxy(t, startEcho(t).Addr())
		c := dial(t, p.Addr())
		send(t, c, []byte("before"))
		if got := recv(t, c, 6); string(got) != "before" {
			t.Fatalf("got %q", got)
		}
		p.Hold(d)
		send(t, c, []byte("held1"))
		send(t, c, []byte("held2"))
		WaitFor(t, ioTimeout, "10 bytes held", func() bool { return p.Held(d) == 10 })
		nothingToRead(t, c)
		p.Resume(d)
		if got := recv(t, c, 10); string(got) != "held1held2" {
			t.Fatalf("direction %d released %q", d, got)
		}
		if n := p.Held(BothWays); n != 0 {
			t.Fatalf("%d bytes still held", n)
		}
	}
}

func TestProxyDrop(t *testing.T) {
	p := StartProxy(t, startEcho(t).Addr())
	c := dial(t, p.Addr())
	p.Drop(FromTarget)
	send(t, c, []byte("lost"))
	WaitFor(t, ioTimeout, "4 bytes dropped", func() bool { return p.Dropped(FromTarget) == 4 })
	// Dropping discards what was held too.
	p.Hold(FromTarget)
	send(t, c, []byte("held"))
	WaitFor(t, ioTimeout, "4 bytes held", func() bool { return p.Held(FromTarget) == 4 })
	p.Drop(FromTarget)
	if p.Held(FromTarget) != 0 || p.Dropped(FromTarget) != 8 {
		t.Fatalf("after Drop: %d held, %d dropped", p.Held(FromTarget), p.Dropped(FromTarget))
	}
	p.Resume(FromTarget)
	send(t, c, []byte("kept"))
	if got := recv(t, c, 4); string(got) != "kept" {
		t.Fatalf("got %q", got)
	}
	nothingToRead(t, c)
}

func TestProxyCutRefuse(t *testing.T) {
	p := StartProxy(t, startEcho(t).Addr())
	c := dial(t, p.Addr())
	p.Hold(FromTarget)
	send(t, c, []byte("held"))
	WaitFor(t, ioTimeout, "4 bytes held", func() bool { return p.Held(FromTarget) == 4 })
	p.Cut(Refuse)
	wantClosed(t, c) // and what it held is gone with it
	wantRefused(t, p.Addr())
	p.Heal()
	h := dial(t, p.Addr())
	send(t, h, []byte("healed"))
	if got := recv(t, h, 6); string(got) != "healed" {
		t.Fatalf("got %q", got)
	}
}

func TestProxyCutBlackHole(t *testing.T) {
	e := startEcho(t)
	p := StartProxy(t, e.Addr())
	c := dial(t, p.Addr())
	send(t, c, []byte("x"))
	recv(t, c, 1)
	p.Cut(BlackHole)
	wantClosed(t, c)
	b := dial(t, p.Addr()) // connects: the kernel completes the handshake
	send(t, b, []byte("ping"))
	WaitFor(t, ioTimeout, "the connection to be black-holed", func() bool { _, parked := p.Conns(); return parked == 1 })
	if n := e.accepted.Load(); n != 1 {
		t.Fatalf("target accepted %d connections, want only the one before the cut", n)
	}
	nothingToRead(t, b)
	p.Heal()
	if got := recv(t, b, 4); string(got) != "ping" {
		t.Fatalf("after heal got %q", got)
	}
}

func TestProxyCloseStopsEverything(t *testing.T) {
	e := startEcho(t)
	base := runtime.NumGoroutine()
	live := StartProxy(t, e.Addr())
	c := dial(t, live.Addr())
	live.Hold(FromTarget)
	send(t, c, []byte("held"))
	WaitFor(t, ioTimeout, "4 bytes held", func() bool { return live.Held(FromTarget) == 4 })
	hole := StartProxy(t, e.Addr())
	hole.Cut(BlackHole)
	b := dial(t, hole.Addr())
	WaitFor(t, ioTimeout, "a black-holed connection", func() bool { _, parked := hole.Conns(); return parked == 1 })
	idle := StartProxy(t, "") // no target: nothing to connect to yet
	wantRefused(t, idle.Addr())

	for _, p := range []*Proxy{live, hole, idle} {
		p.Close()
	}
	wantClosed(t, c)
	wantClosed(t, b)
	if _, err := net.DialTimeout("tcp", live.Addr(), ioTimeout); err == nil {
		t.Fatal("a closed proxy still accepts")
	}
	WaitFor(t, ioTimeout, "the proxies' goroutines to end", func() bool { return runtime.NumGoroutine() <= base })
}

// kafkaServer answers each Produce request with a ProduceResponse whose
// base offset is 10 × the correlation id, except for acks=0 (no
// response), and ApiVersions with header v0 like a broker.
func kafkaServer(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		c, err := ln.Accept()
		if err != nil {
			return
		}
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
			r := kbin.Reader{Src: body}
			key, version, corr := r.Int16(), r.Int16(), r.Int32()
			req := kmsg.RequestForKey(key)
			req.SetVersion(version)
			r.NullableString()
			if req.IsFlexible() {
				r.Uvarint() // no tags sent
			}
			if err := req.ReadFrom(r.Src); err != nil {
				t.Errorf("server: %v", err)
				return
			}
			resp := req.ResponseKind()
			switch req := req.(type) {
			case *kmsg.ProduceRequest:
				if req.Acks == 0 {
					continue
				}
				pr := resp.(*kmsg.ProduceResponse)
				rt := kmsg.NewProduceResponseTopic()
				rt.Topic = req.Topics[0].Topic
				rp := kmsg.NewProduceResponseTopicPartition()
				rp.BaseOffset = 10 * int64(corr)
				rt.Partitions = append(rt.Partitions, rp)
				pr.Topics = append(pr.Topics, rt)
			}
			out := kbin.AppendInt32(make([]byte, 4), corr)
			if resp.IsFlexible() && key != int16(kmsg.ApiVersions) {
				out = append(out, 0)
			}
			out = resp.AppendTo(out)
			binary.BigEndian.PutUint32(out, uint32(len(out)-4))
			if _, err := c.Write(out); err != nil {
				return
			}
		}
	}()
	t.Cleanup(func() { ln.Close(); wg.Wait() })
	return ln.Addr().String()
}

func produceFrame(corr int32, version int16, acks int16) []byte {
	req := kmsg.NewPtrProduceRequest()
	req.SetVersion(version)
	req.Acks = acks
	rt := kmsg.NewProduceRequestTopic()
	rt.Topic = "t"
	rt.Partitions = append(rt.Partitions, kmsg.NewProduceRequestTopicPartition())
	req.Topics = append(req.Topics, rt)
	return kmsg.NewRequestFormatter(kmsg.FormatterClientID("test")).AppendRequest(nil, req, corr)
}

// TestKafkaProxyHoldFromNthResponse holds the responses from the third
// produce response on: exactly two reach the client until Resume. The
// requests arrive split and merged at odd places, one gets no response
// (acks=0), and frames of flexible and older versions are decoded.
func TestKafkaProxyHoldFromNthResponse(t *testing.T) {
	p := StartKafkaProxy(t, kafkaServer(t))
	var mu sync.Mutex
	var requests, responses []string
	var bases []int64
	p.OnRequest(func(f KafkaFrame) {
		req, err := f.Request()
		mu.Lock()
		defer mu.Unlock()
		if err != nil {
			requests = append(requests, err.Error())
			return
		}
		requests = append(requests, kmsg.NameForKey(req.Key()))
	})
	p.OnResponse(func(f KafkaFrame) {
		resp, err := f.Response()
		mu.Lock()
		defer mu.Unlock()
		if err != nil {
			responses = append(responses, err.Error())
			return
		}
		responses = append(responses, kmsg.NameForKey(resp.Key()))
		if pr, ok := resp.(*kmsg.ProduceResponse); ok {
			bases = append(bases, pr.Topics[0].Partitions[0].BaseOffset)
			if len(bases) == 3 {
				p.Hold(FromTarget)
			}
		}
	})

	c := dial(t, p.Addr())
	av := kmsg.NewPtrApiVersionsRequest()
	av.SetVersion(3)
	av.ClientSoftwareName, av.ClientSoftwareVersion = "test", "1"
	stream := kmsg.NewRequestFormatter().AppendRequest(nil, av, 1)
	versions := []int16{9, 7, 9, 3, 11, 9}
	for i, v := range versions {
		acks := int16(-1)
		if i == 1 {
			acks = 0
		}
		stream = append(stream, produceFrame(int32(2+i), v, acks)...)
	}
	// Three writes cutting through size prefixes and bodies.
	send(t, c, stream[:3])
	send(t, c, stream[3:len(stream)/2])
	send(t, c, stream[len(stream)/2:])

	WaitFor(t, ioTimeout, "the hook to see every response", func() bool {
		mu.Lock()
		defer mu.Unlock()
		return len(responses) == 6
	})
	mu.Lock()
	wantReq := []string{"ApiVersions", "Produce", "Produce", "Produce", "Produce", "Produce", "Produce"}
	wantResp := []string{"ApiVersions", "Produce", "Produce", "Produce", "Produce", "Produce"}
	if !slices.Equal(requests, wantReq) || !slices.Equal(responses, wantResp) {
		t.Fatalf("hooks saw requests %q, responses %q", requests, responses)
	}
	// Correlation ids 2..7 with 3 (acks=0) unanswered.
	if want := []int64{20, 40, 50, 60, 70}; !slices.Equal(bases, want) {
		t.Fatalf("base offsets %v, want %v", bases, want)
	}
	mu.Unlock()

	readResp := func() int32 {
		size := binary.BigEndian.Uint32(recv(t, c, 4))
		return int32(binary.BigEndian.Uint32(recv(t, c, int(size))))
	}
	for _, want := range []int32{1, 2, 4} {
		if got := readResp(); got != want {
			t.Fatalf("response to correlation id %d, want %d", got, want)
		}
	}
	if p.Held(FromTarget) == 0 {
		t.Fatal("nothing held after the third produce response")
	}
	nothingToRead(t, c)
	p.Resume(FromTarget)
	for _, want := range []int32{5, 6, 7} {
		if got := readResp(); got != want {
			t.Fatalf("released response to correlation id %d, want %d", got, want)
		}
	}
}
