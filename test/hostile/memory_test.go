package hostile

import (
	"context"
	"encoding/binary"
	"net"
	"sync"
	"testing"
	"time"

	"github.com/weir-project/weir/test/harness"
)

// prefix is a size prefix claiming n bytes.
func prefix(n int) []byte { return binary.BigEndian.AppendUint32(nil, uint32(n)) }

// The old network layer allocated a frame's claimed size as soon as its
// prefix arrived: 50 clients doing this grew it to 24 GiB in 25 s.
func TestPrefixOnlyClaimsCostNothing(t *testing.T) {
	b := harness.StartBroker(t)
	l := newLegit(t, b, "legit-prefix")
	g, attack := guard(t, b)
	attackCtx, stopAttack := context.WithCancel(attack)
	defer stopAttack()
	waitLegit := l.during(attackCtx)

	const clients, rounds = 50, 20
	var wg sync.WaitGroup
	for range clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range rounds {
				if attackCtx.Err() != nil {
					return
				}
				c, err := net.DialTimeout("tcp", b.Addr, opTimeout)
				if err != nil {
					continue // the broker's accept queue may be full for a moment
				}
				c.SetDeadline(time.Now().Add(opTimeout))
				c.Write(prefix(claim))
				time.Sleep(50 * time.Millisecond) // the attack's rhythm
				c.Close()
			}
		}()
	}
	wg.Wait()
	// The legit client must have completed a round trip while the attack
	// ran: let it finish one more if the attack was short.
	harness.WaitFor(t, opTimeout, "a legit round trip during the attack", func() bool { return g.tripped.Load() || l.done.Load() > 1 })
	stopAttack()
	n := waitLegit()
	g.check("50 clients x 20 prefix-only claims")
	if err := l.roundTrip(context.Background()); err != nil {
		t.Fatalf("legit client after the attack: %v", err)
	}
	t.Logf("legit round trips during the attack: %d", n)
}

// 100 connections each announce a 100 MiB Produce request, send its
// header and hold it; each lets go after a while and comes back, so that
// 100 claims stand at every moment. A frame is charged only for the bytes
// that came.
func TestHeldClaimsCostNothing(t *testing.T) {
	b := harness.StartBroker(t)
	l := newLegit(t, b, "legit-held")
	g, attack := guard(t, b)
	attackCtx, stopAttack := context.WithCancel(attack)
	defer stopAttack()

	// Produce v9: header (key 0, version 9, correlation id, client id,
	// no tags), then a null transactional id: the rest never comes.
	start := append(prefix(claim), frameBody(0, 9, true, 1, []byte{0})[4:]...)
	const holders, rounds = 100, 5
	var wg sync.WaitGroup
	var holding sync.WaitGroup
	holding.Add(holders)
	for range holders {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for r := 0; r < rounds && attackCtx.Err() == nil; r++ {
				c, err := net.DialTimeout("tcp", b.Addr, opTimeout)
				if err != nil {
					continue
				}
				c.SetDeadline(time.Now().Add(opTimeout))
				c.Write(start)
				if r == 0 {
					holding.Done()
				}
				select { // the attack's rhythm: hold, let go, come back
				case <-attackCtx.Done():
				case <-time.After(200 * time.Millisecond):
				}
				c.Close()
			}
		}()
	}
	holding.Wait()
	fds, _ := harness.FDCount(b.PID())
	waitLegit := l.during(attackCtx)
	harness.WaitFor(t, opTimeout, "3 legit round trips while 100 claims are held", func() bool { return g.tripped.Load() || l.done.Load() > 3 })
	wg.Wait()
	stopAttack()
	waitLegit()
	g.check("100 held 100 MiB claims")
	t.Logf("broker fds with %d connections held: %d", holders, fds)
	if err := l.roundTrip(context.Background()); err != nil {
		t.Fatalf("legit client after the attack: %v", err)
	}
}

