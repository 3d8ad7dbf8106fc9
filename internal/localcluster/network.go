package localcluster

import (
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"slices"
	"sync"
	"time"
)

// Clients is the party id of this process (the clients it runs) in
// Network's cuts; nodes are 1..N.
const Clients int32 = 0

// CutMode is how a cut link treats its connections.
type CutMode uint8

const (
	// BlackHole stops moving bytes on the link's connections, both ways,
	// and parks new ones (accepted, never answered): senders see what a
	// real partition shows them, silence, until their own timeouts fire.
	// Heal moves the bytes again, as TCP's retransmissions would once the
	// network is back, and connects the parked connections.
	BlackHole CutMode = iota + 1
	// Reset closes the link's connections and resets new ones at once:
	// nothing in flight is ever delivered.
	Reset
)

// Network is the fault-injecting proxies of a proxied cluster: two per
// node (client and controller listener), in this process. Every
// connection that reaches a node crosses one of them; the proxy learns
// from the kernel which process opened it (owner.go), so a cut can be
// per link: between two nodes, or between this process's clients and a
// node. A cut is symmetric, or one-way (CutOneWay): only what one party
// sends is held, whoever opened the connection.
type Network struct {
	c   *Cluster
	log *slog.Logger
	wg  sync.WaitGroup

	mu   sync.Mutex
	cond *sync.Cond       // broadcast on every change of cuts or conns
	cuts map[[2]int32]cut // by direction: {sender, receiver}
	// delays are the slow links (Delay), by direction, as cuts.
	delays  map[[2]int32]delay
	conns   map[*pconn]struct{}
	proxies []*proxy
	closed  bool
	direct  map[string]*proxy // by proxy address
	owned   map[string]int    // listener address -> the node process seen listening there
}

// proxy is one listener in front of one of a node's listeners.
type proxy struct {
	ln   net.Listener
	node *Node
	ctrl bool // in front of the controller listener
}

// target is where the proxy connects now, and the process that must be
// listening there; ok is false while the node is down.
func (p *proxy) target() (addr string, pid int, ok bool) {
	if !p.node.Running() {
		return "", 0, false
	}
	client, ctrl := p.node.Listeners()
	if p.ctrl {
		return ctrl, p.node.PID(), true
	}
	return client, p.node.PID(), true
}

// cut is how one link is cut.
type cut struct {
	mode CutMode
	// dataOnly spares the controller listeners: Raft and the
	// controller's APIs (heartbeats) still pass, Kafka's data does not.
	dataOnly bool
	// refs counts the cuts of the link not yet undone (Uncut): two
	// faults in force may cut one link, and the first to heal must not
	// heal the other's.
	refs int
}

// applies reports whether the cut stops connection pc.
func (c cut) applies(pc *pconn) bool { return c.mode != 0 && !(c.dataOnly && pc.ctrl) }

// pconn is one proxied connection.
type pconn struct {
	ctrl           bool // through a controller listener's proxy
	from, to       int32
	client, server net.Conn // server is nil while parked
	closed         bool
	ends           int // directions whose end of stream was passed on
}

// newNetwork binds the proxies and points the nodes' advertised client and
// controller addresses at them.
func newNetwork(c *Cluster, logger *slog.Logger) (*Network, error) {
	nw := &Network{c: c, log: logger, cuts: map[[2]int32]cut{}, delays: map[[2]int32]delay{}, conns: map[*pconn]struct{}{},
		direct: map[string]*proxy{}, owned: map[string]int{}}
	nw.cond = sync.NewCond(&nw.mu)
	for _, n := range c.Nodes {
		for i, addr := range []*string{&n.ClientAddr, &n.CtrlAddr} {
			ln, err := net.Listen("tcp", net.JoinHostPort(c.cfg.Host, "0"))
			if err != nil {
				nw.Close()
				return nil, fmt.Errorf("local cluster: proxy for node %d: %w", n.ID, err)
			}
			p := &proxy{ln: ln, node: n, ctrl: i == 1}
			nw.proxies = append(nw.proxies, p)
			*addr = ln.Addr().String()
			nw.direct[*addr] = p
		}
	}
	for _, p := range nw.proxies {
		nw.wg.Add(1)
		go nw.accept(p)
	}
	return nw, nil
}

// Direct maps a node's advertised (proxy) address to the listener behind
// it, for a client that must never be cut (one watching the cluster
// while it is partitioned). While the node is down or not listening yet
// the proxy's own address is returned, which refuses: whatever else may
// hold the node's port then is never reached. Other addresses are
// returned unchanged.
func (nw *Network) Direct(addr string) string {
	nw.mu.Lock()
	p, ok := nw.direct[addr]
	nw.mu.Unlock()
	if !ok {
		return addr
	}
	target, pid, up := p.target()
	if !up || !nw.listening(pid, target) {
		return addr
	}
	return target
}

func pair(a, b int32) [2]int32 {
	if a > b {
		a, b = b, a
	}
	return [2]int32{a, b}
}

// Cut cuts the link between parties a and b (node ids, or Clients).
func (nw *Network) Cut(a, b int32, mode CutMode) { nw.cut(a, b, cut{mode: mode}) }

