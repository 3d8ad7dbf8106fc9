package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
)

// `weir group` mirrors kafka-consumer-groups.sh: list, describe (with
// lag), reset-offsets (dry run unless --execute) and delete.

func newGroupCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "group",
		Short: "List, describe, reset and delete consumer groups",
		Long: "Consumer group administration, as kafka-consumer-groups.sh does it:\n" +
			"list the groups, describe their members, committed offsets and lag,\n" +
			"reset their committed offsets, delete them.",
	}
	cmd.AddCommand(newGroupListCmd(), newGroupDescribeCmd(), newGroupResetCmd(), newGroupDeleteCmd())
	return cmd
}

// adminFor builds an admin client from the common flags.
func adminFor(c *clientFlags) (*kadm.Client, func(), error) {
	if err := c.validate(); err != nil {
		return nil, nil, err
	}
	cl, err := c.newClient()
	if err != nil {
		return nil, nil, err
	}
	return kadm.NewClient(cl), cl.Close, nil
}

func newGroupListCmd() *cobra.Command {
	var (
		client clientFlags
		states bool
	)
	cmd := &cobra.Command{
		Use:   "list",
		Short: "List the consumer groups",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			adm, done, err := adminFor(&client)
			if err != nil {
				return err
			}
			defer done()
			runtimeErrors(cmd)
			ctx, stop := runContext(cmd)
			defer stop()
			listed, err := adm.ListGroups(ctx)
			if err != nil {
				return fmt.Errorf("list groups: %w", err)
			}
			return writeGroupList(cmd.OutOrStdout(), listed, states)
		},
	}
	client.register(cmd.Flags())
	cmd.Flags().BoolVar(&states, "state", false, "also print each group's state and protocol type")
	return cmd
}

func writeGroupList(w io.Writer, listed kadm.ListedGroups, states bool) error {
	groups := listed.Sorted()
	if !states {
		for _, g := range groups {
			if _, err := fmt.Fprintln(w, g.Group); err != nil {
				return err
			}
		}
		return nil
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "GROUP\tSTATE\tPROTOCOL-TYPE")
	for _, g := range groups {
		fmt.Fprintf(tw, "%s\t%s\t%s\n", g.Group, g.State, dash(g.ProtocolType))
	}
	return tw.Flush()
}

func dash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

func newGroupDescribeCmd() *cobra.Command {
	var client clientFlags
	cmd := &cobra.Command{
		Use:   "describe GROUP...",
		Short: "Show a group's partitions, committed offsets, lag and owners",
		Long: "Prints one line per partition the group consumes or has committed, with\n" +
			"the columns of kafka-consumer-groups.sh --describe: GROUP, TOPIC,\n" +
			"PARTITION, CURRENT-OFFSET, LOG-END-OFFSET, LAG, CONSUMER-ID, HOST,\n" +
			"CLIENT-ID. A partition without a commit shows '-' as its offset and lag.",
		Args: cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			adm, done, err := adminFor(&client)
			if err != nil {
				return err
			}
			defer done()
			runtimeErrors(cmd)
			ctx, stop := runContext(cmd)
			defer stop()
			lags, err := adm.Lag(ctx, args...)
			if err != nil {
				return fmt.Errorf("describe groups: %w", err)
			}
			var errs []error
			for i, g := range args {
				if i > 0 {
					fmt.Fprintln(cmd.OutOrStdout())
				}
				l, ok := lags[g]
				if !ok {
					errs = append(errs, fmt.Errorf("group %s: not described", g))
					continue
				}
				if err := writeGroupLag(cmd.OutOrStdout(), l); err != nil {
					errs = append(errs, err)
				}
			}
			return errors.Join(errs...)
		},
	}
	client.register(cmd.Flags())
	return cmd
}

