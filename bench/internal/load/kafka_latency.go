package load

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

// LatencyKafka produces to topic (1 partition, acks=1, no linger: a
// latency client sends at once) at a fixed rate while a consumer in the
// same process reads it, and returns each record's send-to-receive time.
func LatencyKafka(ctx context.Context, seeds []string, topic string, run LatencyRun) (LatencyResult, error) {
	var none LatencyResult
	cons, err := kgo.NewClient(kgo.SeedBrokers(seeds...), kgo.ConsumeTopics(topic),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.FetchMaxWait(500*time.Millisecond),
		kgo.WithPools(&fetchedRecords{}))
	if err != nil {
		return none, fmt.Errorf("latency consumer: %w", err)
	}
	defer cons.Close()
	prod, err := kgo.NewClient(append(producerOpts(seeds, topic, 1), kgo.ProducerLinger(0))...)
	if err != nil {
		return none, fmt.Errorf("latency producer: %w", err)
	}
	defer prod.Close()
	if err := prod.ProduceSync(ctx, &kgo.Record{Value: make([]byte, run.Size)}).FirstErr(); err != nil {
		return none, fmt.Errorf("latency warm-up: %w", err)
	}

	s := &samples{from: time.Now().Add(time.Hour)} // nothing counts before startAfter
	done := make(chan error, 1)
	cctx, stop := context.WithCancel(ctx)
	defer stop()
	go func() {
		for cctx.Err() == nil {
			fs := cons.PollFetches(cctx)
			if err := fetchErr(fs); err != nil {
				done <- err
				return
			}
			now := time.Now()
			fs.EachRecord(func(r *kgo.Record) {
				s.add(r.Value, now)
				r.Recycle()
			})
		}
		done <- nil
	}()

	pool := randomPool(1)
	vals := newValues(pool, run.Size, 0)
	s.startAfter(run.Warmup)
	start := time.Now()
	var errMu sync.Mutex
	var produceErr error
	recs := newRecordPool(run.Size)
	sent := pace(ctx, run.Rate, run.Duration, func(now time.Time) {
		r := recs.get()
		copy(r.Value, vals.next())
		stamp(r.Value, now)
		prod.Produce(ctx, r, func(r *kgo.Record, err error) {
			recs.put(r)
			errMu.Lock()
			defer errMu.Unlock()
			if err != nil && produceErr == nil {
				produceErr = err
			}
		})
	})
	if err := prod.Flush(ctx); err != nil {
		return none, fmt.Errorf("latency flush: %w", err)
	}
	// The warm-up record and every sent one must arrive.
	if err := waitCount(ctx, s, sent+1, done); err != nil {
		return none, err
	}
	errMu.Lock()
	defer errMu.Unlock()
	if produceErr != nil {
		return none, fmt.Errorf("latency produce: %w", produceErr)
	}
	return s.result(sent, start), nil
}

// waitCount waits until the consumer has seen n records.
func waitCount(ctx context.Context, s *samples, n int64, done <-chan error) error {
	deadline := time.Now().Add(30 * time.Second)
	for s.count() < n {
		select {
		case err := <-done:
			return fmt.Errorf("latency consumer stopped at %d of %d records: %v", s.count(), n, err)
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(5 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("latency consumer: %d of %d records after 30s", s.count(), n)
		}
	}
	return nil
}
