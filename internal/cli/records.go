package cli

import (
	"context"
	"fmt"
	"io"
	"slices"

	"github.com/spf13/cobra"
	"github.com/twmb/franz-go/pkg/kadm"
)

// `weir records` is kafka-delete-records: it raises partitions' log
// start offsets (DeleteRecords), making the records before unreadable.

func newRecordsCmd() *cobra.Command {
	cf := &clientFlags{}
	cmd := &cobra.Command{
		Use:   "records",
		Short: "Delete records from the start of partitions (kafka-delete-records)",
		Args:  cobra.NoArgs,
	}
	cf.register(cmd.PersistentFlags())
	cmd.AddCommand(newRecordsDeleteCmd(cf))
	return cmd
}

// deletedRecords is one partition's answer, and its JSON form.
type deletedRecords struct {
	Topic        string `json:"topic"`
	Partition    int32  `json:"partition"`
	LowWatermark int64  `json:"lowWatermark"`
}

func newRecordsDeleteCmd(cf *clientFlags) *cobra.Command {
	var (
		partitions []int32
		before     int64
		output     *string
	)
	cmd := &cobra.Command{
		Use:   "delete NAME --before OFFSET [--partition P]",
		Short: "Delete the records before an offset (kafka-delete-records)",
		Long: `Delete every record before OFFSET in the given partitions (all partitions of
the topic if none is given), as kafka-delete-records does (DeleteRecords):
the partition's log start offset (low watermark) moves up to OFFSET and the
records before it can no longer be read. --before -1 deletes up to the high
watermark, i.e. every record written so far. An offset past the high
watermark fails with Kafka's OFFSET_OUT_OF_RANGE. The broker answers once
every replica on a live broker has moved its log start too, so that no
failover brings the records back; a replica that does not within the
request timeout fails the partition with REQUEST_TIMED_OUT (the leader's
own log start has moved: run the command again).

Prints each partition's new low watermark, as Kafka's tool does:
  partition: orders-0  low_watermark: 42`,
		Example: `  weir records delete orders --partition 0 --before 42
  weir records delete orders --before -1

  Kafka: kafka-delete-records.sh --bootstrap-server HOST:9092 --offset-json-file offsets.json
         with {"partitions":[{"topic":"orders","partition":0,"offset":42}]}`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := checkOutput(*output); err != nil {
				return err
			}
			if !cmd.Flags().Changed("before") {
				return fmt.Errorf("delete records of %q: give the offset to delete up to with --before OFFSET (-1: the high watermark)", args[0])
			}
			if before < -1 {
				return fmt.Errorf("--before %d: want an offset, or -1 for the high watermark", before)
			}
			return withAdmin(cmd, cf, func(ctx context.Context, adm *kadm.Client) error {
				return deleteRecords(ctx, adm, cmd.OutOrStdout(), *output, args[0], partitions, before)
			})
		},
	}
	cmd.Flags().Int32SliceVar(&partitions, "partition", nil, "partitions to delete from (repeatable, or comma-separated); all if not given")
	cmd.Flags().Int64Var(&before, "before", 0, "delete the records before this offset (-1: the high watermark)")
	output = addOutputFlag(cmd)
	return cmd
}

// deleteRecords deletes and prints each partition's new low watermark; a
// partition the broker refused fails the command after the others print.
func deleteRecords(ctx context.Context, adm *kadm.Client, out io.Writer, format, topic string, partitions []int32, before int64) error {
	d, err := describeTopic(ctx, adm, topic)
	if err != nil {
		return fmt.Errorf("delete records %q: %w", topic, err)
	}
	if err := checkPartitions("delete records", d, partitions); err != nil {
		return err
	}
	count := int32(len(d.Partitions))
	if len(partitions) == 0 {
		for p := range count {
			partitions = append(partitions, p)
		}
	}
	slices.Sort(partitions)
	partitions = slices.Compact(partitions)
	offsets := kadm.Offsets{}
	for _, p := range partitions {
		offsets.Add(kadm.Offset{Topic: topic, Partition: p, At: before})
	}
	resps, err := adm.DeleteRecords(ctx, offsets)
	if err != nil {
		return fmt.Errorf("delete records of %q: %w", topic, err)
	}
	var errs []error
	rows := []deletedRecords{}
	t := &table{}
	for _, p := range partitions {
		r, ok := resps[topic][p]
		switch {
		case !ok:
			errs = append(errs, fmt.Errorf("delete records of %s-%d: missing from the broker's answer", topic, p))
		case r.Err != nil:
			errs = append(errs, fmt.Errorf("delete records of %s-%d before offset %d: %w", topic, p, before, r.Err))
		default:
			rows = append(rows, deletedRecords{Topic: topic, Partition: p, LowWatermark: r.LowWatermark})
			t.add(fmt.Sprintf("partition: %s-%d", topic, p), fmt.Sprintf("low_watermark: %d", r.LowWatermark))
		}
	}
	if err := printOutput(out, format, t, rows); err != nil {
		return err
	}
	return joinLine(errs)
}
