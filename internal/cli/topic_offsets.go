package cli

import (
	"context"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"

	"github.com/spf13/cobra"
	"github.com/twmb/franz-go/pkg/kadm"
)

// offsetSpec is what `topic offsets --time` asks ListOffsets for: one of
// Kafka's special timestamps, or a time in Unix milliseconds.
type offsetSpec struct {
	name   string // earliest, latest, max-timestamp, or "" for a time
	millis int64
}

// parseOffsetSpec reads --time the way kafka-get-offsets does: a name, its
// number (-1 latest, -2 earliest, -3 max-timestamp), or a timestamp.
func parseOffsetSpec(s string) (offsetSpec, error) {
	switch strings.TrimSpace(strings.ToLower(s)) {
	case "latest", "-1":
		return offsetSpec{name: "latest"}, nil
	case "earliest", "-2":
		return offsetSpec{name: "earliest"}, nil
	case "max-timestamp", "-3":
		return offsetSpec{name: "max-timestamp"}, nil
	}
	ms, err := strconv.ParseInt(strings.TrimSpace(s), 10, 64)
	if err != nil || ms < 0 {
		return offsetSpec{}, fmt.Errorf("--time %q: want earliest, latest, max-timestamp or a timestamp in Unix milliseconds", s)
	}
	return offsetSpec{millis: ms}, nil
}

// list asks the cluster for the offsets of every partition of topic.
//
// For a time, kadm answers a partition with no record at or after it
// with the end offset (and no timestamp); Kafka's tool prints no offset
// for such a partition, so neither do we. A real answer always carries
// the timestamp of the record found.
func (s offsetSpec) list(ctx context.Context, adm *kadm.Client, topic string) (kadm.ListedOffsets, error) {
	switch s.name {
	case "latest":
		return adm.ListEndOffsets(ctx, topic)
	case "earliest":
		return adm.ListStartOffsets(ctx, topic)
	case "max-timestamp":
		return adm.ListMaxTimestampOffsets(ctx, topic)
	}
	listed, err := adm.ListOffsetsAfterMilli(ctx, s.millis, topic)
	for _, ps := range listed {
		for p, o := range ps {
			if o.Err == nil && o.Timestamp < 0 {
				o.Offset = -1
				ps[p] = o
			}
		}
	}
	return listed, err
}

// listedOffset is one line of `topic offsets`, and its JSON form.
type listedOffset struct {
	Topic     string `json:"topic"`
	Partition int32  `json:"partition"`
	Offset    int64  `json:"offset"`
	// Timestamp is the record's, for --time max-timestamp or a time.
	Timestamp *int64 `json:"timestamp,omitempty"`
}

func newTopicOffsetsCmd(cf *clientFlags) *cobra.Command {
	var (
		partitions []int32
		timeSpec   string
		output     *string
	)
	cmd := &cobra.Command{
		Use:   "offsets NAME [--partition P] [--time earliest|latest|max-timestamp|TIMESTAMP_MS]",
		Short: "Print partition offsets, TOPIC:PARTITION:OFFSET (kafka-get-offsets)",
		Long: `Print one offset per partition as TOPIC:PARTITION:OFFSET lines, as
kafka-get-offsets does (ListOffsets):

  latest (-1, the default)  the end offset (high watermark): the next
                            record's offset
  earliest (-2)             the log start offset: the first record kept
  max-timestamp (-3)        the offset of the record with the largest
                            timestamp
  TIMESTAMP_MS              the first offset whose record's timestamp is at
                            or after this Unix time in milliseconds

A partition without such an offset (an empty partition for max-timestamp,
no record at or after the time) is left out, as Kafka's tool does.`,
		Example: `  weir topic offsets orders
  weir topic offsets orders --partition 0 --time earliest
  weir topic offsets orders --time 1700000000000 --output json

  Kafka: kafka-get-offsets.sh --bootstrap-server HOST:9092 --topic orders --partitions 0 --time -2`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := checkOutput(*output); err != nil {
				return err
			}
			spec, err := parseOffsetSpec(timeSpec)
			if err != nil {
				return err
			}
			return withAdmin(cmd, cf, func(ctx context.Context, adm *kadm.Client) error {
				return topicOffsets(ctx, adm, cmd.OutOrStdout(), *output, args[0], partitions, spec)
			})
		},
	}
	cmd.Flags().Int32SliceVar(&partitions, "partition", nil, "only these partitions (repeatable, or comma-separated); all if not given")
	cmd.Flags().StringVar(&timeSpec, "time", "latest", "earliest, latest, max-timestamp, or a timestamp in Unix milliseconds")
	output = addOutputFlag(cmd)
	return cmd
}

// topicOffsets prints the offsets spec selects for the chosen partitions
// of topic (all if none chosen). A partition the cluster could not answer
// for fails the command, after the others are printed.
func topicOffsets(ctx context.Context, adm *kadm.Client, out io.Writer, format, topic string, partitions []int32, spec offsetSpec) error {
	d, err := describeTopic(ctx, adm, topic)
	if err != nil {
		return fmt.Errorf("topic offsets %q: %w", topic, err)
	}
	if err := checkPartitions("topic offsets", d, partitions); err != nil {
		return err
	}
	listed, err := spec.list(ctx, adm, topic)
	if err != nil {
		return fmt.Errorf("topic offsets of %q: %w", topic, err)
	}
	var errs []error
	rows := []listedOffset{}
	t := &table{}
	for p := range int32(len(d.Partitions)) {
		if len(partitions) > 0 && !slices.Contains(partitions, p) {
			continue
		}
		o, ok := listed[topic][p]
		switch {
		case !ok:
			errs = append(errs, fmt.Errorf("topic offsets of %s: partition %d missing from the broker's answer", topic, p))
			continue
		case o.Err != nil:
			errs = append(errs, fmt.Errorf("topic offsets of %s-%d: %w", topic, p, o.Err))
			continue
		case o.Offset < 0:
			continue // no such offset: Kafka's tool prints nothing
		}
		row := listedOffset{Topic: topic, Partition: p, Offset: o.Offset}
		if spec.name != "latest" && spec.name != "earliest" && o.Timestamp >= 0 {
			ts := o.Timestamp
			row.Timestamp = &ts
		}
		rows = append(rows, row)
		t.add(fmt.Sprintf("%s:%d:%d", topic, p, o.Offset))
	}
	if err := printOutput(out, format, t, rows); err != nil {
		return err
	}
	return joinLine(errs)
}
