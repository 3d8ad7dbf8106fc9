// Package coalesce shares one run of an expensive action among the
// callers that ask for it together, while promising each caller a run
// that began after it asked: a Raft barrier that proves leadership, a
// checkpoint write that makes a log start offset durable, a probe of the
// controller's commit index. A caller that arrives while a run is in
// flight waits for the next one, since the one in flight may have read
// its state before the caller's change.
package coalesce

import (
	"context"
	"sync"
)

// Runner runs its action once per round for every caller of that round,
// and gives each the round's result. The zero value is not usable; see
// New.
type Runner[T any] struct {
	run func() (T, error)

	mu      sync.Mutex
	next    *round[T] // the round new callers join; nil: none yet
	running bool      // a goroutine runs rounds
}

type round[T any] struct {
	done    chan struct{}
	callers int // joined so far (Waiting)
	v       T   // v and err are set before done is closed
	err     error
}

// New returns a Runner of run. run is called from one goroutine at a
// time, which exists only while callers wait.
func New[T any](run func() (T, error)) *Runner[T] { return &Runner[T]{run: run} }

// NewErr is New for an action with no result but its error.
func NewErr(run func() error) *Runner[struct{}] {
	return New(func() (struct{}, error) { return struct{}{}, run() })
}

// Do waits for a run that begins after the call and returns its result,
// or ctx's error if ctx ends first (the run still happens).
func (r *Runner[T]) Do(ctx context.Context) (T, error) {
	rd := r.join()
	select {
	case <-rd.done:
		return rd.v, rd.err
	case <-ctx.Done():
		var zero T
		return zero, ctx.Err()
	}
}

// Waiting is how many callers wait for the round that has not started
// yet (for tests: all of them have joined it).
func (r *Runner[T]) Waiting() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.next == nil {
		return 0
	}
	return r.next.callers
}

// join returns the round that starts next, starting the runner if none
// runs.
func (r *Runner[T]) join() *round[T] {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.next == nil {
		r.next = &round[T]{done: make(chan struct{})}
	}
	r.next.callers++
	if !r.running {
		r.running = true
		go r.loop()
	}
	return r.next
}

// take hands over the next round, or ends the runner when none waits.
func (r *Runner[T]) take() *round[T] {
	r.mu.Lock()
	defer r.mu.Unlock()
	rd := r.next
	r.next = nil
	if rd == nil {
		r.running = false
	}
	return rd
}

func (r *Runner[T]) loop() {
	for rd := r.take(); rd != nil; rd = r.take() {
		rd.v, rd.err = r.run()
		close(rd.done)
	}
}
