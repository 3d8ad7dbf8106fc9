package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"github.com/twmb/franz-go/pkg/kadm"
)

// resetOptions are the flags of `weir group reset-offsets`, Kafka's.
type resetOptions struct {
	sel        groupSelection
	topics     []string // topic or topic:p,p,...
	allTopics  bool
	toEarliest bool
	toLatest   bool
	toCurrent  bool
	toOffset   int64
	shiftBy    int64
	toDatetime string
	byDuration string
	fromFile   string
	execute    bool
	dryRun     bool
	export     bool

	// Resolved by validate.
	scenario string
	atMilli  int64 // --to-datetime, or now minus --by-duration
}

func newGroupResetCmd(cf *clientFlags) *cobra.Command {
	o := &resetOptions{}
	cmd := &cobra.Command{
		Use:   "reset-offsets GROUP... (--topic T[:P,...]... | --all-topics) SCENARIO [--execute]",
		Short: "Move a group's committed offsets (dry run unless --execute)",
		Long: `Computes new committed offsets for a group's partitions and prints them
(GROUP TOPIC PARTITION NEW-OFFSET), as kafka-consumer-groups --reset-offsets
does. Nothing changes without --execute. The group must be inactive (no
members: state Empty, or a group that does not exist yet), as Kafka requires.

Scope: --topic T (all of T's partitions) or T:0,2 (repeatable), or
--all-topics (every partition the group has committed).

Scenario, exactly one:
  --to-earliest        each partition's log start offset
  --to-latest          each partition's log end offset
  --to-current         the committed offset (the log end where none)
  --to-offset N        N
  --shift-by N         the committed offset plus N (N may be negative)
  --to-datetime T      the first offset at or after T: YYYY-MM-DDTHH:mm:SS[.sss]
                       (local time), RFC 3339, or Unix milliseconds
  --by-duration D      the first offset at or after now minus D, an ISO-8601
                       duration PnDTnHnMnS (PT30M, P1DT12H)
  --from-file F        the CSV plan F: topic,partition,offset lines (or
                       group,topic,partition,offset), as --export writes
Offsets outside a partition's [log start, log end] are moved inside it; a
time after a partition's last record gives its log end.`,
		Args: cobra.ArbitraryArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := o.validate(cmd, args, time.Now()); err != nil {
				return err
			}
			return withAdmin(cmd, cf, func(ctx context.Context, adm *kadm.Client) error {
				groups, err := o.sel.resolve(ctx, adm, args)
				if err != nil {
					return err
				}
				return runReset(ctx, adm, o, groups, cmd.OutOrStdout(), cmd.ErrOrStderr())
			})
		},
	}
	o.sel.register(cmd, true)
	fs := cmd.Flags()
	fs.StringArrayVar(&o.topics, "topic", nil, "topic to reset, optionally with partitions: topic:0,1 (repeatable)")
	fs.BoolVar(&o.allTopics, "all-topics", false, "every partition the group has committed offsets for")
	fs.BoolVar(&o.toEarliest, "to-earliest", false, "reset to each partition's log start offset")
	fs.BoolVar(&o.toLatest, "to-latest", false, "reset to each partition's log end offset")
	fs.BoolVar(&o.toCurrent, "to-current", false, "reset to the committed offset (the log end offset where there is none)")
	fs.Int64Var(&o.toOffset, "to-offset", 0, "reset to this offset")
	fs.Int64Var(&o.shiftBy, "shift-by", 0, "move the committed offset by this much (negative: back)")
	fs.StringVar(&o.toDatetime, "to-datetime", "", "reset to the first offset at or after this time")
	fs.StringVar(&o.byDuration, "by-duration", "", "reset to the first offset at or after now minus this ISO-8601 duration")
	fs.StringVar(&o.fromFile, "from-file", "", "reset to the offsets of this CSV file")
	fs.BoolVar(&o.execute, "execute", false, "commit the new offsets")
	fs.BoolVar(&o.dryRun, "dry-run", true, "only print the new offsets (the default)")
	fs.BoolVar(&o.export, "export", false, "print the plan as CSV (for --from-file) instead of a table")
	return cmd
}

