package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"time"

	"github.com/spf13/cobra"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/weir-project/weir/internal/elr"
)

// adminSlack is how much longer than the broker-side request timeout we
// wait for an admin answer, so the broker's own timeout error (which names
// the problem) arrives before our context gives up.
const adminSlack = 5 * time.Second

func newTopicCmd() *cobra.Command {
	cf := &clientFlags{}
	cmd := &cobra.Command{
		Use:   "topic",
		Short: "Create, list, describe, delete and configure topics",
		Args:  cobra.NoArgs,
	}
	cf.register(cmd.PersistentFlags())
	cmd.AddCommand(
		newTopicCreateCmd(cf),
		newTopicListCmd(cf),
		newTopicDescribeCmd(cf),
		newTopicDeleteCmd(cf),
		newTopicAlterConfigCmd(cf),
		newTopicAlterCmd(cf),
		newTopicOffsetsCmd(cf),
		newTopicReassignCmd(cf),
	)
	cmd.AddCommand(newTopicElectLeadersCmd(cf))
	return cmd
}

// kadmPair is an admin client with the raw client under it, for requests
// kadm has no call for.
type kadmPair struct {
	adm *kadm.Client
	raw *kgo.Client
}

// withAdminClient validates the connection flags, then runs fn with an
// admin client whose requests carry --request-timeout and whose context
// expires a little after it. Every client command connects through it.
func withAdminClient(cmd *cobra.Command, cf *clientFlags, fn func(context.Context, *kadmPair) error) error {
	if err := cf.validate(); err != nil {
		return err
	}
	runtimeErrors(cmd)
	cl, err := cf.newClient()
	if err != nil {
		return err
	}
	defer cl.Close()
	adm := kadm.NewClient(cl)
	adm.SetTimeoutMillis(int32(cf.requestTimeout.Milliseconds()))
	ctx, cancel := context.WithTimeout(cmd.Context(), cf.requestTimeout+adminSlack)
	defer cancel()
	return fn(ctx, &kadmPair{adm: adm, raw: cl})
}

// withAdmin is withAdminClient for commands that need kadm only.
func withAdmin(cmd *cobra.Command, cf *clientFlags, fn func(context.Context, *kadm.Client) error) error {
	return withAdminClient(cmd, cf, func(ctx context.Context, p *kadmPair) error { return fn(ctx, p.adm) })
}

// withClient is withAdminClient for commands that send raw requests only.
func withClient(cmd *cobra.Command, cf *clientFlags, fn func(context.Context, *kgo.Client) error) error {
	return withAdminClient(cmd, cf, func(ctx context.Context, p *kadmPair) error { return fn(ctx, p.raw) })
}

func newTopicCreateCmd(cf *clientFlags) *cobra.Command {
	var (
		partitions  int32
		rf          int16
		configs     []string
		ifNotExists bool
	)
	cmd := &cobra.Command{
		Use:   "create NAME",
		Short: "Create a topic",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			name := args[0]
			if partitions == 0 || partitions < -1 {
				return fmt.Errorf("--partitions %d: must be positive (or -1 for the broker default)", partitions)
			}
			if rf == 0 || rf < -1 {
				return fmt.Errorf("--replication-factor %d: must be positive (or -1 for the broker default)", rf)
			}
			cfg, err := parseConfigs("--config", configs)
			if err != nil {
				return err
			}
			return withAdmin(cmd, cf, func(ctx context.Context, adm *kadm.Client) error {
				return createTopic(ctx, adm, cmd.OutOrStdout(), name, partitions, rf, cfg, ifNotExists)
			})
		},
	}
	fs := cmd.Flags()
	fs.Int32Var(&partitions, "partitions", -1, "number of partitions (-1: broker's num.partitions)")
	fs.Int16Var(&rf, "replication-factor", -1, "replicas per partition (-1: broker's default.replication.factor)")
	fs.StringArrayVar(&configs, "config", nil, "topic config key=value (repeatable)")
	fs.BoolVar(&ifNotExists, "if-not-exists", false, "succeed quietly if the topic already exists")
	return cmd
}

func createTopic(ctx context.Context, adm *kadm.Client, out io.Writer, name string,
	partitions int32, rf int16, cfg map[string]*string, ifNotExists bool,
) error {
	resp, err := adm.CreateTopic(ctx, partitions, rf, cfg, name)
	if err != nil {
		if ifNotExists && errors.Is(err, kerr.TopicAlreadyExists) {
			return nil
		}
		return fmt.Errorf("create topic %q: %w", name, withBrokerMessage(err, resp.ErrMessage))
	}
	_, err = fmt.Fprintf(out, "Created topic %s.\n", name)
	return err
}

