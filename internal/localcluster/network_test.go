package localcluster

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"
)

// TestHelperEcho is not a test: run by echoNode as a child process, it
// serves line echo on $WEIR_TEST_ECHO until killed.
func TestHelperEcho(t *testing.T) {
	addrs := os.Getenv("WEIR_TEST_ECHO")
	if addrs == "" {
		t.Skip("helper process for TestNetworkCutsByOpener")
	}
	for _, addr := range strings.Split(addrs, ",") {
		ln, err := net.Listen("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		go serveEcho(ln)
	}
	fmt.Println("listening")
	select {}
}

func serveEcho(ln net.Listener) {
	for {
		c, err := ln.Accept()
		if err != nil {
			return
		}
		go func() {
			defer c.Close()
			io.Copy(c, c)
		}()
	}
}

// echoNode makes n a running process that echoes on both its listeners:
// this test binary, re-run as TestHelperEcho.
func echoNode(t *testing.T, n *Node) {
	t.Helper()
	addr, ctrl := n.Listeners()
	cmd := exec.Command(os.Args[0], "-test.run=^TestHelperEcho$")
	cmd.Env = append(os.Environ(), "WEIR_TEST_ECHO="+addr+","+ctrl)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() {
		cmd.Wait()
		close(done)
	}()
	t.Cleanup(func() {
		cmd.Process.Kill()
		<-done
	})
	if line, err := bufio.NewReader(out).ReadString('\n'); err != nil || strings.TrimSpace(line) != "listening" {
		t.Fatalf("echo helper: %q %v", line, err)
	}
	n.mu.Lock()
	n.cmd, n.done = cmd, done
	n.mu.Unlock()
}

// lineConn is one end of an echo connection: send a line, read it back.
// One goroutine reads lines into a channel, so a read that timed out
// leaves its line to the next one.
type lineConn struct {
	w     io.Writer
	lines chan lineOrErr
}

type lineOrErr struct {
	s   string
	err error
}

func newLineConn(w io.Writer, r io.Reader) *lineConn {
	l := &lineConn{w: w, lines: make(chan lineOrErr, 16)}
	go func() {
		br := bufio.NewReader(r)
		for {
			s, err := br.ReadString('\n')
			l.lines <- lineOrErr{strings.TrimSpace(s), err}
			if err != nil {
				return
			}
		}
	}()
	return l
}

// roundTrip sends s and waits up to wait for it to come back.
func (l *lineConn) roundTrip(s string, wait time.Duration) error {
	if _, err := fmt.Fprintln(l.w, s); err != nil {
		return err
	}
	got, err := readLine(l, wait)
	if err == nil && got != s {
		err = fmt.Errorf("echoed %q, want %q", got, s)
	}
	return err
}

var errTimeout = errors.New("no echo in time")

// otherProcess connects to a node's client and controller proxies from
// a child process (a shell), standing in for another node. It connects
// once told to (a first line "go": the test must first register it as
// the node, or the proxies refuse it); then a line "c X" goes over the
// first connection, "k X" over the second, and what comes back is
// written out. A closed connection ends the shell.
func otherProcess(t *testing.T, client, ctrl string) (*exec.Cmd, *lineConn) {
	t.Helper()
	h1, p1, _ := net.SplitHostPort(client)
	h2, p2, _ := net.SplitHostPort(ctrl)
	cmd := exec.Command("bash", "-c", fmt.Sprintf(`read -r _ || exit 1; exec 3<>/dev/tcp/%s/%s || exit 1; exec 4<>/dev/tcp/%s/%s || exit 1
while read -r ch l; do
  if [ "$ch" = c ]; then echo "$l" >&3; read -r r <&3 || exit 1; else echo "$l" >&4; read -r r <&4 || exit 1; fi
  echo "$r"
done`, h1, p1, h2, p2))
	in, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Skipf("no bash to stand in for a node: %v", err)
	}
	t.Cleanup(func() {
		in.Close()
		cmd.Process.Kill()
		cmd.Wait()
	})
	return cmd, newLineConn(in, out)
}

// via sends s over the shell's client ("c") or controller ("k") link.
func via(l *lineConn, link, s string, wait time.Duration) error {
	if _, err := fmt.Fprintln(l.w, link, s); err != nil {
		return err
	}
	got, err := readLine(l, wait)
	if err == nil && got != s {
		err = fmt.Errorf("echoed %q, want %q", got, s)
	}
	return err
}

