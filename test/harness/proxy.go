package harness

import (
	"bufio"
	"context"
	"errors"
	"io"
	"net"
	"sync"
	"testing"
	"time"
)

// Direction is one way through a proxied connection.
type Direction uint8

const (
	// ToTarget is the client's bytes toward the target: Kafka requests.
	ToTarget Direction = 1 << iota
	// FromTarget is the target's bytes toward the client: Kafka responses.
	FromTarget
	// BothWays is ToTarget and FromTarget.
	BothWays = ToTarget | FromTarget
)

// flow is what a direction does with the bytes it reads.
type flow uint8

const (
	flowPass flow = iota // forward
	flowHold             // buffer until resumed
	flowDrop             // discard
)

// CutMode is what a cut proxy does with new connections.
type CutMode uint8

const (
	notCut CutMode = iota
	// Refuse accepts each new connection and resets it at once: the
	// client sees ECONNRESET, as from a host that is up but not serving.
	Refuse
	// BlackHole accepts new connections and neither reads nor writes
	// them: the client's connect succeeds and then everything hangs, as
	// across a real network partition. Heal connects them to the target,
	// as a retransmitted SYN would get through once the network is back.
	BlackHole
)

const (
	// maxHeld bounds the bytes one direction of one connection holds:
	// past it the proxy stops reading, so the sender sees TCP
	// backpressure instead of the test process growing without limit.
	maxHeld = 64 << 20
	// rawChunk is the read size when the proxy does not split frames.
	rawChunk = 32 << 10
)

// Proxy is a fault-injecting TCP proxy on a loopback port toward one
// target address, for putting between clients and brokers or between
// brokers (the broker advertises the proxy's address). At its core it
// moves bytes; started with StartKafkaProxy it also splits both
// directions into Kafka frames (4-byte size prefix) and shows each frame
// to the hooks set with OnRequest and OnResponse.
//
// Flow controls (Hold, Drop, Resume) apply per direction to every
// connection, current and future; Cut and Heal act on connections. Every
// goroutine and socket the proxy starts is stopped by Close, which
// StartProxy registers with t.Cleanup.
type Proxy struct {
	ln     net.Listener
	kafka  bool
	ctx    context.Context // cancelled by Close: aborts dials
	cancel context.CancelFunc
	wg     sync.WaitGroup

	mu         sync.Mutex
	cond       *sync.Cond // broadcast on any change of flows, queues or connections
	target     string
	flows      [2]flow // by Direction.index
	cut        CutMode
	cutGen     int // incremented by every Cut: a dial that spans one is dropped
	closed     bool
	conns      map[*proxyConn]struct{}
	parked     []net.Conn // black-holed, waiting for Heal
	nextID     int64
	dropped    [2]int64
	onRequest  func(KafkaFrame)
	onResponse func(KafkaFrame)
}

// proxyConn is one client connection and its connection to the target.
type proxyConn struct {
	id             int64
	client, server net.Conn
	links          [2]*link // by Direction.index
	closed         bool     // guarded by Proxy.mu
	ended          int      // links whose end of stream was passed on; guarded by Proxy.mu

	pendingMu sync.Mutex
	pending   []requestHeader // requests awaiting a response, in order (Kafka layer)
}

// link is one direction of a proxyConn. Its fields are guarded by Proxy.mu.
type link struct {
	dir      Direction
	src, dst net.Conn
	queue    []chunk // read, not yet written
	queued   int     // bytes in queue
	eof      bool    // src ended cleanly: dst is half-closed after the queue
}

// chunk is bytes read in one go (or one Kafka frame). A held chunk was
// read while its direction held: it waits for Resume, and so does
// everything behind it. Chunks read before a Hold still go out.
type chunk struct {
	b    []byte
	held bool
}

// StartProxy starts a byte-level proxy on a free loopback port toward
// target ("" until SetTarget: connections are reset meanwhile).
func StartProxy(t testing.TB, target string) *Proxy { return startProxy(t, target, false) }

// StartKafkaProxy starts a proxy that also splits both directions into
// Kafka frames, for OnRequest and OnResponse hooks; flow controls then
// take effect at frame boundaries. Use it only for Kafka listeners (not
// for the CONTROLLER listener, which carries Raft's own protocol).
func StartKafkaProxy(t testing.TB, target string) *Proxy { return startProxy(t, target, true) }

