// Package waitclock carries a request's wait clock in its context. Every
// place a request blocks on something outside its own work — followers
// replicating (acks=-1, group commits), data arriving (long polls), the
// controller answering a forwarded request, the rest of a group joining,
// an earlier write of its group committing — calls Start on the
// request's context and the returned stop when it stops blocking, and
// the clock adds that time up as the request's remote time (Kafka's
// RemoteTimeMs). The broker puts the request's clock in the context once
// (broker.Handle), so no handler keeps a timer of its own.
//
// It is a leaf package so that every layer that waits (replica, group,
// broker) can tell the one clock without importing each other.
package waitclock

import (
	"context"
	"sync/atomic"
	"time"
)

// Clock adds up the time a request's waits blocked. It may be told from
// several goroutines at once.
type Clock interface {
	Waited(d time.Duration)
}

type key struct{}

// With returns ctx carrying clock: every wait started on it, or on a
// context derived from it (context.WithoutCancel keeps it too), tells
// clock how long it blocked.
func With(ctx context.Context, clock Clock) context.Context {
	return context.WithValue(ctx, key{}, clock)
}

// Start begins a wait on ctx's clock; calling the returned function ends
// it and tells the clock the time in between. Without a clock both cost
// a context lookup and nothing more. Use it as
//
//	defer waitclock.Start(ctx)()
//
// around the blocking part only (the select, the receive, the round
// trip), not the work before or after it.
func Start(ctx context.Context) (stop func()) {
	clock, ok := ctx.Value(key{}).(Clock)
	if !ok {
		return noop
	}
	start := time.Now()
	return func() { clock.Waited(time.Since(start)) }
}

func noop() {}

// Sum is a Clock that adds up what it is told, for tests of the places
// that wait (the server's RequestContext is the real clock).
type Sum struct{ ns atomic.Int64 }

// Waited adds d.
func (s *Sum) Waited(d time.Duration) { s.ns.Add(int64(d)) }

// Total is the time told so far.
func (s *Sum) Total() time.Duration { return time.Duration(s.ns.Load()) }
