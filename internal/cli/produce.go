package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sync"
	"time"

	"github.com/spf13/cobra"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
)

// produceOptions are the flags of `weir produce`.
type produceOptions struct {
	client      clientFlags
	topic       string
	keySep      string
	headers     []string
	acks        string
	compression string
	partition   int32 // -1: let the partitioner choose
	partitioner string
	idempotent  bool
	// idempotentSet: --idempotent was given, so acks other than all are
	// an error rather than a reason to turn idempotence off.
	idempotentSet bool
	linger        time.Duration
	batchSize     int32 // 0: kgo's default
	verbose       bool
}

// maxReportedFailures bounds how many individual record failures are
// printed; the final error still counts them all.
const maxReportedFailures = 5

func newProduceCmd() *cobra.Command {
	o := &produceOptions{}
	cmd := &cobra.Command{
		Use:   "produce TOPIC",
		Short: "Produce the lines of stdin as records",
		Long: "Each line of stdin becomes one record. With --key-separator the text before\n" +
			"the first separator is the key. Exits non-zero if any record failed: the\n" +
			"error line says how many did and why the first did. Fails at once if no\n" +
			"broker answers at --bootstrap-server within --connect-timeout.",
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			o.topic = args[0]
			o.idempotentSet = cmd.Flags().Changed("idempotent")
			if cmd.Flags().Changed("partitioner") && o.partition >= 0 {
				return errors.New("--partitioner and --partition exclude each other")
			}
			opts, hdrs, err := o.clientOpts()
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
			if o.partition >= 0 {
				if err := checkProducePartition(ctx, cl, o); err != nil {
					return err
				}
			}
			return runProduce(ctx, cl, o, hdrs, cmd.InOrStdin(), cmd.OutOrStdout(), cmd.ErrOrStderr())
		},
	}
	o.client.register(cmd.Flags())
	fs := cmd.Flags()
	fs.StringVar(&o.keySep, "key-separator", "", "split each line at the first SEP into key and value")
	fs.StringArrayVar(&o.headers, "header", nil, "record header key=value added to every record (repeatable)")
	fs.StringVar(&o.acks, "acks", "-1", "acknowledgements: 0, 1, -1 or all")
	fs.StringVar(&o.compression, "compression", "none", "batch compression: none, gzip, snappy, lz4 or zstd")
	fs.Int32Var(&o.partition, "partition", -1, "produce every record to this partition")
	fs.StringVar(&o.partitioner, "partitioner", "default",
		"default (murmur2 of the key like Java, sticky when keyless) or round-robin")
	fs.BoolVar(&o.idempotent, "idempotent", true,
		"idempotent producer: retries never duplicate or reorder records (needs --acks all; off by itself with other acks unless given)")
	fs.DurationVar(&o.linger, "linger", 0, "wait this long for more records before sending a batch")
	fs.Int32Var(&o.batchSize, "batch-size", 0, "maximum batch size in bytes (0: client default)")
	fs.BoolVarP(&o.verbose, "verbose", "v", false, "print partition@offset for every acknowledged record")
	return cmd
}

// clientOpts validates the flags and turns them into kgo options plus the
// headers to put on every record.
func (o *produceOptions) clientOpts() ([]kgo.Opt, []kgo.RecordHeader, error) {
	if err := o.client.validate(); err != nil {
		return nil, nil, err
	}
	acks, err := parseAcks(o.acks)
	if err != nil {
		return nil, nil, err
	}
	codec, err := parseCompression(o.compression)
	if err != nil {
		return nil, nil, err
	}
	part, err := parsePartitioner(o.partitioner)
	if err != nil {
		return nil, nil, err
	}
	hdrs, err := parseHeaders(o.headers)
	if err != nil {
		return nil, nil, err
	}
	if o.partition < -1 {
		return nil, nil, fmt.Errorf("--partition %d: must not be negative", o.partition)
	}
	if o.linger < 0 {
		return nil, nil, fmt.Errorf("--linger %v: must not be negative", o.linger)
	}
	if o.batchSize < 0 {
		return nil, nil, fmt.Errorf("--batch-size %d: must not be negative", o.batchSize)
	}
	idempotent, err := idempotence(o.idempotent, o.idempotentSet, o.acks)
	if err != nil {
		return nil, nil, err
	}
	if o.partition >= 0 {
		part = kgo.ManualPartitioner()
	}
	opts := producerOpts(&o.client, acks, codec, part, idempotent, o.linger, o.batchSize)
	return opts, hdrs, nil
}

