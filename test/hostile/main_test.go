// Package hostile attacks the real weir binary the way a hostile or broken
// client would: frames that claim far more than they send, bytes trickled
// one at a time, requests built to blow up in decoding, floods of
// connections. Each test watches the broker's memory and stops its attack
// past a safety limit, and proves that well-behaved clients are still
// served during and after it.
package hostile

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"regexp"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/weir-project/weir/test/harness"
)

// The binary is built without the race detector: under it, memory that a
// hostile claim makes the old broker allocate is never paged in, and the
// RSS limits below would prove nothing. Races in the network layer are
// the business of go test -race ./internal/server.
func TestMain(m *testing.M) { harness.MainWithoutRace(m) }

const (
	// opTimeout bounds one client operation on a slow, shared machine.
	opTimeout = 60 * time.Second
	// safetyRSS stops an attack before it can hurt the machine: the old
	// network layer reached 24 GiB under these attacks.
	safetyRSS = 2 << 30
	// maxGrowth is how much the broker may grow under an attack.
	maxGrowth = 256 << 20
	// claim is what the hostile frames announce: just under the default
	// socket.request.max.bytes.
	claim = 104857600 - 1
)

// rssGuard samples the broker's RSS while an attack runs. Past safetyRSS
// it cancels the attack's context, kills the broker and the test fails.
type rssGuard struct {
	t        *testing.T
	b        *harness.Broker
	pid      int
	baseline int64
	peak     atomic.Int64
	tripped  atomic.Bool
	stop     context.CancelFunc
	done     chan struct{}
}

// guard starts watching b; ctx (the attack's context) ends when the guard
// trips or the test ends.
func guard(t *testing.T, b *harness.Broker) (*rssGuard, context.Context) {
	t.Helper()
	pid := b.PID()
	base, err := harness.RSS(pid)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	g := &rssGuard{t: t, b: b, pid: pid, baseline: base, stop: cancel, done: make(chan struct{})}
	g.peak.Store(base)
	go func() {
		defer close(g.done)
		tick := time.NewTicker(10 * time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-tick.C:
			}
			rss, err := harness.RSS(pid)
			if err != nil {
				return // the broker died; the test notices
			}
			if rss > g.peak.Load() {
				g.peak.Store(rss)
			}
			if rss > safetyRSS {
				g.tripped.Store(true)
				cancel()
				g.b.Kill() // connections still open may grow it further
				return
			}
		}
	}()
	t.Cleanup(g.end)
	return g, ctx
}

// end stops sampling (idempotent).
func (g *rssGuard) end() {
	g.stop()
	<-g.done
}

// check ends sampling and fails the test if the broker grew more than
// maxGrowth over its baseline.
func (g *rssGuard) check(what string) {
	g.t.Helper()
	g.end()
	growth := g.peak.Load() - g.baseline
	g.t.Logf("%s: RSS baseline %d MiB, peak %d MiB (growth %d MiB)", what, g.baseline>>20, g.peak.Load()>>20, growth>>20)
	if g.tripped.Load() {
		g.t.Fatalf("%s: broker RSS passed the %d MiB safety limit; attack stopped", what, safetyRSS>>20)
	}
	if growth > maxGrowth {
		g.t.Fatalf("%s: broker RSS grew by %d MiB, limit %d MiB", what, growth>>20, maxGrowth>>20)
	}
}

// dialFrom connects to the broker from a given loopback address (so that
// per-IP limits can be tested apart from the harness's own clients).
func dialFrom(t *testing.T, addr, localIP string) (net.Conn, error) {
	t.Helper()
	d := net.Dialer{Timeout: opTimeout, LocalAddr: &net.TCPAddr{IP: net.ParseIP(localIP)}}
	c, err := d.Dial("tcp", addr)
	if err == nil {
		t.Cleanup(func() { c.Close() })
	}
	return c, err
}

// frameBody frames body under a key and version with request header v1,
// or v2 for flexible versions.
func frameBody(key, version int16, flexible bool, corr int32, body []byte) []byte {
	b := make([]byte, 4, 64+len(body))
	b = binary.BigEndian.AppendUint16(b, uint16(key))
	b = binary.BigEndian.AppendUint16(b, uint16(version))
	b = binary.BigEndian.AppendUint32(b, uint32(corr))
	const clientID = "weir-hostile"
	b = binary.BigEndian.AppendUint16(b, uint16(len(clientID)))
	b = append(b, clientID...)
	if flexible {
		b = append(b, 0)
	}
	b = append(b, body...)
	binary.BigEndian.PutUint32(b, uint32(len(b)-4))
	return b
}

// apiVersions sends ApiVersions v0 on c and reports whether an answer
// with the same correlation id came back within wait.
func apiVersions(c net.Conn, corr int32, wait time.Duration) error {
	req := kmsg.NewPtrApiVersionsRequest()
	if err := c.SetDeadline(time.Now().Add(wait)); err != nil {
		return err
	}
	if _, err := c.Write(frameBody(req.Key(), 0, false, corr, req.AppendTo(nil))); err != nil {
		return fmt.Errorf("write: %w", err)
	}
	got, _, err := readResponse(c)
	if err != nil {
		return err
	}
	if got != corr {
		return fmt.Errorf("correlation id %d, want %d", got, corr)
	}
	return nil
}