// TestNetworkCutsByOpener: a proxy tells connections apart by the process
// that opened them, and connects only to its own node's process. A black
// hole between node 2 and node 1 holds node 2's bytes (delivered at the
// heal) while this process's clients go on; a reset between the clients
// and node 1 closes their connection and refuses new ones while node 2
// goes on; a data-only cut spares the controller listener; a process of
// no node is refused; a dead node's port taken by another process is not
// connected to.
func TestNetworkCutsByOpener(t *testing.T) {
	c, err := New(Config{Nodes: 2, Dir: t.TempDir(), Binary: "/bin/true", Proxied: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	n1 := c.Node(1)
	if n1.ClientAddr == n1.ListenAddr || n1.CtrlAddr == n1.ListenCtrlAddr {
		t.Fatal("a proxied node is reached at its own listeners")
	}
	if got := c.Network().Direct(n1.ClientAddr); got != n1.ClientAddr {
		t.Fatalf("Direct(%s) = %s for a node not running, want the proxy", n1.ClientAddr, got)
	}
	echoNode(t, n1)
	if got := c.Network().Direct(n1.ClientAddr); got != n1.ListenAddr {
		t.Fatalf("Direct(%s) = %s, want %s", n1.ClientAddr, got, n1.ListenAddr)
	}

	// Node 2 is a shell connected to node 1's proxy.
	cmd, peer := otherProcess(t, n1.ClientAddr, n1.CtrlAddr)
	c.Node(2).mu.Lock()
	c.Node(2).cmd = cmd
	c.Node(2).mu.Unlock()
	fmt.Fprintln(peer.w, "go")

	const wait = 30 * time.Second
	// exchange sends s over a new client connection to node 1. A proxy
	// refuses a connection by accepting and resetting it, and that reset
	// may reach the dial before connect returns: a refusal is an error
	// from either.
	exchange := func(s string) error {
		conn, err := net.Dial("tcp", n1.ClientAddr)
		if err != nil {
			return err
		}
		t.Cleanup(func() { conn.Close() })
		return newLineConn(conn, conn).roundTrip(s, wait)
	}
	client := dialLine(t, n1.ClientAddr)
	if err := client.roundTrip("hello", wait); err != nil {
		t.Fatalf("before any cut: %v", err)
	}
	for _, link := range []string{"c", "k"} {
		if err := via(peer, link, "hello", wait); err != nil {
			t.Fatalf("before any cut, node 2 over %s: %v", link, err)
		}
	}

	nw := c.Network()
	nw.Cut(2, 1, BlackHole)
	if got := nw.Cuts(); len(got) != 1 || got[0] != [2]int32{1, 2} {
		t.Fatalf("cuts %v", got)
	}
	if err := client.roundTrip("clients pass", wait); err != nil {
		t.Fatalf("clients with node 2 cut from node 1: %v", err)
	}
	// The cut holds node 2's bytes: no echo may come while it lasts. A
	// short wait shows it (the bytes cannot pass, however long one waits).
	if err := via(peer, "c", "held", 300*time.Millisecond); !errors.Is(err, errTimeout) {
		t.Fatalf("node 2 through a black hole: %v, want no answer", err)
	}
	nw.Heal()
	if line, err := readLine(peer, wait); err != nil || line != "held" {
		t.Fatalf("after the heal, the held line: %q %v", line, err)
	}

	// Two faults cut one link: the first Uncut leaves it cut, the
	// second moves the bytes again.
	nw.Cut(1, 2, BlackHole)
	nw.Cut(2, 1, BlackHole)
	nw.Uncut(1, 2)
	if got := nw.Cuts(); len(got) != 1 {
		t.Fatalf("cuts after one of two uncuts: %v", got)
	}
	if err := via(peer, "c", "still held", 300*time.Millisecond); !errors.Is(err, errTimeout) {
		t.Fatalf("node 2 with one of two cuts undone: %v, want no answer", err)
	}
	nw.Uncut(2, 1)
	if got := nw.Cuts(); len(got) != 0 {
		t.Fatalf("cuts after both uncuts: %v", got)
	}
	if line, err := readLine(peer, wait); err != nil || line != "still held" {
		t.Fatalf("after both uncuts, the held line: %q %v", line, err)
	}

	nw.Cut(Clients, 1, Reset)
	if err := client.roundTrip("reset", wait); err == nil || errors.Is(err, errTimeout) {
		t.Fatalf("a client of a reset link: %v, want the connection closed", err)
	}
	if err := exchange("refused"); err == nil || errors.Is(err, errTimeout) {
		t.Fatalf("a new client of a reset link: %v, want it refused", err)
	}
	if err := via(peer, "c", "node 2 passes", wait); err != nil {
		t.Fatalf("node 2 with the clients cut: %v", err)
	}
	nw.Heal()
	if err := exchange("healed"); err != nil {
		t.Fatalf("a new client after the heal: %v", err)
	}

	// A data-only cut between nodes 2 and 1 spares node 2's connection to
	// node 1's controller listener and resets the one to its client
	// listener (which ends the shell).
	nw.CutData(2, 1, Reset)
	if err := via(peer, "k", "heartbeat passes", wait); err != nil {
		t.Fatalf("the controller link with the data cut: %v", err)
	}
	if err := via(peer, "c", "fetch", wait); err == nil || errors.Is(err, errTimeout) {
		t.Fatalf("the client link with the data cut: %v, want it reset", err)
	}
	nw.Heal()

	// A process of no node of the cluster is refused.
	_, stranger := otherProcess(t, n1.ClientAddr, n1.CtrlAddr)
	fmt.Fprintln(stranger.w, "go")
	if err := via(stranger, "c", "who", wait); err == nil || errors.Is(err, errTimeout) {
		t.Fatalf("a connection from outside the cluster: %v, want it refused", err)
	}

	// Node 1 dies and a stranger takes its port: the proxy must refuse
	// rather than connect clients to the stranger.
	n1.Kill()
	addr, _ := n1.Listeners()
	squatter, err := net.Listen("tcp", addr)
	if err != nil {
		t.Fatalf("take node 1's port: %v", err)
	}
	defer squatter.Close()
	go serveEcho(squatter)
	if err := exchange("stranger"); err == nil || errors.Is(err, errTimeout) {
		t.Fatalf("a client of a dead node whose port another process holds: %v, want refused", err)
	}
}

func readLine(l *lineConn, wait time.Duration) (string, error) {
	select {
	case r := <-l.lines:
		return r.s, r.err
	case <-time.After(wait):
		return "", errTimeout
	}
}

// TestNetworkCutOneWay: a one-way cut holds only what one party sends. A
// client connecting while node 1's answers are cut is connected, and its
// request served: once the cut turns the other way the answer comes,
// although the client's own bytes are held by then; those come through at
// the heal.
func TestNetworkCutOneWay(t *testing.T) {
	n1, nw := oneEchoNode(t)
	const wait = 30 * time.Second

	nw.CutOneWay(1, Clients)
	if got := nw.Cuts(); len(got) != 1 || got[0] != [2]int32{Clients, 1} {
		t.Fatalf("cuts %v", got)
	}
	client := dialLine(t, n1.ClientAddr)
	// No answer may come while node 1's bytes are held; a short wait
	// shows it, as no wait would bring one.
	if err := client.roundTrip("served", 300*time.Millisecond); !errors.Is(err, errTimeout) {
		t.Fatalf("an answer through a cut of node 1's bytes: %v, want none", err)
	}

	nw.CutOneWay(Clients, 1)
	nw.UncutOneWay(1, Clients)
	if line, err := readLine(client, wait); err != nil || line != "served" {
		t.Fatalf("the held answer once node 1's bytes move: %q %v", line, err)
	}
	if err := client.roundTrip("held", 300*time.Millisecond); !errors.Is(err, errTimeout) {
		t.Fatalf("a request through a cut of the clients' bytes: %v, want no answer", err)
	}
	nw.UncutOneWay(Clients, 1)
	if got := nw.Cuts(); len(got) != 0 {
		t.Fatalf("cuts after the heal: %v", got)
	}
	if line, err := readLine(client, wait); err != nil || line != "held" {
		t.Fatalf("after the heal, the held request's echo: %q %v", line, err)
	}
}

// TestNetworkDelay: a slow link passes every byte, each way d late; two
// Delays of a link hold until both are undone; Heal ends them all. The
// test asserts lower bounds only (a sleep never ends early), so a slow
// machine cannot fail it.
func TestNetworkDelay(t *testing.T) {
	n1, nw := oneEchoNode(t)
	client := dialLine(t, n1.ClientAddr)
	if err := client.roundTrip("before", 30*time.Second); err != nil {
		t.Fatal(err)
	}

	const d = 300 * time.Millisecond
	nw.Delay(Clients, 1, d)
	nw.Delay(1, Clients, d/2)
	began := time.Now()
	if err := client.roundTrip("slow", 30*time.Second); err != nil {
		t.Fatalf("through a slow link: %v", err)
	}
	if took := time.Since(began); took < 2*d {
		t.Fatalf("a round trip through a link slowed by %v took %v, want at least %v", d, took, 2*d)
	}
	nw.Undelay(1, Clients)
	nw.mu.Lock()
	left := nw.delays[[2]int32{Clients, 1}]
	nw.mu.Unlock()
	if left.d != d || left.refs != 1 {
		t.Fatalf("after one of two Undelays: %+v, want %v once", left, d)
	}
	nw.Undelay(Clients, 1)
	nw.Delay(Clients, 1, d)
	nw.Heal()
	nw.mu.Lock()
	n := len(nw.delays)
	nw.mu.Unlock()
	if n != 0 {
		t.Fatalf("%d slow directions after both Undelays and a Heal", n)
	}
	if err := client.roundTrip("after", 30*time.Second); err != nil {
		t.Fatal(err)
	}
}

// oneEchoNode is a proxied one-node cluster whose node is an echo server.
func oneEchoNode(t *testing.T) (*Node, *Network) {
	t.Helper()
	c, err := New(Config{Nodes: 1, Dir: t.TempDir(), Binary: "/bin/true", Proxied: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	echoNode(t, c.Node(1))
	return c.Node(1), c.Network()
}

// dialLine connects to addr, line by line, until the test ends.
func dialLine(t *testing.T, addr string) *lineConn {
	t.Helper()
	conn, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	return newLineConn(conn, conn)
}
