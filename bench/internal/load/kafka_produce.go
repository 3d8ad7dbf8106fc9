package load

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

// producerOpts are the client settings of every Kafka produce run, the
// same for weir and kfake: franz-go's defaults (10 ms linger, batches up
// to 1 MB; per broker one request in flight at acks=1, which is not
// idempotent, and five at acks=-1) with compression off and the buffer
// bounded by bytes rather than by records.
func producerOpts(seeds []string, topic string, acks int) []kgo.Opt {
	opts := []kgo.Opt{
		kgo.SeedBrokers(seeds...),
		kgo.DefaultProduceTopic(topic),
		kgo.ProducerBatchCompression(kgo.NoCompression()),
		kgo.MaxBufferedRecords(1 << 20),
		kgo.MaxBufferedBytes(64 << 20),
		kgo.RetryTimeout(30 * time.Second),
	}
	if acks == 1 {
		return append(opts, kgo.RequiredAcks(kgo.LeaderAck()), kgo.DisableIdempotentWrite())
	}
	return append(opts, kgo.RequiredAcks(kgo.AllISRAcks()))
}

// batchHook adds up the batches the client wrote.
type batchHook struct {
	batches, bytes atomic.Int64
}

func (h *batchHook) OnProduceBatchWritten(_ kgo.BrokerMetadata, _ string, _ int32, m kgo.ProduceBatchMetrics) {
	h.batches.Add(1)
	h.bytes.Add(int64(m.UncompressedBytes))
}

func (h *batchHook) mean() float64 {
	n := h.batches.Load()
	if n == 0 {
		return 0
	}
	return float64(h.bytes.Load()) / float64(n)
}

// ProduceKafka runs w against topic (which exists) and returns what was
// acknowledged. Each producer sends one record synchronously first so
// connections and producer ids are set up before the clock starts; those
// records are not counted but are in the topic (warm).
func ProduceKafka(ctx context.Context, seeds []string, topic string, w Workload, cpu CPUFunc, opts ...kgo.Opt) (res Result, warm int64, err error) {
	hook := &batchHook{}
	var clients []*kgo.Client
	defer func() {
		for _, c := range clients {
			c.Close()
		}
	}()
	for i := range w.Producers {
		cl, err := kgo.NewClient(append(append(producerOpts(seeds, topic, w.Acks), kgo.WithHooks(hook)), opts...)...)
		if err != nil {
			return Result{}, 0, fmt.Errorf("producer %d: %w", i, err)
		}
		clients = append(clients, cl)
		if err := cl.ProduceSync(ctx, &kgo.Record{Value: make([]byte, w.RecordSize)}).FirstErr(); err != nil {
			return Result{}, 0, fmt.Errorf("producer %d warm-up: %w", i, err)
		}
	}
	hook.batches.Store(0)
	hook.bytes.Store(0)

	var acked, ackedBytes atomic.Int64
	var errMu sync.Mutex
	var firstErr error
	promise := func(r *kgo.Record, err error) {
		if err != nil {
			errMu.Lock()
			firstErr = firstOf(firstErr, err)
			errMu.Unlock()
			return
		}
		acked.Add(1)
		ackedBytes.Add(int64(len(r.Value)))
	}
	budget := w.budget()
	run, err := runProducers(w, cpu, &ackedBytes, &res.Timeline, func(i int, vals *values, deadline time.Time) {
		cl := clients[i]
		var sent int64
		for time.Now().Before(deadline) && (budget == 0 || sent < budget) && ctx.Err() == nil {
			cl.Produce(ctx, &kgo.Record{Value: vals.next()}, promise)
			sent += int64(w.RecordSize)
		}
		if err := cl.Flush(ctx); err != nil {
			errMu.Lock()
			firstErr = firstOf(firstErr, fmt.Errorf("flush: %w", err))
			errMu.Unlock()
		}
	})
	if err != nil {
		return Result{}, 0, err
	}
	if firstErr != nil {
		return Result{}, 0, fmt.Errorf("produce to %s: %w", topic, firstErr)
	}
	res.Records, res.Bytes, res.Elapsed, res.CPU, res.ClientCPU = acked.Load(), ackedBytes.Load(), run.elapsed, run.broker, run.clientCPU
	res.BatchBytes = hook.mean()
	return res, int64(w.Producers), nil
}

// firstOf keeps the first error.
func firstOf(first, err error) error {
	if first != nil {
		return first
	}
	if errors.Is(err, context.Canceled) {
		return fmt.Errorf("canceled: %w", err)
	}
	return err
}
