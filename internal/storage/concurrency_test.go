package storage

import (
	"errors"
	"math/rand"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// TestConcurrentReadersWithAppendAndRetention runs readers against an
// appender that rolls and deletes segments; under -race this checks the
// lock-free read path, and every successful read must parse.
func TestConcurrentReadersWithAppendAndRetention(t *testing.T) {
	cfg := testConfig()
	cfg.SegmentBytes = 2048
	cfg.RetentionBytes = 8192
	cfg.FileDeleteDelayMs = 60000 // in-flight reads outlive deletion
	l := openLog(t, t.TempDir(), cfg)
	var stop atomic.Bool
	var wg sync.WaitGroup
	var reads atomic.Int64
	for r := range 3 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rng := rand.New(rand.NewSource(int64(r)))
			for !stop.Load() {
				start, end := l.LogStartOffset(), l.LogEndOffset()
				if end <= start {
					continue
				}
				res, err := l.Read(start+rng.Int63n(end-start), 4096, -1)
				if errors.Is(err, ErrOffsetOutOfRange) {
					continue // retention overtook us
				}
				if err != nil {
					t.Errorf("read: %v", err)
					return
				}
				b, err := res.Bytes()
				if err != nil {
					t.Errorf("bytes: %v", err)
					return
				}
				splitBatches(t, b)
				reads.Add(1)
			}
		}()
	}
	for i := range 400 {
		if _, err := l.Append(makeBatch(t, 2, 60, int64(i), "cc"), 0); err != nil {
			t.Fatal(err)
		}
		if i%20 == 0 {
			if _, err := l.EnforceRetention(time.Now()); err != nil {
				t.Fatal(err)
			}
		}
	}
	waitFor(t, func() bool { return reads.Load() > 100 })
	stop.Store(true)
	wg.Wait()
}
