// Package coalesce shares one run of an expensive action among the
// callers that ask for it together, while promising each caller a run
// that began after it asked: a Raft barrier that proves leadership, a
// checkpoint write that makes a log start offset durable. A caller that
// arrives while a run is in flight waits for the next one, since the one
// in flight may have read its state before the caller's change.
package coalesce

import (
	"context"
	"sync"
)

// Runner runs its action once per round for every caller of that round.
// The zero value is not usable; see New.
type Runner struct {
	run func() error

	mu      sync.Mutex
	next    *round // the round new callers join; nil: none yet
	running bool   // a goroutine runs rounds
}

type round struct {
	done chan struct{}
	err  error // set before done is closed
}

// New returns a Runner of run. run is called from one goroutine at a
// time, which exists only while callers wait.
func New(run func() error) *Runner { return &Runner{run: run} }

// Do waits for a run that begins after the call and returns its error,
// or ctx's error if ctx ends first (the run still happens).
func (r *Runner) Do(ctx context.Context) error {
	rd := r.join()
	select {
	case <-rd.done:
		return rd.err
	case <-ctx.Done():
		return ctx.Err()
	}
}

// join returns the round that starts next, starting the runner if none
// runs.
func (r *Runner) join() *round {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.next == nil {
		r.next = &round{done: make(chan struct{})}
	}
	if !r.running {
		r.running = true
		go r.loop()
	}
	return r.next
}

// take hands over the next round, or ends the runner when none waits.
func (r *Runner) take() *round {
	r.mu.Lock()
	defer r.mu.Unlock()
	rd := r.next
	r.next = nil
	if rd == nil {
		r.running = false
	}
	return rd
}

func (r *Runner) loop() {
	for rd := r.take(); rd != nil; rd = r.take() {
		rd.err = r.run()
		close(rd.done)
	}
}
