package hostile

import (
	"net"
	"testing"
	"time"

	"github.com/weir-project/weir/test/harness"
)

// served asserts a connection is served (an ApiVersions round trip).
func served(t *testing.T, c net.Conn, corr int32, what string) {
	t.Helper()
	if err := apiVersions(c, corr, opTimeout); err != nil {
		t.Fatalf("%s: not served: %v", what, err)
	}
}

// max.connections.per.ip closes a connection past the limit at once, as
// Kafka does; max.connections.per.ip.overrides gives one address its own
// limit; a freed slot is reusable. The harness's clients use 127.0.0.1,
// which the override leaves unlimited.
func TestConnectionsPerIP(t *testing.T) {
	b := harness.StartBroker(t, "max.connections.per.ip=2",
		"max.connections.per.ip.overrides=127.0.0.1:1000,127.0.0.3:4")
	for _, tc := range []struct {
		ip    string
		limit int
	}{{"127.0.0.2", 2}, {"127.0.0.3", 4}} {
		var conns []net.Conn
		for i := range tc.limit {
			c, err := dialFrom(t, b.Addr, tc.ip)
			if err != nil {
				t.Fatal(err)
			}
			served(t, c, int32(i), tc.ip+" within its limit")
			conns = append(conns, c)
		}
		over, err := dialFrom(t, b.Addr, tc.ip)
		if err != nil {
			t.Fatal(err)
		}
		start := time.Now()
		expectClosed(t, over, opTimeout)
		t.Logf("%s: connection %d closed after %v", tc.ip, tc.limit+1, time.Since(start).Round(time.Millisecond))
		// A slot freed is reusable.
		conns[0].Close()
		harness.WaitFor(t, opTimeout, "the freed slot to be reusable", func() bool {
			c, err := dialFrom(t, b.Addr, tc.ip)
			if err != nil {
				return false
			}
			defer c.Close()
			return apiVersions(c, 99, 5*time.Second) == nil
		})
		for _, c := range conns[1:] {
			served(t, c, 100, tc.ip+" after the refusal")
		}
	}
	// The harness's own address is not limited to 2.
	l := newLegit(t, b, "legit-per-ip")
	if l.done.Load() < 1 {
		t.Fatal("legit client not served")
	}
}

// max.connections: past it the broker stops accepting until a connection
// closes (the client's connection waits in the accept queue, unanswered),
// as Kafka's acceptor does.
func TestMaxConnections(t *testing.T) {
	b := harness.StartBroker(t, "max.connections=3")
	var conns []net.Conn
	for i := range 3 {
		c, err := dialFrom(t, b.Addr, "127.0.0.1")
		if err != nil {
			t.Fatal(err)
		}
		served(t, c, int32(i), "within max.connections")
		conns = append(conns, c)
	}
	waiting, err := dialFrom(t, b.Addr, "127.0.0.1")
	if err != nil {
		t.Fatal(err)
	}
	// Not answered while the broker is full: a bounded check that can
	// only fail if the limit is not enforced.
	if err := apiVersions(waiting, 7, time.Second); err == nil {
		t.Fatal("a fourth connection was served with max.connections=3")
	}
	conns[0].Close()
	// The waiting connection's request was sent already: once accepted,
	// it is answered.
	waiting.SetDeadline(time.Now().Add(opTimeout))
	corr, _, err := readResponse(waiting)
	if err != nil || corr != 7 {
		t.Fatalf("waiting connection after a slot freed: corr %d, err %v", corr, err)
	}
	served(t, waiting, 8, "the accepted connection")
	for _, c := range conns[1:] {
		served(t, c, 9, "the others")
	}
}
