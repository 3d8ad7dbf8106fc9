package group

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"
)

// memLog is an in-memory __consumer_offsets: a PipelinedLog whose
// commits the test controls. By default every batch is committed as it
// is appended (a single-replica ISR). After hold(), batches wait until
// the test completes them (release), in any order, with any error, or
// until the waiter's context ends (commit timeout, resignation).
type memLog struct {
	mu      sync.Mutex
	parts   map[int32][]Record
	failErr error         // if set, appends fail with it (nothing appended)
	gate    chan struct{} // if set, Replay waits for it to close
	holding bool
	held    []*heldBatch // every batch appended while holding, in order
}

// heldBatch is one batch waiting for the test to complete it.
type heldBatch struct {
	p        int32
	last     int64
	recs     []Record
	done     chan struct{} // closed by release
	err      error
	awaiting bool            // the coordinator waits for it (its group is unlocked)
	returned bool            // AwaitCommit returned (the coordinator saw the outcome)
	ctx      context.Context // AwaitCommit's
}

func newMemLog() *memLog { return &memLog{parts: map[int32][]Record{}} }

func (l *memLog) Append(ctx context.Context, p int32, recs []Record) error {
	a, err := l.AppendLeader(p, recs)
	if err != nil {
		return err
	}
	return l.AwaitCommit(ctx, p, a)
}

func (l *memLog) AppendLeader(p int32, recs []Record) (Appended, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.failErr != nil {
		return Appended{}, l.failErr
	}
	l.parts[p] = append(l.parts[p], recs...)
	a := Appended{LastOffset: int64(len(l.parts[p]) - 1), LeaderEpoch: 1, Committed: !l.holding}
	if l.holding {
		l.held = append(l.held, &heldBatch{p: p, last: a.LastOffset, recs: recs, done: make(chan struct{})})
	}
	return a, nil
}

func (l *memLog) AwaitCommit(ctx context.Context, p int32, a Appended) error {
	if a.Committed {
		return nil
	}
	l.mu.Lock()
	var b *heldBatch
	for _, h := range l.held {
		if h.p == p && h.last == a.LastOffset {
			b = h
		}
	}
	if b == nil {
		l.mu.Unlock()
		return fmt.Errorf("memLog: no batch at %d-%d", p, a.LastOffset)
	}
	b.awaiting, b.ctx = true, ctx
	l.mu.Unlock()
	defer func() {
		l.mu.Lock()
		b.returned = true
		l.mu.Unlock()
	}()
	select {
	case <-b.done:
		return b.err
	case <-ctx.Done():
		return ctx.Err()
	}
}

// heldContext is the context the i-th held batch is awaited with.
func (l *memLog) heldContext(i int) context.Context {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.held[i].ctx
}

// waitReturned waits until the coordinator has seen the outcome of the
// i-th held batch.
func (l *memLog) waitReturned(t testing.TB, i int) {
	t.Helper()
	waitFor(t, fmt.Sprintf("held batch %d seen", i), func() bool {
		l.mu.Lock()
		defer l.mu.Unlock()
		return l.held[i].returned
	})
}

// hold makes the batches appended from now on wait for release.
func (l *memLog) hold() {
	l.mu.Lock()
	l.holding = true
	l.mu.Unlock()
}

// release completes the i-th held batch (0 = the first held) with err.
func (l *memLog) release(i int, err error) {
	l.mu.Lock()
	b := l.held[i]
	l.mu.Unlock()
	b.err = err
	close(b.done)
}

// waitHeld waits until n batches are held and the coordinator waits for
// each of them, i.e. their groups are unlocked.
func (l *memLog) waitHeld(t testing.TB, n int) {
	t.Helper()
	waitFor(t, fmt.Sprintf("%d held batches awaited", n), func() bool {
		l.mu.Lock()
		defer l.mu.Unlock()
		if len(l.held) < n {
			return false
		}
		for _, b := range l.held[:n] {
			if !b.awaiting {
				return false
			}
		}
		return true
	})
}

// heldCount is how many batches were appended while holding.
func (l *memLog) heldCount() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.held)
}

// waitFor polls cond until it holds, failing after 10 s.
func waitFor(t testing.TB, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(time.Millisecond)
	}
}

func (l *memLog) Replay(ctx context.Context, p int32, fn func(Record) error) error {
	l.mu.Lock()
	gate := l.gate
	l.mu.Unlock()
	if gate != nil {
		select {
		case <-gate:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	l.mu.Lock()
	recs := slices.Clone(l.parts[p])
	l.mu.Unlock()
	for _, r := range recs {
		if err := fn(r); err != nil {
			return err
		}
	}
	return nil
}

func (l *memLog) count(p int32) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.parts[p])
}