// CutOneWay black-holes what party from sends to party to, on every
// connection between them, and nothing else: what a lossy route in one
// direction does to the requests and answers above TCP. If from opened
// the connection its requests are held (as in a black hole); if to did,
// from still receives and serves its requests, and its answers are held:
// work done that its asker never hears of. UncutOneWay undoes it.
func (nw *Network) CutOneWay(from, to int32) {
	if from == to {
		return
	}
	nw.mu.Lock()
	defer nw.mu.Unlock()
	nw.addCutLocked([2]int32{from, to}, cut{mode: BlackHole})
	nw.cond.Broadcast()
}

// UncutOneWay undoes one CutOneWay(from, to).
func (nw *Network) UncutOneWay(from, to int32) {
	nw.mu.Lock()
	defer nw.mu.Unlock()
	nw.uncutLocked([2]int32{from, to})
}

// addCutLocked sets the cut of one direction, counting it.
func (nw *Network) addCutLocked(dir [2]int32, c cut) {
	c.refs = nw.cuts[dir].refs + 1
	nw.cuts[dir] = c
}

// uncutLocked undoes one cut of a direction; its bytes move again once
// every cut of it is undone.
func (nw *Network) uncutLocked(dir [2]int32) {
	c, ok := nw.cuts[dir]
	if !ok {
		return
	}
	if c.refs--; c.refs > 0 {
		nw.cuts[dir] = c
		return
	}
	delete(nw.cuts, dir)
	nw.cond.Broadcast()
}

// CutData cuts the link between two nodes on their client listeners
// only: the followers' fetches and every Kafka request stop, while Raft
// and the controller's APIs (registration, heartbeats) still pass, so
// neither node is fenced for it.
func (nw *Network) CutData(a, b int32, mode CutMode) {
	nw.cut(a, b, cut{mode: mode, dataOnly: true})
}

func (nw *Network) cut(a, b int32, c cut) {
	if a == b {
		return
	}
	nw.mu.Lock()
	nw.addCutLocked([2]int32{a, b}, c)
	nw.addCutLocked([2]int32{b, a}, c)
	var reset []*pconn
	if c.mode == Reset {
		for pc := range nw.conns {
			if pair(pc.from, pc.to) == pair(a, b) && c.applies(pc) {
				reset = append(reset, pc)
			}
		}
	}
	nw.cond.Broadcast()
	nw.mu.Unlock()
	for _, pc := range reset {
		nw.closeConn(pc, true)
	}
}

// Uncut undoes one Cut of the link between a and b; the link moves
// again once every cut of it is undone.
func (nw *Network) Uncut(a, b int32) {
	nw.mu.Lock()
	defer nw.mu.Unlock()
	nw.uncutLocked([2]int32{a, b})
	nw.uncutLocked([2]int32{b, a})
}

// Heal ends every cut: black-holed connections move again, parked ones
// are connected.
func (nw *Network) Heal() {
	nw.mu.Lock()
	defer nw.mu.Unlock()
	clear(nw.cuts)
	clear(nw.delays)
	nw.cond.Broadcast()
}

// Cuts lists the links cut now, either way or both.
func (nw *Network) Cuts() [][2]int32 {
	nw.mu.Lock()
	defer nw.mu.Unlock()
	var out [][2]int32
	for d := range nw.cuts {
		if p := pair(d[0], d[1]); !slices.Contains(out, p) {
			out = append(out, p)
		}
	}
	slices.SortFunc(out, func(a, b [2]int32) int {
		if a[0] != b[0] {
			return int(a[0] - b[0])
		}
		return int(a[1] - b[1])
	})
	return out
}

// Close stops every proxy and connection and waits for their goroutines.
func (nw *Network) Close() {
	nw.mu.Lock()
	if nw.closed {
		nw.mu.Unlock()
		return
	}
	nw.closed = true
	var conns []*pconn
	for pc := range nw.conns {
		conns = append(conns, pc)
	}
	nw.cond.Broadcast()
	nw.mu.Unlock()
	for _, p := range nw.proxies {
		p.ln.Close()
	}
	for _, pc := range conns {
		nw.closeConn(pc, false)
	}
	nw.wg.Wait()
}

// pids maps every process that may connect to a node to its party id.
func (nw *Network) pids() map[int]int32 {
	out := map[int]int32{os.Getpid(): Clients}
	for _, n := range nw.c.Nodes {
		if pid := n.PID(); pid > 0 {
			out[pid] = n.ID
		}
	}
	return out
}

func (nw *Network) accept(p *proxy) {
	defer nw.wg.Done()
	for {
		c, err := p.ln.Accept()
		if err != nil {
			if errors.Is(err, net.ErrClosed) {
				return
			}
			time.Sleep(10 * time.Millisecond) // out of descriptors: retry
			continue
		}
		nw.wg.Add(1)
		go nw.serve(p, c)
	}
}

