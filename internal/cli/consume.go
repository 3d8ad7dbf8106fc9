package cli

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/spf13/cobra"
	"github.com/twmb/franz-go/pkg/kgo"
)

// consumeOptions are the flags of `weir consume`.
type consumeOptions struct {
	client        clientFlags
	topic         string
	fromBeginning bool
	offset        string // "" when not given
	fromTime      string // "" when not given
	partitions    []int32
	maxMessages   int64
	timeout       time.Duration // idle timeout; 0 waits forever
	format        string
	keySep        string
	// group, if set, consumes as a member of this consumer group: the
	// group's committed offsets are the start (the start options only
	// apply where nothing is committed) and what is printed is committed.
	group string
}

func newConsumeCmd() *cobra.Command {
	o := &consumeOptions{}
	cmd := &cobra.Command{
		Use:   "consume TOPIC",
		Short: "Print records of a topic",
		Long: "Reads the topic's partitions directly (no consumer group) and prints each\n" +
			"record. Starts at the end unless told otherwise; stops on ^C, after\n" +
			"--max-messages, or after --timeout without a record.\n\n" +
			"Fails at once (one line on stderr, exit status 1) if no broker answers at\n" +
			"--bootstrap-server within --connect-timeout, if the topic does not exist\n" +
			"(consume never creates one) or if a --partition is not one of its partitions.\n\n" +
			"With --group G it consumes as a member of consumer group G: the group's\n" +
			"partitions are shared with its other members, reading resumes at the\n" +
			"group's committed offsets (--from-beginning/--from-time apply only where\n" +
			"nothing is committed), and the offsets of printed records are committed.",
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			o.topic = args[0]
			opts, err := o.consumerOpts()
			if err != nil {
				return err
			}
			fmtr, err := newFormatter(o.format, o.keySep)
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
			if err := o.client.checkTopic(ctx, cl, "consume", o.topic, o.partitions); err != nil {
				return err
			}
			n, err := runConsume(ctx, cl, o, fmtr, cmd.OutOrStdout(), cmd.ErrOrStderr())
			if o.group != "" {
				// Commit what was printed before leaving the group (the
				// signal context may be done: use a fresh bounded one).
				cctx, cancel := context.WithTimeout(context.Background(), o.client.requestTimeout)
				if cerr := cl.CommitUncommittedOffsets(cctx); cerr != nil && err == nil {
					err = fmt.Errorf("commit offsets of group %s: %w", o.group, cerr)
				}
				cancel()
			}
			fmt.Fprintf(cmd.ErrOrStderr(), "Processed a total of %d messages\n", n)
			return err
		},
	}
	o.client.register(cmd.Flags())
	fs := cmd.Flags()
	fs.BoolVar(&o.fromBeginning, "from-beginning", false, "start at the earliest offset (default: only new records)")
	fs.StringVar(&o.offset, "offset", "", "start at this offset (or earliest/latest) in each --partition")
	fs.StringVar(&o.fromTime, "from-time", "", "start at the first record at or after this time (RFC 3339 or Unix ms)")
	fs.Int32SliceVar(&o.partitions, "partition", nil, "only these partitions (repeatable or comma-separated)")
	fs.Int64Var(&o.maxMessages, "max-messages", 0, "exit after this many records (0: no limit)")
	fs.DurationVar(&o.timeout, "timeout", 0, "exit after this long without a record (0: wait forever)")
	fs.StringVar(&o.format, "format", "value", "output: value, kv or json")
	fs.StringVar(&o.keySep, "key-separator", "\t", "separator between key and value for --format kv")
	fs.StringVar(&o.group, "group", "", "consume as a member of this consumer group, resuming at its committed offsets")
	return cmd
}