// A frame must keep arriving: one that trickles is cut after
// weir.transfer.timeout.ms (plus what its bytes bought), its memory is
// returned, and an honest client sending faster than the floor is not cut
// even when its request takes longer than the timeout.
func TestTrickledFramesAreCut(t *testing.T) {
	const grace, rate = 2 * time.Second, 4 << 20
	b := harness.StartBroker(t, "weir.transfer.timeout.ms=2000", "weir.transfer.min.bytes.per.second=4194304")
	g, attack := guard(t, b)

	// One trickler sends a header, then a byte every 100 ms; the other
	// sends 8 MiB of records at once, then trickles.
	produceStart := func(records int) []byte {
		body := []byte{0, 0xff, 0xff, 0, 0, 0x75, 0x30, 2, 2, 't', 2, 0, 0, 0, 0}
		body = binary.AppendUvarint(body, uint64(records+1))
		return frameBody(0, 9, true, 1, body)[4:]
	}
	type result struct {
		name    string
		elapsed time.Duration
		allowed time.Duration
	}
	results := make(chan result, 2)
	trickle := func(name string, first []byte, allowed time.Duration) {
		c, err := net.DialTimeout("tcp", b.Addr, opTimeout)
		if err != nil {
			t.Errorf("%s: dial: %v", name, err)
			results <- result{name: name}
			return
		}
		defer c.Close()
		began := time.Now()
		c.SetWriteDeadline(time.Now().Add(opTimeout))
		if _, err := c.Write(append(prefix(claim), first...)); err != nil {
			t.Errorf("%s: write: %v", name, err)
		}
		closed := make(chan struct{})
		go func() {
			defer close(closed)
			c.SetReadDeadline(time.Now().Add(opTimeout))
			var buf [1]byte
			c.Read(buf[:])
		}()
		tick := time.NewTicker(100 * time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-closed:
				results <- result{name, time.Since(began), allowed}
				return
			case <-attack.Done():
				results <- result{name: name}
				return
			case <-tick.C:
				c.Write([]byte{0})
			}
		}
	}
	go trickle("trickle from the header", produceStart(claim-64), grace)
	big := append(produceStart(claim-64), make([]byte, 8<<20)...)
	go trickle("trickle after 8 MiB", big, grace+time.Duration(len(big)*int(time.Second)/rate))
	for range 2 {
		r := <-results
		if r.elapsed == 0 {
			continue
		}
		t.Logf("%s: closed after %v (allowed %v)", r.name, r.elapsed.Round(time.Millisecond), r.allowed)
		if r.elapsed < grace {
			t.Errorf("%s: closed after %v, before the %v grace", r.name, r.elapsed, grace)
		}
		if r.elapsed > r.allowed+15*time.Second {
			t.Errorf("%s: closed only after %v, allowed %v", r.name, r.elapsed, r.allowed)
		}
	}
	g.check("tricklers")
	if t.Failed() {
		t.FailNow()
	}
	// The broker logs each cut with what the frame held and what the
	// memory pool still holds after: one trickler held 8 MiB, and once
	// both are cut the pool holds nothing.
	var cuts []cut
	deadline := time.Now().Add(opTimeout)
	for cuts = cutsLogged(b.Output()); len(cuts) < 2; cuts = cutsLogged(b.Output()) {
		if time.Now().After(deadline) {
			t.Fatalf("two 'request too slow' log lines expected, found %d:\n%s", len(cuts), b.Output())
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Logf("cuts logged: %+v", cuts)
	if max(cuts[0].released, cuts[1].released) < 8<<20 {
		t.Errorf("no trickler released the 8 MiB it had sent")
	}
	if last := cuts[len(cuts)-1]; last.poolInUse != 0 {
		t.Errorf("the pool still holds %d bytes after both tricklers were cut", last.poolInUse)
	}

	// An honest client sends 16 MiB at about 8 MiB/s: 2 s, as long as
	// the grace, but always ahead of the 4 MiB/s floor.
	c, err := net.DialTimeout("tcp", b.Addr, opTimeout)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	const records = 16 << 20
	req := append(produceStart(records), make([]byte, records)...)
	req = append(req, 0, 0, 0) // partition, topic and request tags
	req = append(prefix(len(req)), req...)
	c.SetDeadline(time.Now().Add(opTimeout))
	began := time.Now()
	for len(req) > 0 {
		n := min(len(req), 512<<10)
		if _, err := c.Write(req[:n]); err != nil {
			t.Fatalf("honest slow client cut after %v: %v\n%s", time.Since(began), err, b.Output())
		}
		req = req[n:]
		time.Sleep(62 * time.Millisecond) // the client's pace: 8 MiB/s
	}
	corr, _, err := readResponse(c)
	if err != nil {
		t.Fatalf("honest slow client got no answer after %v: %v\n%s", time.Since(began), err, b.Output())
	}
	if corr != 1 {
		t.Fatalf("answer with correlation id %d, want 1", corr)
	}
	t.Logf("honest 16 MiB request sent in %v and answered", time.Since(began).Round(time.Millisecond))
	if err := apiVersions(c, 2, opTimeout); err != nil {
		t.Fatalf("honest connection no longer served: %v", err)
	}
}