// writeGroupLag prints one group in kafka-consumer-groups --describe
// layout.
func writeGroupLag(w io.Writer, l kadm.DescribedGroupLag) error {
	if errors.Is(l.DescribeErr, kerr.GroupIDNotFound) {
		return fmt.Errorf("consumer group %s does not exist", l.Group)
	}
	if err := l.Error(); err != nil {
		return fmt.Errorf("group %s: %w", l.Group, err)
	}
	switch {
	case l.State == "Dead":
		return fmt.Errorf("group %s does not exist", l.Group)
	case len(l.Members) == 0:
		fmt.Fprintf(w, "Consumer group '%s' has no active members.\n\n", l.Group)
	case l.State != "Stable":
		fmt.Fprintf(w, "Consumer group '%s' is rebalancing (%s).\n\n", l.Group, l.State)
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "GROUP\tTOPIC\tPARTITION\tCURRENT-OFFSET\tLOG-END-OFFSET\tLAG\tCONSUMER-ID\tHOST\tCLIENT-ID")
	for _, pl := range l.Lag.Sorted() {
		current, lag, end := "-", "-", "-"
		if pl.Commit.At >= 0 {
			current = strconv.FormatInt(pl.Commit.At, 10)
		}
		if pl.End.Err == nil {
			end = strconv.FormatInt(pl.End.Offset, 10)
			if pl.Commit.At >= 0 && pl.Lag >= 0 {
				lag = strconv.FormatInt(pl.Lag, 10)
			}
		}
		member, host, clientID := "-", "-", "-"
		if pl.Member != nil {
			member, host, clientID = pl.Member.MemberID, pl.Member.ClientHost, pl.Member.ClientID
		}
		fmt.Fprintf(tw, "%s\t%s\t%d\t%s\t%s\t%s\t%s\t%s\t%s\n", l.Group, pl.Topic, pl.Partition, current, end, lag, member, host, clientID)
	}
	return tw.Flush()
}

// resetOptions are the flags of `weir group reset-offsets`.
type resetOptions struct {
	client     clientFlags
	group      string
	topics     []string // topic or topic:p,p,...
	allTopics  bool
	toEarliest bool
	toLatest   bool
	toOffset   int64
	toDatetime string
	execute    bool
	dryRun     bool
}

func newGroupResetCmd() *cobra.Command {
	o := &resetOptions{toOffset: -1}
	cmd := &cobra.Command{
		Use:   "reset-offsets --group G (--topic T[:P,...] | --all-topics) (--to-earliest | --to-latest | --to-offset N | --to-datetime T)",
		Short: "Move a group's committed offsets (dry run unless --execute)",
		Long: "Computes new committed offsets for the group's partitions and prints them\n" +
			"(GROUP TOPIC PARTITION NEW-OFFSET). Nothing changes without --execute.\n" +
			"The group must have no active members, as Kafka requires. --to-offset is\n" +
			"clamped to each partition's [log start, log end]. --to-datetime takes\n" +
			"YYYY-MM-DDTHH:mm:SS[.sss] (local time), RFC 3339, or Unix milliseconds.",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := o.validate(cmd); err != nil {
				return err
			}
			adm, done, err := adminFor(&o.client)
			if err != nil {
				return err
			}
			defer done()
			runtimeErrors(cmd)
			ctx, stop := runContext(cmd)
			defer stop()
			return runReset(ctx, adm, o, cmd.OutOrStdout())
		},
	}
	o.client.register(cmd.Flags())
	fs := cmd.Flags()
	fs.StringVar(&o.group, "group", "", "the consumer group (required)")
	fs.StringArrayVar(&o.topics, "topic", nil, "topic to reset, optionally with partitions: topic:0,1 (repeatable)")
	fs.BoolVar(&o.allTopics, "all-topics", false, "reset every topic the group has committed offsets for")
	fs.BoolVar(&o.toEarliest, "to-earliest", false, "reset to each partition's log start offset")
	fs.BoolVar(&o.toLatest, "to-latest", false, "reset to each partition's log end offset")
	fs.Int64Var(&o.toOffset, "to-offset", -1, "reset to this offset")
	fs.StringVar(&o.toDatetime, "to-datetime", "", "reset to the first offset at or after this time")
	fs.BoolVar(&o.execute, "execute", false, "commit the new offsets")
	fs.BoolVar(&o.dryRun, "dry-run", true, "only print the new offsets")
	return cmd
}