func (o *resetOptions) validate(cmd *cobra.Command, args []string, now time.Time) error {
	if err := checkOutput(*o.sel.output); err != nil {
		return err
	}
	if err := o.sel.check(args); err != nil {
		return err
	}
	changed := cmd.Flags().Changed
	var scenarios []string
	for _, name := range []string{"to-earliest", "to-latest", "to-current", "to-offset", "shift-by", "to-datetime", "by-duration", "from-file"} {
		if changed(name) {
			scenarios = append(scenarios, name)
		}
	}
	if len(scenarios) != 1 {
		return errors.New("give exactly one of --to-earliest, --to-latest, --to-current, --to-offset, --shift-by, --to-datetime, --by-duration, --from-file")
	}
	o.scenario = scenarios[0]
	if len(o.topics) > 0 && o.allTopics {
		return errors.New("give either --topic or --all-topics, not both")
	}
	if len(o.topics) == 0 && !o.allTopics && o.scenario != "from-file" {
		return errors.New("give either --topic or --all-topics")
	}
	for _, spec := range o.topics {
		if _, _, err := parseTopicSpec(spec); err != nil {
			return err
		}
	}
	switch o.scenario {
	case "to-offset":
		if o.toOffset < 0 {
			return fmt.Errorf("--to-offset %d: must not be negative", o.toOffset)
		}
	case "to-datetime":
		ms, err := parseDatetime(o.toDatetime)
		if err != nil {
			return err
		}
		o.atMilli = ms
	case "by-duration":
		d, err := parseISODuration(o.byDuration)
		if err != nil {
			return err
		}
		o.atMilli = now.Add(-d).UnixMilli()
	}
	if o.execute && changed("dry-run") && o.dryRun {
		return errors.New("--execute and --dry-run exclude each other")
	}
	if o.export && *o.sel.output == outputJSON {
		return errors.New("--export and --output json exclude each other")
	}
	return nil
}

// resetRow is one line of the plan.
type resetRow struct {
	Group     string `json:"group"`
	Topic     string `json:"topic"`
	Partition int32  `json:"partition"`
	NewOffset int64  `json:"newOffset"`
}

func runReset(ctx context.Context, adm *kadm.Client, o *resetOptions, groups []string, out, errOut io.Writer) error {
	var filePlan map[string][]resetRow
	if o.scenario == "from-file" {
		var err error
		if filePlan, err = readResetPlan(o.fromFile, groups); err != nil {
			return err
		}
	}
	infos, _, err := describeGroups(ctx, adm, groups)
	if err != nil {
		return err
	}
	var errs []error
	var plan []resetRow
	for _, g := range groups {
		// A group that does not exist has no members: its offsets may be
		// set, which creates it, as Kafka allows.
		if info, ok := infos[g]; ok && !info.inactive() {
			// Kafka's message, word for word.
			errs = append(errs, fmt.Errorf("Assignments can only be reset if the group '%s' is inactive, but the current state is %s.", g, info.State))
			continue
		}
		rows, err := planReset(ctx, adm, o, g, filePlan[g], errOut)
		if err != nil {
			errs = append(errs, fmt.Errorf("reset offsets of group %s: %w", g, err))
			continue
		}
		if o.execute {
			if err := commitPlan(ctx, adm, g, rows); err != nil {
				errs = append(errs, err)
				continue
			}
		}
		plan = append(plan, rows...)
	}
	if err := printResetPlan(out, o, len(groups) > 1, plan); err != nil {
		return err
	}
	if !o.execute && !o.export && *o.sel.output == outputTable && len(plan) > 0 {
		fmt.Fprintln(errOut, "Dry run: nothing changed. Add --execute to commit these offsets.")
	}
	return joinLine(errs)
}