// checkProducePartition fails at once if --partition is not a partition
// of an existing topic: kgo would fail every record with its own words.
// A topic that does not exist yet is left to the broker, which creates it
// or answers UNKNOWN_TOPIC_OR_PARTITION (auto.create.topics.enable).
func checkProducePartition(ctx context.Context, cl *kgo.Client, o *produceOptions) error {
	d, err := o.client.lookupTopic(ctx, cl, o.topic)
	if errors.Is(err, kerr.UnknownTopicOrPartition) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("produce to %q: %w", o.topic, err)
	}
	return checkPartitions("produce to", d, []int32{o.partition})
}

// idempotence decides whether to produce idempotently. Like Java's
// producer it is on by default and then quietly off for acks other than
// all; asked for explicitly with such acks, it is an error.
func idempotence(want, explicit bool, acks string) (bool, error) {
	if !want || acksAreAll(acks) {
		return want, nil
	}
	if explicit {
		return false, fmt.Errorf("--idempotent needs --acks all, not %q", acks)
	}
	return false, nil
}

// cliMetadataMinAge: see producerOpts.
const cliMetadataMinAge = 250 * time.Millisecond

// producerOpts are the kgo producer options shared by produce and bench.
// Auto-creation is allowed like Java's producer does, so the broker's
// auto.create.topics.enable decides.
//
// MetadataMinAge is cut from kgo's 5 s: a record for a topic kgo has
// already failed as unknown (a line read after the first record's
// retries ran out) waits for metadata refreshes spaced by that minimum,
// and fails only after UnknownTopicRetries of them: 20 s instead of 1 s.
// A short-lived CLI client asks a few more Metadata requests instead.
func producerOpts(cf *clientFlags, acks kgo.Acks, codec kgo.CompressionCodec, part kgo.Partitioner,
	idempotent bool, linger time.Duration, batchSize int32,
) []kgo.Opt {
	opts := []kgo.Opt{
		kgo.RequiredAcks(acks),
		kgo.ProducerBatchCompression(codec),
		kgo.RecordPartitioner(part),
		kgo.ProducerLinger(linger),
		kgo.RecordDeliveryTimeout(cf.requestTimeout),
		kgo.AllowAutoTopicCreation(),
		kgo.MetadataMinAge(cliMetadataMinAge),
	}
	if !idempotent {
		opts = append(opts, kgo.DisableIdempotentWrite())
	}
	if batchSize > 0 {
		opts = append(opts, kgo.ProducerBatchMaxBytes(batchSize))
	}
	return opts
}

// produceReport collects the outcome of every record; promises run on
// kgo's goroutines, so it is locked. The first failure is told once, in
// the final error; a later record that failed differently gets a line of
// its own as it happens (up to maxReportedFailures), one that failed the
// same way is only counted.
type produceReport struct {
	mu        sync.Mutex
	out       io.Writer
	errOut    io.Writer
	verbose   bool
	noAcks    bool // acks=0: the broker never tells the offset
	sent      int64
	failed    int64
	firstErr  error
	firstLine int
	reported  int
}

