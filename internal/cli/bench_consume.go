package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sync"
	"time"

	"github.com/spf13/cobra"
	"github.com/twmb/franz-go/pkg/kgo"
)

// benchConsumeOptions are the flags of `weir bench consume`.
type benchConsumeOptions struct {
	client         clientFlags
	topic          string
	numRecords     int64
	timeout        time.Duration // give up after this long without a record
	reportInterval time.Duration
}

func newBenchConsumeCmd() *cobra.Command {
	o := &benchConsumeOptions{}
	cmd := &cobra.Command{
		Use:   "consume --topic T --num-records N",
		Short: "Consumer benchmark from the start of a topic, like kafka-consumer-perf-test",
		Long: "Reads --num-records records from the start of the topic and prints the\n" +
			"throughput, as kafka-consumer-perf-test does. Fails at once if no broker\n" +
			"answers within --connect-timeout or the topic does not exist, and after\n" +
			"--timeout without a record.",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			opts, err := o.clientOpts()
			if err != nil {
				return err
			}
			runtimeErrors(cmd)
			ctx, stop := runContext(cmd)
			defer stop()
			// The clock starts before the client exists, as Kafka's does:
			// connecting and fetching metadata are part of what a consumer
			// pays.
			start := time.Now()
			cl, err := o.client.newClient(opts...)
			if err != nil {
				return err
			}
			defer cl.Close()
			if err := o.client.checkTopic(ctx, cl, "bench consume", o.topic, nil); err != nil {
				return err
			}
			return runBenchConsume(ctx, cl, o, start, cmd.OutOrStdout())
		},
	}
	o.client.register(cmd.Flags())
	fs := cmd.Flags()
	fs.StringVar(&o.topic, "topic", "", "topic to consume (required)")
	fs.Int64Var(&o.numRecords, "num-records", 0, "records to consume (required)")
	fs.DurationVar(&o.timeout, "timeout", 10*time.Second, "fail after this long without a record")
	fs.DurationVar(&o.reportInterval, "report-interval", 5*time.Second, "time between progress lines")
	return cmd
}

func (o *benchConsumeOptions) clientOpts() ([]kgo.Opt, error) {
	if err := o.client.validate(); err != nil {
		return nil, err
	}
	if o.topic == "" {
		return nil, errors.New("--topic is required")
	}
	if o.numRecords <= 0 {
		return nil, fmt.Errorf("--num-records %d: must be positive", o.numRecords)
	}
	if o.timeout <= 0 {
		return nil, fmt.Errorf("--timeout %v: must be positive", o.timeout)
	}
	if o.reportInterval <= 0 {
		return nil, fmt.Errorf("--report-interval %v: must be positive", o.reportInterval)
	}
	return []kgo.Opt{
		kgo.ConsumeTopics(o.topic),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
		kgo.FetchMaxWait(500 * time.Millisecond),
	}, nil
}

// consumeStats counts what the benchmark consumed; bytes are key plus
// value, as Kafka's consumer perf test counts them.
type consumeStats struct {
	mu          sync.Mutex
	start       time.Time
	windowStart time.Time
	records     int64
	bytes       int64
	winRecords  int64
	winBytes    int64
}

func (s *consumeStats) add(records, bytes int64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.records += records
	s.bytes += bytes
	s.winRecords += records
	s.winBytes += bytes
}

func (s *consumeStats) progress(w io.Writer, now time.Time) {
	s.mu.Lock()
	defer s.mu.Unlock()
	el := now.Sub(s.windowStart)
	writeLine(w, "%d records consumed, %.1f records/sec (%.2f MB/sec).",
		s.winRecords, rate(float64(s.winRecords), el), rate(float64(s.winBytes)/mib, el))
	s.winRecords, s.winBytes, s.windowStart = 0, 0, now
}

func (s *consumeStats) final(w io.Writer, end time.Time) {
	s.mu.Lock()
	defer s.mu.Unlock()
	el := end.Sub(s.start)
	mb := float64(s.bytes) / mib
	writeLine(w, "%d records consumed, %.2f MB, %.2f MB/sec, %.1f records/sec, %.3f s elapsed.",
		s.records, mb, rate(mb, el), rate(float64(s.records), el), el.Seconds())
}

// runBenchConsume reads --num-records records from the start of the topic.
// The elapsed time ends at the last record, not at the idle timeout.
func runBenchConsume(ctx context.Context, cl *kgo.Client, o *benchConsumeOptions, start time.Time, out io.Writer) error {
	st := &consumeStats{start: start, windowStart: start}
	stopTicker := ticker(o.reportInterval, func() { st.progress(out, time.Now()) })
	last := start
	var stopErr, fetchErr error
	for {
		st.mu.Lock()
		remaining := o.numRecords - st.records
		st.mu.Unlock()
		if remaining <= 0 {
			break
		}
		pctx, cancel := context.WithTimeout(ctx, o.timeout)
		fs := cl.PollRecords(pctx, int(min(remaining, 1<<30)))
		idle := pctx.Err() != nil
		cancel()
		fs.EachError(func(_ string, _ int32, err error) {
			if !errors.Is(err, context.Canceled) && !errors.Is(err, context.DeadlineExceeded) {
				fetchErr = err
			}
		})
		var n, b int64
		fs.EachRecord(func(r *kgo.Record) {
			n++
			b += int64(len(r.Key) + len(r.Value))
		})
		if n > 0 {
			last = time.Now()
			st.add(n, b)
		}
		if ctx.Err() != nil {
			stopErr = ctx.Err()
			break
		}
		if fs.IsClientClosed() {
			stopErr = errors.New("client closed")
			break
		}
		if idle && n == 0 {
			stopErr = fmt.Errorf("no record for %v", o.timeout)
			if fetchErr != nil {
				stopErr = fmt.Errorf("no record for %v, last fetch error: %w", o.timeout, fetchErr)
			}
			break
		}
	}
	stopTicker()
	st.final(out, last)
	if stopErr != nil {
		st.mu.Lock()
		defer st.mu.Unlock()
		return fmt.Errorf("bench consume %q: %d of %d records: %w", o.topic, st.records, o.numRecords, stopErr)
	}
	return nil
}
