package load

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

// ConsumeKafka reads want records of topic from the start with franz-go's
// default fetch settings and returns what it received. The clock runs
// from the first poll to the last record.
func ConsumeKafka(ctx context.Context, seeds []string, topic string, want int64, cpu CPUFunc) (Result, error) {
	cl, err := kgo.NewClient(
		kgo.SeedBrokers(seeds...),
		kgo.ConsumeTopics(topic),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
		kgo.FetchMaxWait(500*time.Millisecond),
	)
	if err != nil {
		return Result{}, fmt.Errorf("consumer: %w", err)
	}
	defer cl.Close()
	var res Result
	m, err := startMeter(cpu)
	if err != nil {
		return Result{}, err
	}
	start := time.Now()
	last := start
	for res.Records < want {
		pctx, cancel := context.WithTimeout(ctx, 30*time.Second)
		fs := cl.PollFetches(pctx)
		idle := pctx.Err() != nil
		cancel()
		if err := fetchErr(fs); err != nil {
			return Result{}, fmt.Errorf("consume %s: %w", topic, err)
		}
		n := res.Records
		fs.EachRecord(func(r *kgo.Record) {
			res.Records++
			res.Bytes += int64(len(r.Value))
		})
		if res.Records > n {
			last = time.Now()
		} else if idle || ctx.Err() != nil {
			return Result{}, fmt.Errorf("consume %s: %d of %d records, then nothing for 30s", topic, res.Records, want)
		}
	}
	res.Elapsed = last.Sub(start)
	if res.CPU, res.ClientCPU, err = m.stop(); err != nil {
		return Result{}, err
	}
	return res, nil
}

// fetchErr is the first real error of a poll (a timed-out poll is not).
func fetchErr(fs kgo.Fetches) error {
	var first error
	fs.EachError(func(_ string, _ int32, err error) {
		if first == nil && !errors.Is(err, context.DeadlineExceeded) && !errors.Is(err, context.Canceled) {
			first = err
		}
	})
	return first
}
