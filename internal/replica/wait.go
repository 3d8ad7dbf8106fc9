package replica

// The one wake-up mechanism of the broker. Every request that waits for a
// partition to change — a long-polling fetch (a consumer waits for the
// high watermark, a follower for new data at the log end), a produce with
// acks=-1 and a group commit (both wait for the high watermark to pass
// their batch) — holds one Waiter, registers it with every partition it
// depends on, and sleeps in Waiter.Wait. A partition notifies the waiters
// registered for an event when the event happens; a change of role, epoch,
// ISR or the partition's removal notifies all of them. A woken request
// re-checks its own condition: notifications say "look again", not "done".
//
// Registration costs one map insert per partition, so a fetch over 65535
// partitions waits on one channel instead of a select over 65535 cases.
//
// Being where requests wait for partitions, Wait is also where that part
// of their remote time (Kafka's RemoteTimeMs: time spent waiting for
// followers or for data) is taken: it tells the request's wait clock
// (package waitclock) how long it blocked.

import (
	"context"
	"time"

	"github.com/weir-project/weir/internal/waitclock"
)

// Event is what a waiter waits for; values may be or-ed.
type Event uint8

const (
	// HighWatermark: the high watermark moved (data became visible to
	// consumers, acks=-1 batches committed).
	HighWatermark Event = 1 << iota
	// LogEnd: new data was appended at the log end (follower fetches).
	LogEnd
	// LowWatermark: a follower's log start offset moved (DeleteRecords
	// waits for the replicas' log starts to pass its offset).
	LowWatermark
)

// Waiter is one waiting request's wake-up signal. Its channel holds at
// most one pending notification, so notifying never blocks and many
// events before the waiter looks collapse into one.
type Waiter struct {
	c chan struct{}
	// watched lists the partitions the waiter is registered with, for
	// Done. Only the waiter's goroutine touches it.
	watched []*Partition
}

// NewWaiter returns a waiter registered nowhere.
func NewWaiter() *Waiter { return &Waiter{c: make(chan struct{}, 1)} }

// C receives a value after any notification since the last receive.
func (w *Waiter) C() <-chan struct{} { return w.c }

func (w *Waiter) notify() {
	select {
	case w.c <- struct{}{}:
	default:
	}
}

// Wait sleeps until a notification since the last receive (true), or
// until expiry fires or ctx ends (false); a nil expiry never fires. The
// time it blocked is told to ctx's wait clock, if it has one.
func (w *Waiter) Wait(ctx context.Context, expiry <-chan time.Time) bool {
	defer waitclock.Start(ctx)()
	select {
	case <-w.c:
		return true
	case <-expiry:
	case <-ctx.Done():
	}
	return false
}

// Watch registers w for ev on p (or adds ev to an earlier registration).
// Register before checking the condition waited for, so that a change in
// between is not missed.
func (w *Waiter) Watch(p *Partition, ev Event) {
	p.mu.Lock()
	old, ok := p.watchers[w]
	p.watchers[w] = old | ev
	p.mu.Unlock()
	if !ok {
		w.watched = append(w.watched, p)
	}
}

// Done unregisters w from every partition it watches. Call it when the
// request stops waiting (defer it right after NewWaiter).
func (w *Waiter) Done() {
	for _, p := range w.watched {
		p.mu.Lock()
		delete(p.watchers, w)
		p.mu.Unlock()
	}
	w.watched = nil
}

// notifyLocked wakes the waiters registered for any of ev. Callers hold
// p.mu.
func (p *Partition) notifyLocked(ev Event) {
	for w, want := range p.watchers {
		if want&ev != 0 {
			w.notify()
		}
	}
}

// notifyAllLocked wakes every waiter (state change). Callers hold p.mu.
func (p *Partition) notifyAllLocked() {
	for w := range p.watchers {
		w.notify()
	}
}