// serve identifies who opened c, waits while its link is black-holed,
// connects it to the node and moves bytes until either side closes.
func (nw *Network) serve(p *proxy, c net.Conn) {
	defer nw.wg.Done()
	from, err := connOwner(c, nw.pids())
	if err != nil {
		// Its opener is gone already, or is no process of ours: a
		// stranger is never let through a proxy that may be cut.
		nw.log.Debug("proxy: unknown connection", "node", p.node.ID, "err", err)
		resetConn(c)
		return
	}
	pc := &pconn{ctrl: p.ctrl, from: from, to: p.node.ID, client: c}
	nw.mu.Lock()
	if nw.closed {
		nw.mu.Unlock()
		c.Close()
		return
	}
	nw.conns[pc] = struct{}{}
	// A new connection is parked while its opener's bytes are held: a
	// one-way cut of the other direction lets it connect, so that its
	// requests are served and only the answers held.
	ok := nw.waitPassLocked(pc, pc.from)
	nw.mu.Unlock()
	if !ok {
		nw.closeConn(pc, true)
		return
	}
	target, pid, up := p.target()
	if !up || !nw.listening(pid, target) {
		// Down, or not listening yet: nothing else may answer in its
		// place (another process may hold its old port meanwhile).
		nw.closeConn(pc, true)
		return
	}
	s, err := net.DialTimeout("tcp", target, 5*time.Second)
	if err != nil {
		nw.closeConn(pc, true) // the node is down: so is its proxy
		return
	}
	nw.mu.Lock()
	if pc.closed {
		nw.mu.Unlock()
		s.Close()
		return
	}
	pc.server = s
	nw.mu.Unlock()
	nw.wg.Add(2)
	go nw.pump(pc, c, s)
	go nw.pump(pc, s, c)
}

// listening reports whether process pid holds the listening socket at
// addr, remembering a yes (a process keeps its listeners until it exits).
func (nw *Network) listening(pid int, addr string) bool {
	nw.mu.Lock()
	seen := nw.owned[addr] == pid
	nw.mu.Unlock()
	if seen {
		return true
	}
	ta, err := net.ResolveTCPAddr("tcp", addr)
	if err != nil {
		return false
	}
	ino, err := listenerInode(ta)
	if err != nil || !holdsSocket(pid, ino) {
		return false
	}
	nw.mu.Lock()
	nw.owned[addr] = pid
	nw.mu.Unlock()
	return true
}

// waitPassLocked waits while what sender sends on pc is black-holed; it
// reports false if pc is closed or its link reset meanwhile.
func (nw *Network) waitPassLocked(pc *pconn, sender int32) bool {
	dir := [2]int32{pc.from, pc.to}
	if sender != pc.from {
		dir = [2]int32{pc.to, pc.from}
	}
	for {
		if pc.closed || nw.closed {
			return false
		}
		c := nw.cuts[dir]
		switch {
		case !c.applies(pc):
			return true
		case c.mode == Reset:
			return false
		default: // BlackHole
			nw.cond.Wait()
		}
	}
}

// pump copies src to dst, a chunk at a time, holding each chunk while the
// link is black-holed (so the sender meets TCP backpressure, not loss).
func (nw *Network) pump(pc *pconn, src, dst net.Conn) {
	defer nw.wg.Done()
	sender := pc.to
	if src == pc.client {
		sender = pc.from
	}
	buf := make([]byte, 32<<10)
	for {
		n, err := src.Read(buf)
		if n > 0 {
			read := time.Now()
			nw.mu.Lock()
			ok := nw.waitPassLocked(pc, sender)
			d := nw.delayLocked(pc, sender)
			nw.mu.Unlock()
			if !ok {
				nw.closeConn(pc, true)
				return
			}
			// A slow link: a delay is a few seconds at most, and a
			// closed connection ends at the write below.
			time.Sleep(time.Until(read.Add(d)))
			if _, werr := dst.Write(buf[:n]); werr != nil {
				nw.closeConn(pc, true)
				return
			}
		}
		if err != nil {
			if tc, ok := dst.(*net.TCPConn); ok && errors.Is(err, io.EOF) {
				tc.CloseWrite() // pass the end of the stream on
				nw.ended(pc)
				return
			}
			nw.closeConn(pc, true)
			return
		}
	}
}

// ended notes that one direction of pc has passed its end of stream on,
// and closes pc once both have.
func (nw *Network) ended(pc *pconn) {
	nw.mu.Lock()
	pc.ends++
	both := pc.ends == 2
	nw.mu.Unlock()
	if both {
		nw.closeConn(pc, false)
	}
}

// closeConn closes both sockets of pc, with a reset if asked.
func (nw *Network) closeConn(pc *pconn, rst bool) {
	nw.mu.Lock()
	if pc.closed {
		nw.mu.Unlock()
		return
	}
	pc.closed = true
	delete(nw.conns, pc)
	nw.cond.Broadcast()
	nw.mu.Unlock()
	for _, c := range []net.Conn{pc.client, pc.server} {
		if c == nil {
			continue
		}
		if rst {
			resetConn(c)
		} else {
			c.Close()
		}
	}
}

func resetConn(c net.Conn) {
	if tc, ok := c.(*net.TCPConn); ok {
		tc.SetLinger(0)
	}
	c.Close()
}