func newTopicListCmd(cf *clientFlags) *cobra.Command {
	var excludeInternal bool
	var output *string
	cmd := &cobra.Command{
		Use:   "list",
		Short: "List topic names, one per line",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := checkOutput(*output); err != nil {
				return err
			}
			return withAdmin(cmd, cf, func(ctx context.Context, adm *kadm.Client) error {
				topics, err := adm.ListTopicsWithInternal(ctx)
				if err != nil {
					return fmt.Errorf("list topics: %w", err)
				}
				if excludeInternal {
					topics.FilterInternal()
				}
				return printTopicList(cmd.OutOrStdout(), *output, topics)
			})
		},
	}
	cmd.Flags().BoolVar(&excludeInternal, "exclude-internal", false, "leave out internal topics such as __consumer_offsets")
	output = addOutputFlag(cmd)
	return cmd
}

func newTopicDescribeCmd(cf *clientFlags) *cobra.Command {
	var f partitionFilter
	var excludeInternal bool
	var output *string
	cmd := &cobra.Command{
		Use:   "describe [NAME...]",
		Short: "Show partitions, leaders, replicas, ISR and configs (all topics if none named)",
		Long: `Show each topic (all topics if none is named) and its partitions: leader,
replicas and in-sync replicas, as kafka-topics --describe does, with the
offline replicas (Offline:) and eligible leader replicas (Elr:, KIP-966)
of partitions that have any. With a
filter flag, only the partitions it selects are printed, one per line.
Internal topics (__consumer_offsets) are included unless --exclude-internal.`,
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := checkOutput(*output); err != nil {
				return err
			}
			return withAdminClient(cmd, cf, func(ctx context.Context, p *kadmPair) error {
				if f.any() {
					return describeFiltered(ctx, p, cmd.OutOrStdout(), *output, args, f, excludeInternal)
				}
				return describeTopics(ctx, p, cmd.OutOrStdout(), *output, args, excludeInternal)
			})
		},
	}
	output = addOutputFlag(cmd)
	cmd.Flags().BoolVar(&f.underReplicated, "under-replicated-partitions", false, "only partitions with fewer in-sync replicas than replicas")
	cmd.Flags().BoolVar(&f.underMinISR, "under-min-isr-partitions", false, "only partitions with fewer in-sync replicas than min.insync.replicas")
	cmd.Flags().BoolVar(&f.atMinISR, "at-min-isr-partitions", false, "only partitions with exactly min.insync.replicas in-sync replicas")
	cmd.Flags().BoolVar(&f.unavailable, "unavailable-partitions", false, "only partitions without a leader")
	cmd.Flags().BoolVar(&excludeInternal, "exclude-internal", false, "leave out internal topics such as __consumer_offsets")
	return cmd
}

// partitionFilter is kafka-topics' --describe filters; several select
// the partitions any of them selects.
type partitionFilter struct{ underReplicated, underMinISR, atMinISR, unavailable bool }

func (f partitionFilter) any() bool {
	return f.underReplicated || f.underMinISR || f.atMinISR || f.unavailable
}

// describeFiltered prints the partitions f selects, one line each.
func describeFiltered(ctx context.Context, p *kadmPair, out io.Writer, format string, names []string, f partitionFilter, excludeInternal bool) error {
	adm := p.adm
	topics, err := adm.ListTopicsWithInternal(ctx, names...)
	if err != nil {
		return fmt.Errorf("describe topics: %w", err)
	}
	if excludeInternal {
		topics.FilterInternal()
	}
	var errs []error
	var found []string
	for _, d := range topics.Sorted() {
		if d.Err != nil {
			errs = append(errs, fmt.Errorf("describe topic %q: %w", d.Topic, d.Err))
			continue
		}
		found = append(found, d.Topic)
	}
	minISR := map[string]int{}
	if f.underMinISR || f.atMinISR {
		if minISR, err = minISRs(ctx, adm, found); err != nil {
			return err
		}
	}
	var sel []kadm.PartitionDetail
	var selTopics []string
	for _, name := range found {
		for _, pd := range topics[name].Partitions.Sorted() {
			if (f.underReplicated && len(pd.ISR) < len(pd.Replicas)) ||
				(f.underMinISR && len(pd.ISR) < minISR[name]) ||
				(f.atMinISR && len(pd.ISR) == minISR[name]) ||
				(f.unavailable && pd.Leader < 0) {
				sel = append(sel, pd)
				if !slices.Contains(selTopics, name) {
					selTopics = append(selTopics, name)
				}
			}
		}
	}
	elrs, err := elr.Describe(ctx, p.raw, selTopics)
	if err != nil {
		errs = append(errs, err)
	}
	if err := writePartitionLines(out, format, sel, elrs); err != nil {
		return err
	}
	return joinLine(errs)
}