func (o *resetOptions) validate(cmd *cobra.Command) error {
	if o.group == "" {
		return errors.New("--group is required")
	}
	if (len(o.topics) > 0) == o.allTopics {
		return errors.New("give either --topic or --all-topics")
	}
	n := 0
	for _, set := range []bool{o.toEarliest, o.toLatest, cmd.Flags().Changed("to-offset"), o.toDatetime != ""} {
		if set {
			n++
		}
	}
	if n != 1 {
		return errors.New("give exactly one of --to-earliest, --to-latest, --to-offset, --to-datetime")
	}
	if cmd.Flags().Changed("to-offset") && o.toOffset < 0 {
		return fmt.Errorf("--to-offset %d: must not be negative", o.toOffset)
	}
	if o.toDatetime != "" {
		if _, err := parseDatetime(o.toDatetime); err != nil {
			return err
		}
	}
	if o.execute && cmd.Flags().Changed("dry-run") && o.dryRun {
		return errors.New("--execute and --dry-run exclude each other")
	}
	return nil
}

// parseDatetime reads --to-datetime: Kafka's local-time format, RFC 3339
// or Unix milliseconds.
func parseDatetime(s string) (int64, error) {
	s = strings.TrimSpace(s)
	if ms, err := strconv.ParseInt(s, 10, 64); err == nil && ms >= 0 {
		return ms, nil
	}
	for _, layout := range []string{time.RFC3339Nano, "2006-01-02T15:04:05.000", "2006-01-02T15:04:05"} {
		var t time.Time
		var err error
		if layout == time.RFC3339Nano {
			t, err = time.Parse(layout, s)
		} else {
			t, err = time.ParseInLocation(layout, s, time.Local)
		}
		if err == nil {
			return t.UnixMilli(), nil
		}
	}
	return 0, fmt.Errorf("--to-datetime %q: want YYYY-MM-DDTHH:mm:SS[.sss], RFC 3339 or Unix milliseconds", s)
}

// parseTopicSpec reads "topic" or "topic:0,1,2".
func parseTopicSpec(s string) (string, []int32, error) {
	topic, parts, found := strings.Cut(s, ":")
	if topic == "" {
		return "", nil, fmt.Errorf("--topic %q: empty topic", s)
	}
	if !found {
		return topic, nil, nil
	}
	var out []int32
	for _, p := range strings.Split(parts, ",") {
		n, err := strconv.ParseInt(strings.TrimSpace(p), 10, 32)
		if err != nil || n < 0 {
			return "", nil, fmt.Errorf("--topic %q: bad partition %q", s, p)
		}
		out = append(out, int32(n))
	}
	return topic, out, nil
}

