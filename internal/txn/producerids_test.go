package txn

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"
)

// fakeSource reserves consecutive blocks like the metadata controller,
// counting calls; failNext makes the next call fail.
type fakeSource struct {
	mu       sync.Mutex
	next     int64
	calls    int
	failNext error
	gate     chan struct{} // if set, allocations wait for it
}

func (f *fakeSource) AllocateProducerIDs(ctx context.Context, n int64) (int64, error) {
	if f.gate != nil {
		select {
		case <-f.gate:
		case <-ctx.Done():
			return 0, ctx.Err()
		}
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls++
	if err := f.failNext; err != nil {
		f.failNext = nil
		return 0, err
	}
	first := f.next
	f.next += n
	return first, nil
}

func TestIDsAreUniqueAndBlocksReserved(t *testing.T) {
	src := &fakeSource{next: 5000}
	p := NewProducerIDs(src, 10)
	ctx := context.Background()
	seen := map[int64]bool{}
	for range 25 {
		id, err := p.Next(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if seen[id] {
			t.Fatalf("id %d handed out twice", id)
		}
		seen[id] = true
	}
	if src.calls != 3 {
		t.Fatalf("%d block reservations for 25 ids of blocks of 10", src.calls)
	}
	// A second allocator (a restart) never reuses the first one's ids.
	q := NewProducerIDs(src, 10)
	id, _ := q.Next(ctx)
	if seen[id] || id != 5030 {
		t.Fatalf("after restart got %d", id)
	}
}

func TestConcurrentCallersShareOneReservation(t *testing.T) {
	src := &fakeSource{gate: make(chan struct{})}
	p := NewProducerIDs(src, 1000)
	const n = 50
	ids := make(chan int64, n)
	var wg sync.WaitGroup
	for range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			id, err := p.Next(context.Background())
			if err != nil {
				t.Error(err)
			}
			ids <- id
		}()
	}
	close(src.gate)
	wg.Wait()
	close(ids)
	seen := map[int64]bool{}
	for id := range ids {
		if seen[id] {
			t.Fatalf("duplicate id %d", id)
		}
		seen[id] = true
	}
	if src.calls != 1 {
		t.Fatalf("%d reservations for %d concurrent callers", src.calls, n)
	}
}

func TestReservationErrorIsReportedThenRetried(t *testing.T) {
	boom := errors.New("not the controller")
	src := &fakeSource{failNext: boom}
	p := NewProducerIDs(src, 10)
	if _, err := p.Next(context.Background()); !errors.Is(err, boom) {
		t.Fatalf("first Next: %v", err)
	}
	if id, err := p.Next(context.Background()); err != nil || id != 0 {
		t.Fatalf("retry: %d %v", id, err)
	}
}

func TestNextHonoursContext(t *testing.T) {
	src := &fakeSource{gate: make(chan struct{})}
	p := NewProducerIDs(src, 10)
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	if _, err := p.Next(ctx); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Next with a blocked source: %v", err)
	}
}
