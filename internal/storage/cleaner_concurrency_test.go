package storage

import (
	"context"
	"errors"
	"fmt"
	"math/rand"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/weir-project/weir/internal/storage/recordbatch"
)

// TestCleanerConcurrentReaders runs readers against a log that is appended
// to, rolled and cleaned at the same time. Every read must succeed, hold
// whole batches with valid CRCs and decodable records, and start with the
// batch holding the offset asked for or the first one after it.
func TestCleanerConcurrentReaders(t *testing.T) {
	cfg := compactConfig()
	cfg.SegmentBytes = 8 << 10
	cfg.FileDeleteDelayMs = 60000 // in-flight reads outlive the swap
	l := openLog(t, t.TempDir(), cfg)
	var stop atomic.Bool
	var reads, passes atomic.Int64
	var wg sync.WaitGroup
	errc := make(chan error, 8)
	fail := func(err error) {
		select {
		case errc <- err:
		default:
		}
		stop.Store(true)
	}
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
				off := start + rng.Int63n(end-start)
				if err := checkRead(l, off); err != nil {
					fail(fmt.Errorf("reader %d at %d: %w", r, off, err))
					return
				}
				reads.Add(1)
			}
		}()
	}
	wg.Add(1)
	go func() { // the cleaner
		defer wg.Done()
		now := t0
		for !stop.Load() {
			now = now.Add(300 * time.Millisecond) // tombstones expire as passes go by
			st, err := l.Clean(context.Background(), CleanOptions{Now: now, DedupeBufferBytes: 4096})
			if err != nil {
				fail(fmt.Errorf("clean: %w", err))
				return
			}
			if st.SegmentsOut > 0 {
				passes.Add(1)
			}
		}
	}()
	rng := rand.New(rand.NewSource(time.Now().UnixNano()))
	model := map[string]string{}
	for i := 0; i < 1500 && !stop.Load(); i++ {
		recs := make([]kv, 1+rng.Intn(4))
		for j := range recs {
			k := fmt.Sprintf("k%d", rng.Intn(30))
			recs[j] = kv{key: k, value: fmt.Sprintf("%s=%d", k, i), tomb: rng.Intn(10) == 0}
			if recs[j].tomb {
				delete(model, k)
			} else {
				model[k] = recs[j].value
			}
		}
		if _, err := l.Append(keyedBatch(t, batchOpts{ts: t0.UnixMilli()}, recs...), 0); err != nil {
			t.Fatal(err)
		}
		if i%50 == 49 {
			forceRoll(t, l)
		}
	}
	waitFor(t, func() bool { return stop.Load() || (reads.Load() > 200 && passes.Load() > 5) })
	stop.Store(true)
	wg.Wait()
	select {
	case err := <-errc:
		t.Fatal(err)
	default:
	}
	checkState(t, l, model, "after concurrent cleaning")
	t.Logf("%d reads during %d cleaning passes that swapped segments", reads.Load(), passes.Load())
}

// checkRead reads at off and checks what comes back.
func checkRead(l *Log, off int64) error {
	res, err := l.Read(off, 16<<10, -1)
	if errors.Is(err, ErrOffsetOutOfRange) {
		return nil
	}
	if err != nil {
		return err
	}
	b, err := res.Bytes()
	if err != nil {
		return err
	}
	first := true
	return recordbatch.Split(b, func(batch []byte, h recordbatch.Header) error {
		if err := recordbatch.CheckCRC(batch); err != nil {
			return err
		}
		if first && h.LastOffset() < off {
			return fmt.Errorf("first batch %d..%d ends before the offset asked for", h.BaseOffset, h.LastOffset())
		}
		first = false
		_, err := recordbatch.Records(batch)
		return err
	})
}