// describeTopics prints every topic it can and reports the ones it could
// not (unknown topics, config lookups that failed) in the returned error.
// Internal topics are described too, as kafka-topics does, unless
// excludeInternal.
func describeTopics(ctx context.Context, p *kadmPair, out io.Writer, format string, names []string, excludeInternal bool) error {
	adm := p.adm
	topics, err := adm.ListTopicsWithInternal(ctx, names...)
	if err != nil {
		return fmt.Errorf("describe topics: %w", err)
	}
	if excludeInternal {
		topics.FilterInternal()
	}
	var errs []error
	var found []string
	for _, d := range topics.Sorted() {
		if d.Err != nil {
			errs = append(errs, fmt.Errorf("describe topic %q: %w", d.Topic, d.Err))
			continue
		}
		found = append(found, d.Topic)
	}
	configs := map[string][]kadm.Config{}
	if len(found) > 0 {
		rcs, err := adm.DescribeTopicConfigs(ctx, found...)
		if err != nil {
			errs = append(errs, fmt.Errorf("describe topic configs: %w", err))
		}
		for _, rc := range rcs {
			if rc.Err != nil {
				errs = append(errs, fmt.Errorf("describe configs of topic %q: %w", rc.Name, withBrokerMessage(rc.Err, rc.ErrMessage)))
				continue
			}
			configs[rc.Name] = rc.Configs
		}
	}
	details := make([]kadm.TopicDetail, len(found))
	for i, name := range found {
		details[i] = topics[name]
	}
	elrs, err := elr.Describe(ctx, p.raw, found)
	if err != nil {
		errs = append(errs, err)
	}
	if err := writeTopicDescriptions(out, format, details, configs, elrs); err != nil {
		return err
	}
	return joinLine(errs)
}

func newTopicDeleteCmd(cf *clientFlags) *cobra.Command {
	return &cobra.Command{
		Use:   "delete NAME...",
		Short: "Delete topics",
		Args:  cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return withAdmin(cmd, cf, func(ctx context.Context, adm *kadm.Client) error {
				resps, err := adm.DeleteTopics(ctx, args...)
				if err != nil {
					return fmt.Errorf("delete topics: %w", err)
				}
				var errs []error
				for _, name := range args {
					r, ok := resps[name]
					switch {
					case !ok:
						errs = append(errs, fmt.Errorf("delete topic %q: missing from the broker's answer", name))
					case r.Err != nil:
						errs = append(errs, fmt.Errorf("delete topic %q: %w", name, withBrokerMessage(r.Err, r.ErrMessage)))
					}
				}
				return joinLine(errs)
			})
		},
	}
}

func newTopicAlterConfigCmd(cf *clientFlags) *cobra.Command {
	var sets, deletes []string
	cmd := &cobra.Command{
		Use:   "alter-config NAME --set k=v --delete k",
		Short: "Change topic configs incrementally (IncrementalAlterConfigs)",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			name := args[0]
			alters, err := buildAlters(sets, deletes)
			if err != nil {
				return err
			}
			return withAdmin(cmd, cf, func(ctx context.Context, adm *kadm.Client) error {
				resps, err := adm.AlterTopicConfigs(ctx, alters, name)
				if err != nil {
					return fmt.Errorf("alter config of topic %q: %w", name, err)
				}
				r, err := resps.On(name, nil)
				if err != nil {
					return fmt.Errorf("alter config of topic %q: missing from the broker's answer", name)
				}
				if r.Err != nil {
					return fmt.Errorf("alter config of topic %q: %w", name, withBrokerMessage(r.Err, r.ErrMessage))
				}
				_, err = fmt.Fprintf(cmd.OutOrStdout(), "Completed updating config for topic %s.\n", name)
				return err
			})
		},
	}
	cmd.Flags().StringArrayVar(&sets, "set", nil, "config key=value to set (repeatable)")
	cmd.Flags().StringArrayVar(&deletes, "delete", nil, "config key to reset to its default (repeatable)")
	return cmd
}

// buildAlters turns --set/--delete into incremental operations. Touching
// the same key twice is rejected: the broker would answer INVALID_REQUEST
// and the user surely meant one of them.
func buildAlters(sets, deletes []string) ([]kadm.AlterConfig, error) {
	if len(sets) == 0 && len(deletes) == 0 {
		return nil, errors.New("alter-config: nothing to do, give --set k=v and/or --delete k")
	}
	seen := map[string]bool{}
	var alters []kadm.AlterConfig
	for _, kv := range sets {
		k, v, err := splitKeyValue("--set", kv)
		if err != nil {
			return nil, err
		}
		if seen[k] {
			return nil, fmt.Errorf("alter-config: %q given twice", k)
		}
		seen[k] = true
		alters = append(alters, kadm.AlterConfig{Op: kadm.SetConfig, Name: k, Value: &v})
	}
	for _, k := range deletes {
		if k == "" {
			return nil, errors.New("--delete: empty config key")
		}
		if seen[k] {
			return nil, fmt.Errorf("alter-config: %q given twice", k)
		}
		seen[k] = true
		alters = append(alters, kadm.AlterConfig{Op: kadm.DeleteConfig, Name: k})
	}
	return alters, nil
}
