package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"sync"
	"time"

	"github.com/spf13/cobra"
	"github.com/twmb/franz-go/pkg/kgo"
)

// benchProduceOptions are the flags of `weir bench produce`.
type benchProduceOptions struct {
	client         clientFlags
	topic          string
	numRecords     int64
	recordSize     int
	acks           string
	throughput     float64 // records/s; <= 0 unlimited
	batchSize      int32
	linger         time.Duration
	compression    string
	reportInterval time.Duration
	idempotent     bool
	idempotentSet  bool // --idempotent given explicitly
	maxInFlight    int
	maxInFlightSet bool // --max-in-flight given explicitly
}

// idempotentInFlight is what franz-go keeps in flight per broker for an
// idempotent producer, and the most Kafka allows one.
const idempotentInFlight = 5

func newBenchProduceCmd() *cobra.Command {
	o := &benchProduceOptions{}
	cmd := &cobra.Command{
		Use:   "produce --topic T --num-records N",
		Short: "Producer benchmark, like kafka-producer-perf-test",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			o.idempotentSet = cmd.Flags().Changed("idempotent")
			o.maxInFlightSet = cmd.Flags().Changed("max-in-flight")
			opts, err := o.clientOpts()
			if err != nil {
				return err
			}
			runtimeErrors(cmd)
			cl, err := o.client.newClient(opts...)
			if err != nil {
				return err
			}
			defer cl.Close()
			ctx, stop := runContext(cmd)
			defer stop()
			return runBenchProduce(ctx, cl, o, cmd.OutOrStdout())
		},
	}
	o.client.register(cmd.Flags())
	fs := cmd.Flags()
	fs.StringVar(&o.topic, "topic", "", "topic to produce to (required)")
	fs.Int64Var(&o.numRecords, "num-records", 0, "records to send (required)")
	fs.IntVar(&o.recordSize, "record-size", 1024, "value size in bytes")
	fs.StringVar(&o.acks, "acks", "-1", "acknowledgements: 0, 1, -1 or all")
	fs.Float64Var(&o.throughput, "throughput", -1, "cap in records/s (-1: unlimited)")
	fs.Int32Var(&o.batchSize, "batch-size", 0, "maximum batch size in bytes (0: client default)")
	fs.DurationVar(&o.linger, "linger", 0, "wait this long for more records before sending a batch")
	fs.StringVar(&o.compression, "compression", "none", "batch compression: none, gzip, snappy, lz4 or zstd")
	fs.DurationVar(&o.reportInterval, "report-interval", 5*time.Second, "time between progress lines")
	fs.BoolVar(&o.idempotent, "idempotent", true,
		"idempotent producer, as clients default to (needs --acks all; off by itself with other acks unless given)")
	// Java's producer, which kafka-producer-perf-test runs, keeps up to 5
	// requests in flight per connection with or without idempotence;
	// franz-go's default without it is 1, which would time the client and
	// the broker in turn instead of together.
	fs.IntVar(&o.maxInFlight, "max-in-flight", idempotentInFlight,
		"Produce requests in flight per broker, as Kafka's max.in.flight.requests.per.connection (the idempotent producer always keeps 5)")
	return cmd
}

func (o *benchProduceOptions) clientOpts() ([]kgo.Opt, error) {
	if err := o.client.validate(); err != nil {
		return nil, err
	}
	if o.topic == "" {
		return nil, errors.New("--topic is required")
	}
	if o.numRecords <= 0 {
		return nil, fmt.Errorf("--num-records %d: must be positive", o.numRecords)
	}
	if o.recordSize < 0 {
		return nil, fmt.Errorf("--record-size %d: must not be negative", o.recordSize)
	}
	if o.batchSize < 0 {
		return nil, fmt.Errorf("--batch-size %d: must not be negative", o.batchSize)
	}
	if o.linger < 0 {
		return nil, fmt.Errorf("--linger %v: must not be negative", o.linger)
	}
	if o.reportInterval <= 0 {
		return nil, fmt.Errorf("--report-interval %v: must be positive", o.reportInterval)
	}
	acks, err := parseAcks(o.acks)
	if err != nil {
		return nil, err
	}
	codec, err := parseCompression(o.compression)
	if err != nil {
		return nil, err
	}
	idempotent, err := idempotence(o.idempotent, o.idempotentSet, o.acks)
	if err != nil {
		return nil, err
	}
	if err := o.checkInFlight(idempotent); err != nil {
		return nil, err
	}
	opts := producerOpts(&o.client, acks, codec, kgoStickyKey(), idempotent, o.linger, o.batchSize)
	if !idempotent {
		opts = append(opts, kgo.MaxProduceRequestsInflightPerBroker(o.maxInFlight))
	}
	// Bound buffered bytes as well as records: with large --record-size the
	// default of 10000 buffered records could be gigabytes.
	return append(opts, kgo.MaxBufferedBytes(64*mib)), nil
}

