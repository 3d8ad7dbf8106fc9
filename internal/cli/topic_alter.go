package cli

import (
	"context"
	"fmt"

	"github.com/spf13/cobra"
	"github.com/twmb/franz-go/pkg/kadm"
)

// newTopicAlterCmd is kafka-topics --alter --partitions: it grows a topic
// with CreatePartitions. Partitions can only be added, as in Kafka; the
// broker refuses anything else with INVALID_PARTITIONS, which we report.
func newTopicAlterCmd(cf *clientFlags) *cobra.Command {
	var partitions int32
	cmd := &cobra.Command{
		Use:   "alter NAME --partitions N",
		Short: "Add partitions to a topic (kafka-topics --alter --partitions)",
		Long: `Grow a topic to N partitions in total, as kafka-topics --alter --partitions
does (CreatePartitions). Partitions can only be added: asking for fewer than
the topic has, or as many, fails with Kafka's INVALID_PARTITIONS. Keyed
records map to other partitions once the count changes.

Like kafka-topics, it prints nothing on success.`,
		Example: `  weir topic alter orders --partitions 6

  Kafka: kafka-topics.sh --bootstrap-server HOST:9092 --alter --topic orders --partitions 6`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			name := args[0]
			if !cmd.Flags().Changed("partitions") {
				return fmt.Errorf("alter topic %q: give the new partition count with --partitions N", name)
			}
			if partitions < 1 {
				return fmt.Errorf("--partitions %d: must be positive", partitions)
			}
			return withAdmin(cmd, cf, func(ctx context.Context, adm *kadm.Client) error {
				return alterPartitions(ctx, adm, name, partitions)
			})
		},
	}
	cmd.Flags().Int32Var(&partitions, "partitions", 0, "the topic's new partition count (more than it has now)")
	return cmd
}

func alterPartitions(ctx context.Context, adm *kadm.Client, name string, partitions int32) error {
	resps, err := adm.UpdatePartitions(ctx, int(partitions), name)
	if err != nil {
		return fmt.Errorf("alter topic %q: %w", name, err)
	}
	r, ok := resps[name]
	if !ok {
		return fmt.Errorf("alter topic %q: missing from the broker's answer", name)
	}
	if r.Err != nil {
		return fmt.Errorf("alter topic %q: %w", name, withBrokerMessage(r.Err, r.ErrMessage))
	}
	return nil
}
