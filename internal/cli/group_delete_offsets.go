package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"

	"github.com/spf13/cobra"
	"github.com/twmb/franz-go/pkg/kadm"
)

func newGroupDeleteOffsetsCmd(cf *clientFlags) *cobra.Command {
	var (
		sel    groupSelection
		topics []string
	)
	cmd := &cobra.Command{
		Use:   "delete-offsets GROUP --topic T[:P,...]...",
		Short: "Delete a group's committed offsets of some topics or partitions (OffsetDelete)",
		Long: `Deletes the group's committed offsets of the given topics (all their
partitions) or partitions, as kafka-consumer-groups --delete-offsets does,
and prints each partition's outcome (TOPIC PARTITION STATUS). The broker
refuses partitions of topics the group's members are subscribed to
(GROUP_SUBSCRIBED_TO_TOPIC); any refusal makes the exit status non-zero.`,
		Args: cobra.ArbitraryArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := checkOutput(*sel.output); err != nil {
				return err
			}
			if err := sel.check(args); err != nil {
				return err
			}
			if n := len(sel.groups) + len(args); n != 1 {
				return fmt.Errorf("give exactly one group, not %d", n)
			}
			if len(topics) == 0 {
				return errors.New("give at least one --topic")
			}
			for _, spec := range topics {
				if _, _, err := parseTopicSpec(spec); err != nil {
					return err
				}
			}
			group := append(sel.groups, args...)[0]
			return withAdmin(cmd, cf, func(ctx context.Context, adm *kadm.Client) error {
				return runDeleteOffsets(ctx, adm, cmd.OutOrStdout(), *sel.output, group, topics)
			})
		},
	}
	sel.register(cmd, false)
	cmd.Flags().StringArrayVar(&topics, "topic", nil, "topic whose offsets to delete, optionally with partitions: topic:0,1 (repeatable)")
	return cmd
}

// deleteOffsetRow is one partition's outcome; Partition is nil for a
// topic that could not be resolved to partitions.
type deleteOffsetRow struct {
	Topic     string  `json:"topic"`
	Partition *int32  `json:"partition"`
	Error     *string `json:"error"`
}

func runDeleteOffsets(ctx context.Context, adm *kadm.Client, out io.Writer, format, group string, specs []string) error {
	set := kadm.TopicsSet{}
	var whole []string
	for _, spec := range specs {
		topic, parts, _ := parseTopicSpec(spec)
		if parts == nil {
			whole = append(whole, topic)
			continue
		}
		set.Add(topic, parts...)
	}
	var rows []deleteOffsetRow
	if len(whole) > 0 {
		md, err := adm.ListTopics(ctx, whole...)
		if err != nil {
			return fmt.Errorf("describe topics: %w", err)
		}
		for _, t := range whole {
			td, ok := md[t]
			switch {
			case !ok:
				msg := "missing from the broker's answer"
				rows = append(rows, deleteOffsetRow{Topic: t, Error: &msg})
			case td.Err != nil:
				msg := td.Err.Error()
				rows = append(rows, deleteOffsetRow{Topic: t, Error: &msg})
			default:
				for p := range td.Partitions {
					set.Add(t, p)
				}
			}
		}
	}
	if len(set) > 0 {
		resps, err := adm.DeleteOffsets(ctx, group, set)
		if err != nil {
			// A group-level error (GROUP_ID_NOT_FOUND, NON_EMPTY_GROUP,
			// ...) concerns every partition: one line, as Kafka prints it.
			return fmt.Errorf("delete offsets of group %s: %w", group, err)
		}
		set.Each(func(t string, p int32) {
			r := deleteOffsetRow{Topic: t, Partition: &p}
			perr, ok := resps.Lookup(t, p)
			switch {
			case !ok:
				msg := "missing from the broker's answer"
				r.Error = &msg
			case perr != nil:
				msg := perr.Error()
				r.Error = &msg
			}
			rows = append(rows, r)
		})
	}
	slices.SortFunc(rows, func(a, b deleteOffsetRow) int {
		if c := strings.Compare(a.Topic, b.Topic); c != 0 {
			return c
		}
		pa, pb := int32(-1), int32(-1)
		if a.Partition != nil {
			pa = *a.Partition
		}
		if b.Partition != nil {
			pb = *b.Partition
		}
		return int(pa - pb)
	})

	t := &table{header: []string{"TOPIC", "PARTITION", "STATUS"}}
	failed := map[string][]string{} // error -> partitions, for the one-line summary
	var order []string
	for _, r := range rows {
		part, status := "-", "Successful"
		if r.Partition != nil {
			part = strconv.Itoa(int(*r.Partition))
		}
		if r.Error != nil {
			status = "Error: " + *r.Error
			if _, seen := failed[*r.Error]; !seen {
				order = append(order, *r.Error)
			}
			name := r.Topic
			if r.Partition != nil {
				name += "-" + part
			}
			failed[*r.Error] = append(failed[*r.Error], name)
		}
		t.add(r.Topic, part, status)
	}
	if len(failed) == 0 && format == outputTable {
		fmt.Fprintf(out, "Request succeeded for deleting offsets from group %s.\n\n", group)
	}
	if rows == nil {
		rows = []deleteOffsetRow{}
	}
	if err := printOutput(out, format, t, struct {
		Group      string            `json:"group"`
		Partitions []deleteOffsetRow `json:"partitions"`
	}{group, rows}); err != nil {
		return err
	}
	var errs []error
	for _, msg := range order {
		errs = append(errs, fmt.Errorf("%s: %s", strings.Join(failed[msg], ","), msg))
	}
	if len(errs) > 0 {
		return fmt.Errorf("delete offsets of group %s: %w", group, joinLine(errs))
	}
	return nil
}
