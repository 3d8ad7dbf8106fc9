package localcluster

import "time"

// Slow links: a link may be slowed instead of cut. Each chunk a proxied
// connection carries is passed on a fixed time after the proxy read it
// (pump), and the next is read only then.

// delay is how long a slow link holds what it carries, and how many
// Delay calls of it are not yet undone.
type delay struct {
	d    time.Duration
	refs int
}

// Delay makes the link between parties a and b slow, both ways: every
// chunk a connection carries (what one read of the sender's bytes gave,
// at most 32 KiB) is passed on d after the proxy read it, and the next
// is read only then. So a request and its answer each take d longer,
// and a connection moves at most 32 KiB per d each way: a congested or
// distant link, not a lost one. Two Delays of one link hold for the
// longer of the two until both are undone (Undelay).
func (nw *Network) Delay(a, b int32, d time.Duration) {
	if a == b || d <= 0 {
		return
	}
	nw.mu.Lock()
	defer nw.mu.Unlock()
	for _, dir := range [][2]int32{{a, b}, {b, a}} {
		cur := nw.delays[dir]
		nw.delays[dir] = delay{d: max(cur.d, d), refs: cur.refs + 1}
	}
}

// Undelay undoes one Delay of the link between a and b.
func (nw *Network) Undelay(a, b int32) {
	nw.mu.Lock()
	defer nw.mu.Unlock()
	for _, dir := range [][2]int32{{a, b}, {b, a}} {
		cur, ok := nw.delays[dir]
		if !ok {
			continue
		}
		if cur.refs--; cur.refs > 0 {
			nw.delays[dir] = cur
		} else {
			delete(nw.delays, dir)
		}
	}
}

// delayLocked is how long what sender sends on pc is held now.
func (nw *Network) delayLocked(pc *pconn, sender int32) time.Duration {
	dir := [2]int32{pc.from, pc.to}
	if sender != pc.from {
		dir = [2]int32{pc.to, pc.from}
	}
	return nw.delays[dir].d
}