// readResponse reads one response frame (under c's deadline) and splits
// off its correlation id.
func readResponse(c net.Conn) (int32, []byte, error) {
	var prefix [4]byte
	if _, err := io.ReadFull(c, prefix[:]); err != nil {
		return 0, nil, fmt.Errorf("read: %w", err)
	}
	n := binary.BigEndian.Uint32(prefix[:])
	if n < 4 || n > 64<<20 {
		return 0, nil, fmt.Errorf("response size %d out of range", n)
	}
	body := make([]byte, n)
	if _, err := io.ReadFull(c, body); err != nil {
		return 0, nil, fmt.Errorf("read: %w", err)
	}
	return int32(binary.BigEndian.Uint32(body)), body[4:], nil
}

// expectClosed asserts the broker closes c without answering, within wait.
func expectClosed(t *testing.T, c net.Conn, wait time.Duration) {
	t.Helper()
	if err := c.SetReadDeadline(time.Now().Add(wait)); err != nil {
		t.Fatal(err)
	}
	var b [1]byte
	n, err := c.Read(b[:])
	var ne net.Error
	switch {
	case n > 0:
		t.Fatalf("expected the connection closed, got data %#x", b[0])
	case errors.As(err, &ne) && ne.Timeout():
		t.Fatalf("connection still open after %v", wait)
	case err == nil:
		t.Fatal("expected the connection closed, read returned no error")
	}
}

// legit is a well-behaved client producing and consuming one record at a
// time, counting its round trips.
type legit struct {
	t     *testing.T
	b     *harness.Broker
	topic string
	prod  *kgo.Client
	done  atomic.Int64
}

func newLegit(t *testing.T, b *harness.Broker, topic string) *legit {
	t.Helper()
	adm := kadm.NewClient(b.Client())
	if _, err := adm.CreateTopic(harness.Ctx(t, opTimeout), 1, 1, nil, topic); err != nil && !errors.Is(err, kerr.TopicAlreadyExists) {
		t.Fatalf("create topic %s: %v\n%s", topic, err, b.Output())
	}
	l := &legit{t: t, b: b, topic: topic, prod: b.Client()}
	l.roundTrip(context.Background())
	return l
}

// roundTrip produces one record and reads it back.
func (l *legit) roundTrip(parent context.Context) error {
	ctx, cancel := context.WithTimeout(parent, opTimeout)
	defer cancel()
	value := fmt.Sprintf("legit-%d", time.Now().UnixNano())
	rec, err := l.prod.ProduceSync(ctx, &kgo.Record{Topic: l.topic, Value: []byte(value)}).First()
	if err != nil {
		return fmt.Errorf("produce: %w", err)
	}
	cons := l.b.Client(kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{
		l.topic: {0: kgo.NewOffset().At(rec.Offset)},
	}))
	defer cons.Close()
	for {
		fs := cons.PollFetches(ctx)
		if err := ctx.Err(); err != nil {
			return fmt.Errorf("consume offset %d: %w", rec.Offset, err)
		}
		for _, r := range fs.Records() {
			if r.Offset == rec.Offset {
				if string(r.Value) != value {
					return fmt.Errorf("offset %d holds %q, want %q", r.Offset, r.Value, value)
				}
				l.done.Add(1)
				return nil
			}
		}
	}
}

// during runs round trips until ctx ends and returns how many succeeded;
// a failed one fails the test.
func (l *legit) during(ctx context.Context) (wait func() int64) {
	var wg sync.WaitGroup
	var errOnce atomic.Value
	start := l.done.Load()
	wg.Add(1)
	go func() {
		defer wg.Done()
		for ctx.Err() == nil {
			if err := l.roundTrip(ctx); err != nil && ctx.Err() == nil {
				errOnce.CompareAndSwap(nil, err)
				return
			}
		}
	}()
	return func() int64 {
		wg.Wait()
		if err, _ := errOnce.Load().(error); err != nil {
			l.t.Fatalf("legit client failed during the attack: %v\n%s", err, l.b.Output())
		}
		return l.done.Load() - start
	}
}

var cutRE = regexp.MustCompile(`closing connection: request too slow.* released_bytes=(\d+) pool_in_use=(\d+)`)

// cut is what the broker logged when it cut a connection as too slow: the
// memory its frame held, and what the pool still held after.
type cut struct{ released, poolInUse int64 }

// cutsLogged lists the broker's "request too slow" cuts in order.
func cutsLogged(out string) []cut {
	var cuts []cut
	for _, m := range cutRE.FindAllStringSubmatch(out, -1) {
		r, _ := strconv.ParseInt(m[1], 10, 64)
		p, _ := strconv.ParseInt(m[2], 10, 64)
		cuts = append(cuts, cut{r, p})
	}
	return cuts
}