func (r *produceReport) done(line int, rec *kgo.Record, err error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if err != nil {
		r.failed++
		switch {
		case r.firstErr == nil:
			r.firstErr, r.firstLine = err, line
		case err.Error() != r.firstErr.Error() && r.reported < maxReportedFailures:
			r.reported++
			fmt.Fprintf(r.errOut, "line %d: %v\n", line, err)
		}
		return
	}
	r.sent++
	if r.verbose {
		off := rec.Offset
		if r.noAcks {
			off = -1 // as Java's producer reports it
		}
		fmt.Fprintf(r.out, "%d@%d\n", rec.Partition, off)
	}
}

// failure is the final error when records failed.
func (r *produceReport) failure(topic string) error {
	if r.failed == 1 {
		return fmt.Errorf("produce to %q: 1 of %d records failed (line %d): %w",
			topic, r.failed+r.sent, r.firstLine, r.firstErr)
	}
	return fmt.Errorf("produce to %q: %d of %d records failed, the first (line %d): %w",
		topic, r.failed, r.failed+r.sent, r.firstLine, r.firstErr)
}

type inputLine struct {
	n    int
	data []byte
	err  error
}

// runProduce sends every line of in as a record and waits for all of them.
// On cancellation it stops reading, still delivers what it has read, and
// returns the cancellation.
func runProduce(ctx context.Context, cl *kgo.Client, o *produceOptions, hdrs []kgo.RecordHeader,
	in io.Reader, out, errOut io.Writer,
) error {
	rep := &produceReport{out: out, errOut: errOut, verbose: o.verbose, noAcks: o.acks == "0"}
	// Records are produced with a context that ignores cancellation: once a
	// line has been read it should be delivered, even after ^C.
	recCtx := context.WithoutCancel(ctx)
	lines := readLinesAsync(ctx, in)
	var stopErr error
loop:
	for {
		var l inputLine
		var ok bool
		select {
		case <-ctx.Done():
			stopErr = ctx.Err()
			break loop
		case l, ok = <-lines:
		}
		if !ok {
			break loop
		}
		if l.err != nil {
			stopErr = l.err
			break loop
		}
		key, value, err := splitLine(l.data, o.keySep)
		if err != nil {
			stopErr = fmt.Errorf("line %d: %w", l.n, err)
			break loop
		}
		rec := &kgo.Record{Topic: o.topic, Key: key, Value: value, Headers: hdrs}
		if o.partition >= 0 {
			rec.Partition = o.partition
		}
		n := l.n
		cl.Produce(recCtx, rec, func(r *kgo.Record, err error) { rep.done(n, r, err) })
	}
	if err := flush(recCtx, cl, o.client.requestTimeout); err != nil {
		stopErr = errors.Join(stopErr, err)
	}
	rep.mu.Lock()
	defer rep.mu.Unlock()
	if rep.failed > 0 {
		return rep.failure(o.topic)
	}
	if stopErr != nil {
		return fmt.Errorf("produce to %q: %w", o.topic, stopErr)
	}
	return nil
}

// flush waits for every buffered record, giving up (and failing what is
// left) a little after the delivery timeout.
func flush(ctx context.Context, cl *kgo.Client, deliveryTimeout time.Duration) error {
	fctx, cancel := context.WithTimeout(ctx, deliveryTimeout+adminSlack)
	defer cancel()
	if err := cl.Flush(fctx); err != nil {
		// Fail the stragglers so their promises run and get counted.
		_ = cl.AbortBufferedRecords(context.WithoutCancel(ctx))
		return fmt.Errorf("wait for acknowledgements: %w", err)
	}
	return nil
}

// readLinesAsync reads lines on its own goroutine so that a blocked read of
// a terminal does not keep ^C from stopping the producer.
func readLinesAsync(ctx context.Context, in io.Reader) <-chan inputLine {
	ch := make(chan inputLine, 256)
	go func() {
		defer close(ch)
		lr := newLineReader(in)
		for {
			b, err := lr.next()
			if errors.Is(err, io.EOF) {
				return
			}
			select {
			case ch <- inputLine{n: lr.line, data: b, err: err}:
			case <-ctx.Done():
				return
			}
			if err != nil {
				return
			}
		}
	}()
	return ch
}