func startProxy(t testing.TB, target string, kafka bool) *Proxy {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("proxy listen: %v", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	p := &Proxy{ln: ln, kafka: kafka, ctx: ctx, cancel: cancel, target: target, conns: map[*proxyConn]struct{}{}}
	p.cond = sync.NewCond(&p.mu)
	p.wg.Add(1)
	go p.accept()
	t.Cleanup(p.Close)
	return p
}

// Addr is the proxy's host:port, for clients or advertised.listeners.
func (p *Proxy) Addr() string { return p.ln.Addr().String() }

// SetTarget points new connections at addr (current ones keep theirs).
func (p *Proxy) SetTarget(addr string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.target = addr
}

// Hold buffers the bytes of d read from now on instead of forwarding
// them; Resume or Heal releases them in order (a Cut discards them with
// their connections). Bytes read before the call still go out. With the
// Kafka layer, a hook that calls Hold holds the frame it was shown.
func (p *Proxy) Hold(d Direction) { p.setFlow(d, flowHold) }

// Drop discards the bytes of d from now on, and what d holds. Ends of
// streams still pass, so closes are seen.
func (p *Proxy) Drop(d Direction) { p.setFlow(d, flowDrop) }

// Resume forwards d again, held bytes first.
func (p *Proxy) Resume(d Direction) { p.setFlow(d, flowPass) }

func (p *Proxy) setFlow(d Direction, f flow) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.setFlowLocked(d, f)
}

func (p *Proxy) setFlowLocked(d Direction, f flow) {
	for _, i := range d.indexes() {
		p.flows[i] = f
		for pc := range p.conns {
			l := pc.links[i]
			switch f {
			case flowPass:
				for j := range l.queue {
					l.queue[j].held = false
				}
			case flowDrop:
				kept := l.queue[:0]
				for _, c := range l.queue {
					if c.held {
						p.dropped[i] += int64(len(c.b))
						l.queued -= len(c.b)
					} else {
						kept = append(kept, c)
					}
				}
				clear(l.queue[len(kept):])
				l.queue = kept
			}
		}
	}
	p.cond.Broadcast()
}

// Cut closes every current connection (discarding what they hold) and
// treats new ones by mode until Heal.
func (p *Proxy) Cut(mode CutMode) {
	if mode != Refuse && mode != BlackHole {
		panic("harness: Proxy.Cut needs Refuse or BlackHole")
	}
	p.mu.Lock()
	p.cut = mode
	p.cutGen++
	conns := p.liveLocked()
	var refuse []net.Conn
	if mode == Refuse {
		refuse, p.parked = p.parked, nil
	}
	p.mu.Unlock()
	for _, pc := range conns {
		p.closeConn(pc)
	}
	for _, c := range refuse {
		reset(c)
	}
}

// Heal ends a Cut and resumes both directions: black-holed connections
// are connected to the target, held bytes are released.
func (p *Proxy) Heal() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.cut = notCut
	p.setFlowLocked(BothWays, flowPass)
	if p.closed {
		return
	}
	for _, c := range p.parked {
		p.wg.Add(1)
		go p.connect(c, p.cutGen)
	}
	p.parked = nil
	p.cond.Broadcast()
}

// Held is the number of bytes d holds now, over all connections.
func (p *Proxy) Held(d Direction) int {
	p.mu.Lock()
	defer p.mu.Unlock()
	n := 0
	for pc := range p.conns {
		for _, i := range d.indexes() {
			for _, c := range pc.links[i].queue {
				if c.held {
					n += len(c.b)
				}
			}
		}
	}
	return n
}

// Dropped is the number of bytes of d discarded by Drop so far.
func (p *Proxy) Dropped(d Direction) int64 {
	p.mu.Lock()
	defer p.mu.Unlock()
	var n int64
	for _, i := range d.indexes() {
		n += p.dropped[i]
	}
	return n
}

// Conns is the number of connections proxied now and black-holed now.
func (p *Proxy) Conns() (live, parked int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.conns), len(p.parked)
}

// Close stops the proxy: the listener, every connection (black-holed
// ones too) and every goroutine, which it waits for.
func (p *Proxy) Close() {
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		return
	}
	p.closed = true
	conns, parked := p.liveLocked(), p.parked
	p.parked = nil
	p.mu.Unlock()
	p.cancel()
	p.ln.Close()
	for _, pc := range conns {
		p.closeConn(pc)
	}
	for _, c := range parked {
		c.Close()
	}
	p.wg.Wait()
}

func (p *Proxy) liveLocked() []*proxyConn {
	out := make([]*proxyConn, 0, len(p.conns))
	for pc := range p.conns {
		out = append(out, pc)
	}
	return out
}

func (p *Proxy) accept() {
	defer p.wg.Done()
	for {
		c, err := p.ln.Accept()
		if err != nil {
			if errors.Is(err, net.ErrClosed) {
				return
			}
			// Out of fds or similar: retry rather than stop serving.
			select {
			case <-p.ctx.Done():
				return
			case <-time.After(10 * time.Millisecond):
			}
			continue
		}
		p.mu.Lock()
		switch {
		case p.closed:
			c.Close()
		case p.cut == Refuse:
			reset(c)
		case p.cut == BlackHole:
			p.parked = append(p.parked, c)
		default:
			p.wg.Add(1)
			go p.connect(c, p.cutGen)
		}
		p.mu.Unlock()
	}
}