// checkInFlight refuses an in-flight bound the producer would not keep:
// franz-go's idempotent producer always keeps up to 5, so any other value
// given with it would be silently ignored.
func (o *benchProduceOptions) checkInFlight(idempotent bool) error {
	if o.maxInFlight < 1 {
		return fmt.Errorf("--max-in-flight %d: must be at least 1", o.maxInFlight)
	}
	if idempotent && o.maxInFlightSet && o.maxInFlight != idempotentInFlight {
		return fmt.Errorf("--max-in-flight %d: the idempotent producer keeps %d in flight; add --idempotent=false to change it",
			o.maxInFlight, idempotentInFlight)
	}
	return nil
}

// kgoStickyKey is the default partitioner; bench records are keyless, so
// it is sticky like Java's producer.
func kgoStickyKey() kgo.Partitioner { return kgo.StickyKeyPartitioner(nil) }

// produceStats accumulates acknowledgements; promises call in from kgo's
// goroutines and the reporter reads from its own.
type produceStats struct {
	mu          sync.Mutex
	start       time.Time
	windowStart time.Time
	window      latencyHistogram
	windowBytes int64
	total       latencyHistogram
	totalBytes  int64
	failed      int64
	firstErr    error
}

func (s *produceStats) done(latency time.Duration, size int, err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err != nil {
		s.failed++
		if s.firstErr == nil {
			s.firstErr = err
		}
		return
	}
	s.window.record(latency)
	s.windowBytes += int64(size)
}

// progress prints the window's line (Kafka's format) and folds the window
// into the totals.
func (s *produceStats) progress(w io.Writer, now time.Time) {
	s.mu.Lock()
	defer s.mu.Unlock()
	el := now.Sub(s.windowStart)
	n := s.window.count()
	writeLine(w, "%d records sent, %.1f records/sec (%.2f MB/sec), %.2f ms avg latency, %.2f ms max latency.",
		n, rate(float64(n), el), rate(float64(s.windowBytes)/mib, el), s.window.meanMs(), s.window.maxMs())
	s.fold(now)
}

func (s *produceStats) fold(now time.Time) {
	s.total.merge(&s.window)
	s.totalBytes += s.windowBytes
	s.window.reset()
	s.windowBytes = 0
	s.windowStart = now
}

// final prints the summary line over the whole run.
func (s *produceStats) final(w io.Writer, now time.Time) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.fold(now)
	el := now.Sub(s.start)
	h := &s.total
	writeLine(w, "%d records sent, %.1f records/sec (%.2f MB/sec), %.2f ms avg latency, %.2f ms max latency, "+
		"%.2f ms 50th, %.2f ms 95th, %.2f ms 99th, %.2f ms 99.9th.",
		h.count(), rate(float64(h.count()), el), rate(float64(s.totalBytes)/mib, el), h.meanMs(), h.maxMs(),
		h.percentileMs(0.50), h.percentileMs(0.95), h.percentileMs(0.99), h.percentileMs(0.999))
}

// benchPayload is the value every record carries: random capital letters,
// as Kafka's perf test uses, so compression has something realistic-ish to
// chew on.
func benchPayload(size int, seed uint64) []byte {
	r := rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))
	p := make([]byte, size)
	for i := range p {
		p[i] = byte('A' + r.IntN(26))
	}
	return p
}

// runBenchProduce sends --num-records records of --record-size bytes,
// printing a progress line every --report-interval and a summary at the
// end. Latency runs from the Produce call to the acknowledgement.
func runBenchProduce(ctx context.Context, cl *kgo.Client, o *benchProduceOptions, out io.Writer) error {
	payload := benchPayload(o.recordSize, uint64(time.Now().UnixNano()))
	now := time.Now()
	st := &produceStats{start: now, windowStart: now}
	stopTicker := ticker(o.reportInterval, func() { st.progress(out, time.Now()) })
	th := throttle{perSec: o.throughput, start: now}
	recCtx := context.WithoutCancel(ctx)

	var sent int64
	var stopErr error
	for ; sent < o.numRecords; sent++ {
		if err := th.wait(ctx, sent); err != nil {
			stopErr = err
			break
		}
		if ctx.Err() != nil {
			stopErr = ctx.Err()
			break
		}
		begin := time.Now()
		cl.Produce(recCtx, &kgo.Record{Topic: o.topic, Value: payload}, func(r *kgo.Record, err error) {
			st.done(time.Since(begin), len(r.Value), err)
		})
	}
	flushErr := flush(recCtx, cl, o.client.requestTimeout)
	stopTicker()
	st.final(out, time.Now())

	st.mu.Lock()
	defer st.mu.Unlock()
	switch {
	case st.failed > 0:
		return fmt.Errorf("bench produce to %q: %d of %d records failed, first: %w", o.topic, st.failed, sent, st.firstErr)
	case flushErr != nil:
		return fmt.Errorf("bench produce to %q: %w", o.topic, flushErr)
	case stopErr != nil:
		return fmt.Errorf("bench produce to %q: stopped after %d of %d records: %w", o.topic, sent, o.numRecords, stopErr)
	}
	return nil
}