func printResetPlan(out io.Writer, o *resetOptions, manyGroups bool, plan []resetRow) error {
	if o.export {
		// Kafka's --export CSV: the group column only when several
		// groups are reset.
		for _, r := range plan {
			var err error
			if manyGroups {
				_, err = fmt.Fprintf(out, "%s,%s,%d,%d\n", r.Group, r.Topic, r.Partition, r.NewOffset)
			} else {
				_, err = fmt.Fprintf(out, "%s,%d,%d\n", r.Topic, r.Partition, r.NewOffset)
			}
			if err != nil {
				return err
			}
		}
		return nil
	}
	t := &table{header: []string{"GROUP", "TOPIC", "PARTITION", "NEW-OFFSET"}}
	for _, r := range plan {
		t.add(r.Group, r.Topic, strconv.Itoa(int(r.Partition)), strconv.FormatInt(r.NewOffset, 10))
	}
	if plan == nil {
		plan = []resetRow{}
	}
	return printOutput(out, *o.sel.output, t, plan)
}

// planReset computes group g's new offsets. Kafka's checks come first:
// every partition must exist and have a leader.
func planReset(ctx context.Context, adm *kadm.Client, o *resetOptions, g string, fromFile []resetRow, errOut io.Writer) ([]resetRow, error) {
	var committed kadm.OffsetResponses
	if o.allTopics || o.scenario == "to-current" || o.scenario == "shift-by" {
		var err error
		committed, err = adm.FetchOffsets(ctx, g)
		if err == nil {
			err = committed.Error()
		}
		if err != nil {
			return nil, fmt.Errorf("fetch committed offsets: %w", err)
		}
	}
	want := kadm.TopicsSet{}
	wholeTopics := map[string]bool{}
	switch {
	case o.scenario == "from-file":
		if len(fromFile) == 0 {
			return nil, fmt.Errorf("no reset plan for group %s in %s", g, o.fromFile)
		}
		for _, r := range fromFile {
			want.Add(r.Topic, r.Partition)
		}
	case o.allTopics:
		committed.Each(func(r kadm.OffsetResponse) { want.Add(r.Topic, r.Partition) })
	default:
		for _, spec := range o.topics {
			topic, parts, _ := parseTopicSpec(spec)
			if parts == nil {
				wholeTopics[topic] = true
				want.Add(topic)
			}
			want.Add(topic, parts...)
		}
	}
	if len(want) == 0 {
		return nil, nil
	}
	topics := want.Topics()
	md, err := adm.ListTopics(ctx, topics...)
	if err != nil {
		return nil, fmt.Errorf("describe topics: %w", err)
	}
	var unknown, missing, leaderless []string
	for _, t := range topics {
		td, ok := md[t]
		exists := ok && td.Err == nil
		if wholeTopics[t] {
			if !exists {
				unknown = append(unknown, t)
				continue
			}
			for p := range td.Partitions {
				want.Add(t, p)
			}
		}
		for p := range want[t] {
			pd, has := td.Partitions[p]
			switch {
			case !exists || !has:
				missing = append(missing, fmt.Sprintf("%s-%d", t, p))
			case pd.Leader < 0:
				leaderless = append(leaderless, fmt.Sprintf("%s-%d", t, p))
			}
		}
	}
	slices.Sort(missing)
	slices.Sort(leaderless)
	if len(unknown) > 0 {
		return nil, fmt.Errorf("UNKNOWN_TOPIC_OR_PARTITION: the topics \"%s\" do not exist", strings.Join(unknown, ","))
	}
	if len(missing) > 0 {
		return nil, fmt.Errorf("UNKNOWN_TOPIC_OR_PARTITION: the partitions \"%s\" do not exist", strings.Join(missing, ","))
	}
	if len(leaderless) > 0 {
		return nil, fmt.Errorf("LEADER_NOT_AVAILABLE: the partitions \"%s\" have no leader", strings.Join(leaderless, ","))
	}

	starts, err := listOffsetsOf(ctx, "log start", topics, adm.ListStartOffsets)
	if err != nil {
		return nil, err
	}
	ends, err := listOffsetsOf(ctx, "log end", topics, adm.ListEndOffsets)
	if err != nil {
		return nil, err
	}
	var byTime kadm.ListedOffsets
	if o.scenario == "to-datetime" || o.scenario == "by-duration" {
		byTime, err = listOffsetsOf(ctx, "by time", topics, func(ctx context.Context, ts ...string) (kadm.ListedOffsets, error) {
			return adm.ListOffsetsAfterMilli(ctx, o.atMilli, ts...)
		})
		if err != nil {
			return nil, err
		}
	}
	file := map[string]map[int32]int64{}
	for _, r := range fromFile {
		if file[r.Topic] == nil {
			file[r.Topic] = map[int32]int64{}
		}
		file[r.Topic][r.Partition] = r.NewOffset
	}

	var rows []resetRow
	for _, tp := range want.Sorted() {
		for _, p := range tp.Partitions {
			start, _ := starts.Lookup(tp.Topic, p)
			end, _ := ends.Lookup(tp.Topic, p)
			clamp := func(at int64) int64 {
				if at > end.Offset {
					fmt.Fprintf(errOut, "Warning: new offset (%d) is higher than latest offset for topic partition %s-%d. Value will be set to %d.\n", at, tp.Topic, p, end.Offset)
					return end.Offset
				}
				if at < start.Offset {
					fmt.Fprintf(errOut, "Warning: new offset (%d) is lower than earliest offset for topic partition %s-%d. Value will be set to %d.\n", at, tp.Topic, p, start.Offset)
					return start.Offset
				}
				return at
			}
			cur, hasCur := committed.Lookup(tp.Topic, p)
			hasCur = hasCur && cur.Err == nil && cur.At >= 0
			var at int64
			switch o.scenario {
			case "to-earliest":
				at = start.Offset
			case "to-latest":
				at = end.Offset
			case "to-current":
				at = end.Offset
				if hasCur {
					at = cur.At
				}
			case "to-offset":
				at = clamp(o.toOffset)
			case "shift-by":
				if !hasCur {
					return nil, fmt.Errorf("cannot shift offset for partition %s-%d since there is no current committed offset", tp.Topic, p)
				}
				at = clamp(cur.At + o.shiftBy)
			case "to-datetime", "by-duration":
				lo, _ := byTime.Lookup(tp.Topic, p)
				at = lo.Offset
				// kadm answers the log end for a partition with no record
				// at or after the time; that answer carries no timestamp.
				if lo.Timestamp < 0 {
					fmt.Fprintf(errOut, "Warning: partition %d of topic %s has no record at or after the time; using its log end offset.\n", p, tp.Topic)
				}
			case "from-file":
				at = clamp(file[tp.Topic][p])
			}
			rows = append(rows, resetRow{Group: g, Topic: tp.Topic, Partition: p, NewOffset: at})
		}
	}
	return rows, nil
}

// listOffsetsOf lists offsets with fn, failing on any partition's error.
func listOffsetsOf(ctx context.Context, what string, topics []string,
	fn func(context.Context, ...string) (kadm.ListedOffsets, error),
) (kadm.ListedOffsets, error) {
	l, err := fn(ctx, topics...)
	if err == nil {
		err = l.Error()
	}
	if err != nil {
		return nil, fmt.Errorf("list %s offsets: %w", what, err)
	}
	return l, nil
}

// commitPlan commits the new offsets the way Kafka's tool does
// (OffsetCommit from outside the group: generation -1, no member).
func commitPlan(ctx context.Context, adm *kadm.Client, g string, rows []resetRow) error {
	if len(rows) == 0 {
		return nil
	}
	next := kadm.Offsets{}
	for _, r := range rows {
		next.Add(kadm.Offset{Topic: r.Topic, Partition: r.Partition, At: r.NewOffset, LeaderEpoch: -1})
	}
	resps, err := adm.CommitOffsets(ctx, g, next)
	if err == nil {
		err = resps.Error()
	}
	if err != nil {
		return fmt.Errorf("commit offsets of group %s: %w", g, err)
	}
	return nil
}
