package server

import (
	"context"
	"fmt"
	"net"
	"sync"
)

// ConnLimits are Kafka's connection quotas, with Kafka's semantics.
type ConnLimits struct {
	// MaxConnections is max.connections: past it, listeners stop
	// accepting until a connection closes (clients wait in the kernel's
	// accept queue), except the protected listener.
	MaxConnections int32
	// MaxConnectionsPerIP is max.connections.per.ip: a new connection from
	// an address that already has this many is closed at once.
	MaxConnectionsPerIP int32
	// PerIPOverrides is max.connections.per.ip.overrides: host name or IP
	// to its own limit. Host names are resolved once, in New.
	PerIPOverrides map[string]int32
	// ProtectedListener is inter.broker.listener.name. When the server
	// has several listeners, its connections are accepted even past
	// MaxConnections, and the least recently active connection of another
	// listener is closed to make room, as Kafka does, so that client
	// floods cannot starve replication.
	ProtectedListener string
}

// connQuotas counts connections against ConnLimits.
type connQuotas struct {
	maxTotal  int
	maxPerIP  int
	overrides map[string]int // IP (net.IP.String) -> limit
	protected string         // "" when no listener is protected

	mu    sync.Mutex
	total int
	byIP  map[string]int
	conns map[*conn]struct{}
	// created counts admitted connections by listener (metrics).
	created map[string]int64
	freed   chan struct{} // closed (and replaced) when a slot frees
}

// newConnQuotas resolves the overrides' host names. limits nil means no
// limits.
func newConnQuotas(limits *ConnLimits, listeners int) (*connQuotas, error) {
	q := &connQuotas{
		maxTotal: -1, maxPerIP: -1,
		byIP: make(map[string]int), conns: make(map[*conn]struct{}), created: map[string]int64{}, freed: make(chan struct{}),
	}
	if limits == nil {
		return q, nil
	}
	q.maxTotal, q.maxPerIP = int(limits.MaxConnections), int(limits.MaxConnectionsPerIP)
	if q.maxTotal < 0 || q.maxPerIP < 0 {
		return nil, fmt.Errorf("connection limits: negative limit (max.connections %d, max.connections.per.ip %d)", q.maxTotal, q.maxPerIP)
	}
	if listeners > 1 {
		q.protected = limits.ProtectedListener
	}
	q.overrides = make(map[string]int, len(limits.PerIPOverrides))
	for host, n := range limits.PerIPOverrides {
		if n < 0 {
			return nil, fmt.Errorf("max.connections.per.ip.overrides: negative limit %d for %s", n, host)
		}
		ips, err := resolveHost(host)
		if err != nil {
			return nil, fmt.Errorf("max.connections.per.ip.overrides: %w", err)
		}
		for _, ip := range ips {
			q.overrides[ip] = int(n)
		}
	}
	return q, nil
}

// resolveHost is an IP literal as itself, or a host name's addresses.
// Kafka resolves an override's host once, at startup, as here.
func resolveHost(host string) ([]string, error) {
	if ip := net.ParseIP(host); ip != nil {
		return []string{ip.String()}, nil
	}
	addrs, err := net.LookupIP(host)
	if err != nil {
		return nil, fmt.Errorf("resolve %q: %w", host, err)
	}
	out := make([]string, 0, len(addrs))
	for _, a := range addrs {
		out = append(out, a.String())
	}
	return out, nil
}

// acquire takes a connection slot for a connection just accepted on
// listener, waiting while the broker is at max.connections (unless the
// listener is protected). It fails only when ctx ends.
func (q *connQuotas) acquire(ctx context.Context, listener string) error {
	for {
		q.mu.Lock()
		if q.maxTotal < 0 || q.total < q.maxTotal || listener == q.protected {
			q.total++
			q.mu.Unlock()
			return nil
		}
		freed := q.freed
		q.mu.Unlock()
		select {
		case <-freed:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// admit binds an acquired slot to c, from ip. Over ip's limit it gives
// the slot back and returns the limit, and the caller closes c at once.
// A protected connection past max.connections returns the connection to
// close in its place, if there is one.
func (q *connQuotas) admit(c *conn, ip string) (ok bool, limit int, evict *conn) {
	q.mu.Lock()
	defer q.mu.Unlock()
	limit = q.maxPerIP
	if n, has := q.overrides[ip]; has {
		limit = n
	}
	if limit >= 0 && q.byIP[ip] >= limit {
		q.total--
		q.wakeLocked()
		return false, limit, nil
	}
	q.byIP[ip]++
	q.conns[c] = struct{}{}
	q.created[c.listener]++
	if q.maxTotal >= 0 && q.total > q.maxTotal && c.listener == q.protected {
		evict = q.leastRecentlyActiveLocked()
	}
	return true, limit, evict
}

// leastRecentlyActiveLocked is the unprotected connection idle longest.
func (q *connQuotas) leastRecentlyActiveLocked() *conn {
	var lru *conn
	for c := range q.conns {
		if c.listener == q.protected {
			continue
		}
		if lru == nil || c.lastActive.Load() < lru.lastActive.Load() {
			lru = c
		}
	}
	return lru
}

// release frees the slot of an admitted connection.
func (q *connQuotas) release(c *conn, ip string) {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.total--
	if q.byIP[ip]--; q.byIP[ip] <= 0 {
		delete(q.byIP, ip)
	}
	delete(q.conns, c)
	q.wakeLocked()
}

// openByListener counts the admitted connections by listener.
func (q *connQuotas) openByListener() map[string]int {
	q.mu.Lock()
	defer q.mu.Unlock()
	out := map[string]int{}
	for c := range q.conns {
		out[c.listener]++
	}
	return out
}

// createdByListener copies the admitted-connection counts.
func (q *connQuotas) createdByListener() map[string]int64 {
	q.mu.Lock()
	defer q.mu.Unlock()
	out := make(map[string]int64, len(q.created))
	for l, n := range q.created {
		out[l] = n
	}
	return out
}

func (q *connQuotas) wakeLocked() {
	close(q.freed)
	q.freed = make(chan struct{})
}

// remoteIP is the address a connection's quota is counted under.
func remoteIP(a net.Addr) string {
	if t, ok := a.(*net.TCPAddr); ok {
		return t.IP.String()
	}
	host, _, err := net.SplitHostPort(a.String())
	if err != nil {
		return a.String()
	}
	return host
}
