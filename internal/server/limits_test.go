package server

import (
	"math"
	"net"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// A response the client does not read is cut by the transfer rule, and
// its buffer, charged to the pool while written, is returned.
func TestUnreadResponseCut(t *testing.T) {
	h := newTestHandler()
	h.bigTopics = 40000 // about 8 MiB
	ts := startServer(t, h, func(cfg *Config) {
		cfg.TransferTimeout = 300 * time.Millisecond
		cfg.TransferMinRate = 64 << 20
	})
	c := dial(t, ts.addr)
	if err := c.(*net.TCPConn).SetReadBuffer(4096); err != nil {
		t.Fatal(err)
	}
	send(t, c, encodeRequest(kmsg.NewPtrMetadataRequest(), 12, 1, nil))
	waitUntil(t, "the response charged while written", func() bool { return ts.srv.pool.inUse() >= 8<<20 })
	// The write gives up (the kernel's buffers hold a few MiB of it)
	// and returns its charge.
	waitUntil(t, "the unread response cut and returned", func() bool { return ts.srv.pool.inUse() == 0 })
	expectServing(t, ts.addr)
}

// With several listeners, the inter-broker one is exempt from
// max.connections, and the least recently active other connection is
// closed to make room, as in Kafka; the others wait at the limit.
func TestProtectedListenerEvicts(t *testing.T) {
	ts := startServer(t, newTestHandler(), func(cfg *Config) {
		cfg.Listeners = append(cfg.Listeners, Listener{Name: "REPLICATION", Addr: "127.0.0.1:0"})
		cfg.Limits = &ConnLimits{MaxConnections: 2, MaxConnectionsPerIP: math.MaxInt32, ProtectedListener: "REPLICATION"}
	})
	old, recent := dial(t, ts.addr), dial(t, ts.addr)
	send(t, old, encodeRequest(kmsg.NewPtrApiVersionsRequest(), 0, 1, nil))
	readResponse(t, old)
	time.Sleep(10 * time.Millisecond) // make "recent" the more recently active, by the clock the server reads
	send(t, recent, encodeRequest(kmsg.NewPtrApiVersionsRequest(), 0, 2, nil))
	readResponse(t, recent)

	repl := dial(t, ts.srv.Addr("REPLICATION").String())
	send(t, repl, encodeRequest(kmsg.NewPtrApiVersionsRequest(), 0, 3, nil))
	if corr, _ := readResponse(t, repl); corr != 3 {
		t.Fatalf("replication connection answered %d", corr)
	}
	expectClosed(t, old)
	send(t, recent, encodeRequest(kmsg.NewPtrApiVersionsRequest(), 0, 4, nil))
	if corr, _ := readResponse(t, recent); corr != 4 {
		t.Fatalf("recent connection answered %d", corr)
	}
}

func TestPerIPOverridesResolveHosts(t *testing.T) {
	q, err := newConnQuotas(&ConnLimits{MaxConnections: 10, MaxConnectionsPerIP: 1,
		PerIPOverrides: map[string]int32{"localhost": 3, "10.1.2.3": 0}}, 1)
	if err != nil {
		t.Fatal(err)
	}
	if q.overrides["127.0.0.1"] != 3 || q.overrides["10.1.2.3"] != 0 {
		t.Fatalf("overrides %v", q.overrides)
	}
	if _, err := newConnQuotas(&ConnLimits{PerIPOverrides: map[string]int32{"no-such-host.invalid": 1}}, 1); err == nil {
		t.Fatal("an unresolvable override host was accepted")
	}
}
