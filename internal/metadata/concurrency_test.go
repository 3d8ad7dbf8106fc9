package metadata

import (
	"errors"
	"fmt"
	"runtime"
	"sync"
	"testing"
	"time"
)

// Racing creates of one name all pass the leader's pre-check; the state
// machine must still let exactly one win.
func TestConcurrentCreateSameName(t *testing.T) {
	c := newTestController(t, 1)
	ctx := testCtx(t)
	const n = 8
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, errs[i] = c.CreateTopic(ctx, CreateTopic{Name: "race", NumPartitions: 1, ReplicationFactor: 1})
		}()
	}
	// Readers run alongside the writers (the race detector checks images
	// are never written after publication).
	stop := make(chan struct{})
	var readers sync.WaitGroup
	readers.Add(1)
	go func() {
		defer readers.Done()
		for {
			select {
			case <-stop:
				return
			default:
			}
			im := c.Image()
			for _, name := range im.SortedTopicNames() {
				if top := im.TopicByName(name); top != nil {
					_ = len(top.Partitions) + len(top.Configs)
				}
			}
		}
	}()
	wg.Wait()
	close(stop)
	readers.Wait()
	wins := 0
	for _, err := range errs {
		switch {
		case err == nil:
			wins++
		case !errors.Is(err, ErrTopicExists):
			t.Fatalf("unexpected error: %v", err)
		}
	}
	if wins != 1 {
		t.Fatalf("%d creates succeeded, want 1", wins)
	}
}

func TestConcurrentProducerIDAllocations(t *testing.T) {
	c := newTestController(t, 1)
	ctx := testCtx(t)
	const n = 16
	firsts := make([]int64, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			firsts[i], errs[i] = c.AllocateProducerIDs(ctx, 100)
		}()
	}
	wg.Wait()
	seen := map[int64]bool{}
	for i, first := range firsts {
		if errs[i] != nil {
			t.Fatal(errs[i])
		}
		if first%100 != 0 || seen[first] {
			t.Fatalf("block starts %v overlap or misalign", firsts)
		}
		seen[first] = true
	}
}

// Close must stop everything Open started.
func TestCloseLeavesNoGoroutines(t *testing.T) {
	// Let goroutines of earlier tests finish first.
	baseline := settledGoroutines(t, 1<<30)
	dir := t.TempDir()
	for i := range 2 {
		c := openLeader(t, testConfig(dir))
		if err := c.RegisterBroker(testCtx(t), Broker{ID: 1, Host: "127.0.0.1", Port: 9092}); err != nil {
			t.Fatal(err)
		}
		if _, err := c.CreateTopic(testCtx(t), CreateTopic{Name: fmt.Sprintf("g%d", i), NumPartitions: 1, ReplicationFactor: 1}); err != nil {
			t.Fatal(err)
		}
		if err := c.Close(); err != nil {
			t.Fatal(err)
		}
	}
	settledGoroutines(t, baseline)
}

// settledGoroutines polls until at most max goroutines run and returns the
// count, failing the test if that never happens.
func settledGoroutines(t *testing.T, max int) int {
	t.Helper()
	deadline := time.Now().Add(testTimeout)
	prev := -1
	for {
		n := runtime.NumGoroutine()
		if n <= max && n == prev {
			return n
		}
		if time.Now().After(deadline) {
			buf := make([]byte, 1<<20)
			t.Fatalf("%d goroutines, want at most %d:\n%s", n, max, buf[:runtime.Stack(buf, true)])
		}
		prev = n
		runtime.Gosched()
		time.Sleep(10 * time.Millisecond) // polling interval, not a wait for an event
	}
}