func runReset(ctx context.Context, adm *kadm.Client, o *resetOptions, out io.Writer) error {
	ds, err := adm.DescribeGroups(ctx, o.group)
	if err != nil {
		return fmt.Errorf("describe group %s: %w", o.group, err)
	}
	if d, ok := ds[o.group]; ok && d.Err == nil && len(d.Members) > 0 {
		return fmt.Errorf("group %s has active members (state %s): assignments can only be reset if the group is inactive", o.group, d.State)
	}

	// Which partitions.
	want := map[string][]int32{} // nil slice = every partition
	if o.allTopics {
		committed, err := adm.FetchOffsets(ctx, o.group)
		if err == nil {
			err = committed.Error()
		}
		if err != nil {
			return fmt.Errorf("fetch offsets of %s: %w", o.group, err)
		}
		committed.Each(func(r kadm.OffsetResponse) { want[r.Topic] = append(want[r.Topic], r.Partition) })
	}
	for _, spec := range o.topics {
		topic, parts, err := parseTopicSpec(spec)
		if err != nil {
			return err
		}
		want[topic] = parts
	}
	topics := make([]string, 0, len(want))
	for t := range want {
		topics = append(topics, t)
	}
	slices.Sort(topics)
	if len(topics) == 0 {
		fmt.Fprintf(out, "Group %s has no committed offsets to reset.\n", o.group)
		return nil
	}

	starts, err := adm.ListStartOffsets(ctx, topics...)
	if err == nil {
		err = starts.Error()
	}
	if err != nil {
		return fmt.Errorf("list start offsets: %w", err)
	}
	ends, err := adm.ListEndOffsets(ctx, topics...)
	if err == nil {
		err = ends.Error()
	}
	if err != nil {
		return fmt.Errorf("list end offsets: %w", err)
	}
	var byTime kadm.ListedOffsets
	if o.toDatetime != "" {
		ms, _ := parseDatetime(o.toDatetime)
		byTime, err = adm.ListOffsetsAfterMilli(ctx, ms, topics...)
		if err == nil {
			err = byTime.Error()
		}
		if err != nil {
			return fmt.Errorf("list offsets by time: %w", err)
		}
	}

	next := kadm.Offsets{}
	for _, t := range topics {
		parts := want[t]
		if parts == nil {
			for p := range ends[t] {
				parts = append(parts, p)
			}
		}
		slices.Sort(parts)
		for _, p := range parts {
			start, okS := starts.Lookup(t, p)
			end, okE := ends.Lookup(t, p)
			if !okS || !okE {
				return fmt.Errorf("topic %s partition %d does not exist", t, p)
			}
			var at int64
			switch {
			case o.toEarliest:
				at = start.Offset
			case o.toLatest:
				at = end.Offset
			case o.toDatetime != "":
				at = end.Offset
				if lo, ok := byTime.Lookup(t, p); ok && lo.Offset >= 0 {
					at = lo.Offset
				}
			default:
				at = min(max(o.toOffset, start.Offset), end.Offset)
			}
			next.Add(kadm.Offset{Topic: t, Partition: p, At: at, LeaderEpoch: -1})
		}
	}

	tw := tabwriter.NewWriter(out, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "GROUP\tTOPIC\tPARTITION\tNEW-OFFSET")
	for _, off := range next.Sorted() {
		fmt.Fprintf(tw, "%s\t%s\t%d\t%d\n", o.group, off.Topic, off.Partition, off.At)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	if !o.execute {
		fmt.Fprintln(out, "\nDry run: nothing changed. Add --execute to commit these offsets.")
		return nil
	}
	resps, err := adm.CommitOffsets(ctx, o.group, next)
	if err == nil {
		err = resps.Error()
	}
	if err != nil {
		return fmt.Errorf("commit offsets of %s: %w", o.group, err)
	}
	return nil
}

func newGroupDeleteCmd() *cobra.Command {
	var (
		client clientFlags
		groups []string
	)
	cmd := &cobra.Command{
		Use:   "delete --group G [--group G2...]",
		Short: "Delete consumer groups (and their committed offsets)",
		Long:  "Deletes groups that have no active members, with all their committed offsets.",
		Args:  cobra.ArbitraryArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			groups = append(groups, args...)
			if len(groups) == 0 {
				return errors.New("give at least one --group")
			}
			adm, done, err := adminFor(&client)
			if err != nil {
				return err
			}
			defer done()
			runtimeErrors(cmd)
			ctx, stop := runContext(cmd)
			defer stop()
			resps, err := adm.DeleteGroups(ctx, groups...)
			if err != nil {
				return fmt.Errorf("delete groups: %w", err)
			}
			var errs []error
			for _, g := range groups {
				r, ok := resps[g]
				switch {
				case !ok:
					errs = append(errs, fmt.Errorf("group %s: no answer", g))
				case r.Err != nil:
					errs = append(errs, fmt.Errorf("group %s: %w", g, r.Err))
				default:
					fmt.Fprintf(cmd.OutOrStdout(), "Deleted group %s.\n", g)
				}
			}
			return errors.Join(errs...)
		},
	}
	client.register(cmd.Flags())
	cmd.Flags().StringArrayVar(&groups, "group", nil, "group to delete (repeatable; groups may also be given as arguments)")
	return cmd
}