// connect dials the target for client connection c, accepted before the
// gen-th Cut, and starts moving bytes.
func (p *Proxy) connect(c net.Conn, gen int) {
	defer p.wg.Done()
	p.mu.Lock()
	target := p.target
	p.mu.Unlock()
	if target == "" {
		reset(c)
		return
	}
	var d net.Dialer
	s, err := d.DialContext(p.ctx, "tcp", target)
	if err != nil {
		reset(c) // the target refused: so does the proxy
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed || p.cutGen != gen {
		// Closed or cut while dialing: this was a current connection.
		c.Close()
		s.Close()
		return
	}
	p.nextID++
	pc := &proxyConn{id: p.nextID, client: c, server: s}
	pc.links[ToTarget.index()] = &link{dir: ToTarget, src: c, dst: s}
	pc.links[FromTarget.index()] = &link{dir: FromTarget, src: s, dst: c}
	p.conns[pc] = struct{}{}
	for _, l := range pc.links {
		p.wg.Add(2)
		go p.read(pc, l)
		go p.write(pc, l)
	}
}

// read moves l's source into its queue, chunk by chunk (frame by frame
// with the Kafka layer), as the direction's flow says.
func (p *Proxy) read(pc *proxyConn, l *link) {
	defer p.wg.Done()
	ch := &chunker{r: bufio.NewReaderSize(l.src, rawChunk), kafka: p.kafka}
	for {
		chunk, frame, err := ch.next()
		if len(chunk) > 0 {
			if frame {
				p.inspect(pc, l.dir, chunk)
			}
			if !p.enqueue(pc, l, chunk) {
				return
			}
		}
		if err != nil {
			if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
				p.mu.Lock()
				l.eof = true
				p.cond.Broadcast()
				p.mu.Unlock()
			} else {
				p.closeConn(pc) // reset, or closed by us
			}
			return
		}
	}
}

// enqueue queues chunk on l unless its direction drops; it waits while l
// holds maxHeld bytes. It reports false once the connection is closed.
func (p *Proxy) enqueue(pc *proxyConn, l *link, b []byte) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	i := l.dir.index()
	for !pc.closed && p.flows[i] != flowDrop && l.queued >= maxHeld {
		p.cond.Wait()
	}
	switch {
	case pc.closed:
		return false
	case p.flows[i] == flowDrop:
		p.dropped[i] += int64(len(b))
	default:
		l.queue = append(l.queue, chunk{b: b, held: p.flows[i] == flowHold})
		l.queued += len(b)
		p.cond.Broadcast()
	}
	return true
}

// write moves l's queue to its destination while the direction passes,
// then passes on the end of the stream.
func (p *Proxy) write(pc *proxyConn, l *link) {
	defer p.wg.Done()
	i := l.dir.index()
	for {
		p.mu.Lock()
		for !pc.closed && !l.writable(p.flows[i]) {
			p.cond.Wait()
		}
		if pc.closed {
			p.mu.Unlock()
			return
		}
		if len(l.queue) == 0 { // end of stream, all written
			pc.ended++
			both := pc.ended == len(pc.links)
			p.mu.Unlock()
			if cw, ok := l.dst.(interface{ CloseWrite() error }); ok {
				cw.CloseWrite()
			}
			if both {
				p.closeConn(pc)
			}
			return
		}
		c := l.queue[0]
		l.queue[0] = chunk{}
		l.queue = l.queue[1:]
		l.queued -= len(c.b)
		p.cond.Broadcast() // room for a reader waiting on maxHeld
		p.mu.Unlock()
		if _, err := l.dst.Write(c.b); err != nil {
			p.closeConn(pc)
			return
		}
	}
}

// writable reports whether the writer has something to pass on now: a
// chunk not held, or the end of the stream (held too while f holds).
func (l *link) writable(f flow) bool {
	if len(l.queue) > 0 {
		return !l.queue[0].held
	}
	return l.eof && f != flowHold
}

// closeConn closes both sockets of pc and forgets what it held.
func (p *Proxy) closeConn(pc *proxyConn) {
	p.mu.Lock()
	if pc.closed {
		p.mu.Unlock()
		return
	}
	pc.closed = true
	for _, l := range pc.links {
		l.queue, l.queued = nil, 0
	}
	delete(p.conns, pc)
	p.cond.Broadcast()
	p.mu.Unlock()
	pc.client.Close()
	pc.server.Close()
}

// reset closes c with an RST rather than a FIN.
func reset(c net.Conn) {
	if tc, ok := c.(*net.TCPConn); ok {
		tc.SetLinger(0)
	}
	c.Close()
}

func (d Direction) index() int {
	if d == FromTarget {
		return 1
	}
	return 0
}

func (d Direction) indexes() []int {
	var out []int
	if d&ToTarget != 0 {
		out = append(out, 0)
	}
	if d&FromTarget != 0 {
		out = append(out, 1)
	}
	return out
}
