package server

import (
	"context"
	"sync"
	"time"
)

// memPool is the broker-wide budget for the memory of requests in flight:
// Kafka's queued.max.request.bytes. It counts what the network layer
// itself holds: request frames from their first body byte until they are
// answered, the memory their decoding allocates, and each response's
// encoding buffer while it is written (file regions a response sends with
// sendfile are not in memory and not charged; copied ones are).
//
// A request reserves memory as its bytes arrive (reservation.grow), never
// for the size a client merely claims. When the budget is used up, readers
// wait: reading pauses, nothing more is allocated. Because a partly read
// frame holds memory while it waits for more, several partial frames could
// each wait for the others forever; so, as Kafka's SimpleMemoryPool lets
// one allocation overshoot, one reservation at a time (the overdraft) may
// go past the budget until its request is read and decoded, and only
// while the pool is within the budget when it asks. What the pool
// tracks thus stays below the budget plus one request (at most
// socket.request.max.bytes and its decoding, see decodeLimit), and one
// request always gets through, however small the budget.
//
// Responses are charged with force, which never waits: a response must not
// wait for memory held by the requests queued behind it, or by requests of
// other connections that cannot be answered until it is written. A
// connection writes one response at a time, so forced charges are at most
// one response per connection, and while they keep the pool over budget no
// new request is read.
type memPool struct {
	budget int64 // <= 0: unbounded (still counted)

	mu        sync.Mutex
	used      int64
	overdraft *reservation  // the one reservation allowed past the budget
	changed   chan struct{} // closed (and replaced) when used falls or the overdraft ends
}

func newMemPool(budget int64) *memPool {
	return &memPool{budget: budget, changed: make(chan struct{})}
}

// inUse is the memory currently charged to the pool.
func (p *memPool) inUse() int64 {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.used
}

// force charges n bytes without waiting (a response being written).
func (p *memPool) force(n int64) {
	p.mu.Lock()
	p.used += n
	p.mu.Unlock()
}

// unforce returns a forced charge.
func (p *memPool) unforce(n int64) {
	p.mu.Lock()
	p.used -= n
	p.wakeLocked()
	p.mu.Unlock()
}

// wakeLocked tells every waiting reader to look again.
func (p *memPool) wakeLocked() {
	close(p.changed)
	p.changed = make(chan struct{})
}

// reservation is the memory of one request, from its first body byte until
// it is answered. It is used by one goroutine at a time.
type reservation struct {
	p *memPool
	n int64
}

func (p *memPool) reserve() *reservation { return &reservation{p: p} }

// size is what the reservation holds.
func (r *reservation) size() int64 { return r.n }

// grow adds n bytes to the reservation. It waits while they do not fit in
// the budget and another reservation holds the overdraft; it returns how
// long it waited (the client is not to blame for that time), and ctx's
// error if ctx ends first.
func (r *reservation) grow(ctx context.Context, n int64) (time.Duration, error) {
	if n <= 0 {
		return 0, nil
	}
	p := r.p
	var start time.Time
	for {
		p.mu.Lock()
		fits := p.budget <= 0 || p.used+n <= p.budget
		// The overdraft is handed out only while the pool is within its
		// budget: what fits never takes the pool past it, so beyond the
		// budget there is at most the one overdraft holder's request.
		// Handing it out whenever it was free let the pool grow by one
		// request per holder that had finished reading but not yet been
		// answered. The holder of the overdraft always grows, so some
		// partial frame can always finish: no deadlock.
		if fits || p.overdraft == r || (p.overdraft == nil && p.used <= p.budget) {
			if !fits {
				p.overdraft = r
			}
			p.used += n
			r.n += n
			p.mu.Unlock()
			if start.IsZero() {
				return 0, nil
			}
			return time.Since(start), nil
		}
		changed := p.changed
		p.mu.Unlock()
		if start.IsZero() {
			start = time.Now()
		}
		select {
		case <-changed:
		case <-ctx.Done():
			return time.Since(start), ctx.Err()
		}
	}
}

// shrinkTo lowers the reservation to n bytes (no-op if it holds less).
func (r *reservation) shrinkTo(n int64) {
	if n < 0 {
		n = 0
	}
	p := r.p
	p.mu.Lock()
	defer p.mu.Unlock()
	if r.n <= n {
		return
	}
	p.used -= r.n - n
	r.n = n
	p.wakeLocked()
}

// settle ends the reservation's overdraft, if it has it: its request is
// read and decoded, so it grows no more, and the next reservation that
// does not fit may take the overdraft. The bytes stay charged.
func (r *reservation) settle() {
	p := r.p
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.overdraft == r {
		p.overdraft = nil
		p.wakeLocked()
	}
}

// release returns everything the reservation holds.
func (r *reservation) release() {
	r.shrinkTo(0)
	r.settle()
}