// startOffset resolves the mutually exclusive start options.
func (o *consumeOptions) startOffset() (kgo.Offset, error) {
	given := 0
	for _, set := range []bool{o.fromBeginning, o.offset != "", o.fromTime != ""} {
		if set {
			given++
		}
	}
	if given > 1 {
		return kgo.Offset{}, errors.New("--from-beginning, --offset and --from-time exclude each other")
	}
	switch {
	case o.fromBeginning:
		return kgo.NewOffset().AtStart(), nil
	case o.offset != "":
		if len(o.partitions) == 0 {
			return kgo.Offset{}, errors.New("--offset needs --partition")
		}
		return parseStartOffset(o.offset)
	case o.fromTime != "":
		ms, err := parseTimestamp(o.fromTime)
		if err != nil {
			return kgo.Offset{}, err
		}
		// kgo resolves this with ListOffsets by timestamp.
		return kgo.NewOffset().AfterMilli(ms), nil
	}
	return kgo.NewOffset().AtEnd(), nil
}

// consumerOpts validates the flags and returns the kgo consumer options.
func (o *consumeOptions) consumerOpts() ([]kgo.Opt, error) {
	if err := o.client.validate(); err != nil {
		return nil, err
	}
	if o.maxMessages < 0 {
		return nil, fmt.Errorf("--max-messages %d: must not be negative", o.maxMessages)
	}
	if o.timeout < 0 {
		return nil, fmt.Errorf("--timeout %v: must not be negative", o.timeout)
	}
	start, err := o.startOffset()
	if err != nil {
		return nil, err
	}
	// Kafka's fetch.max.wait.ms; kgo's default of 5s makes --timeout coarse.
	opts := []kgo.Opt{kgo.FetchMaxWait(500 * time.Millisecond)}
	if o.group != "" {
		if len(o.partitions) > 0 || o.offset != "" {
			return nil, errors.New("--group assigns partitions itself: --partition and --offset do not apply")
		}
		// Only records handed to the printer are committed (autocommit
		// commits what was polled, and PollRecords stops at the limit).
		return append(opts, kgo.ConsumerGroup(o.group), kgo.ConsumeTopics(o.topic), kgo.ConsumeResetOffset(start)), nil
	}
	if len(o.partitions) == 0 {
		return append(opts, kgo.ConsumeTopics(o.topic), kgo.ConsumeResetOffset(start)), nil
	}
	parts := make(map[int32]kgo.Offset, len(o.partitions))
	for _, p := range o.partitions {
		if p < 0 {
			return nil, fmt.Errorf("--partition %d: must not be negative", p)
		}
		if _, dup := parts[p]; dup {
			return nil, fmt.Errorf("--partition %d given twice", p)
		}
		parts[p] = start
	}
	return append(opts,
		kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{o.topic: parts}),
		// Also where an out-of-range offset resets to.
		kgo.ConsumeResetOffset(start),
	), nil
}

// runConsume prints records until ctx ends, --max-messages is reached or
// nothing arrived for --timeout, and returns how many it printed. Fetch
// errors are warnings (kgo keeps retrying), printed once each.
func runConsume(ctx context.Context, cl *kgo.Client, o *consumeOptions, fmtr recordFormatter,
	out, errOut io.Writer,
) (int64, error) {
	w := bufio.NewWriter(out)
	var n int64
	warned := map[string]bool{}
	for o.maxMessages == 0 || n < o.maxMessages {
		pctx, cancel := ctx, context.CancelFunc(func() {})
		if o.timeout > 0 {
			pctx, cancel = context.WithTimeout(ctx, o.timeout)
		}
		limit := -1
		if o.maxMessages > 0 {
			limit = int(o.maxMessages - n)
		}
		fs := cl.PollRecords(pctx, limit)
		idle := pctx.Err() != nil
		cancel()
		if fs.IsClientClosed() {
			break
		}
		fs.EachError(func(t string, p int32, err error) {
			if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
				return
			}
			msg := fmt.Sprintf("consume %s[%d]: %v", t, p, err)
			if !warned[msg] {
				warned[msg] = true
				fmt.Fprintln(errOut, msg)
			}
		})
		got := 0
		for it := fs.RecordIter(); !it.Done(); {
			if err := fmtr(w, it.Next()); err != nil {
				return n, err
			}
			n++
			got++
		}
		if err := w.Flush(); err != nil {
			return n, fmt.Errorf("write output: %w", err)
		}
		if ctx.Err() != nil || (idle && got == 0) {
			break
		}
	}
	return n, nil
}
