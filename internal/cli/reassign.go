package cli

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"

	"github.com/spf13/cobra"
	"github.com/twmb/franz-go/pkg/kadm"
)

// newTopicReassignCmd is `weir topic reassign`, in the habits of
// kafka-reassign-partitions.
func newTopicReassignCmd(cf *clientFlags) *cobra.Command {
	var (
		generate, execute, verifyF, cancel, list bool
		topicsFile, plan                         string
		topics                                   []string
		brokerList                               string
		disableRack, additional                  bool
		throttle                                 int64
		output                                   *string
	)
	cmd := &cobra.Command{
		Use:   "reassign (--generate | --execute | --verify | --cancel | --list)",
		Short: "Move partition replicas between brokers (kafka-reassign-partitions)",
		Long: `Move partition replicas between brokers, as kafka-reassign-partitions does.

  --generate  print the current assignment of --topics (or the topics of
              --topics-to-move-json-file) and a proposed one over
              --broker-list: each broker an even share of the replicas and of
              the leaders, replicas of a partition on distinct racks, as few
              moves as possible. Nothing is changed.
  --execute   start the moves of --reassignment-json-file (Kafka's format,
              e.g. the proposal of --generate); the current assignment is
              printed first, to save for a rollback. --throttle N limits the
              adding replicas' fetching to N bytes/s per broker.
  --verify    say, per partition of the file, whether its move completed,
              is in progress or failed; once all completed, the throttle is
              removed.
  --cancel    cancel the moves of the file still in progress: those
              partitions go back to their replicas from before.
  --list      list every reassignment in progress.

A replica being added catches up as a follower and joins the in-sync
replicas; only then do the replicas being removed leave (their logs are
deleted), and leadership moves if the leader was removed.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			n := 0
			for _, b := range []bool{generate, execute, verifyF, cancel, list} {
				if b {
					n++
				}
			}
			if n != 1 {
				return errors.New("give exactly one of --generate, --execute, --verify, --cancel, --list")
			}
			if err := checkOutput(*output); err != nil {
				return err
			}
			out := cmd.OutOrStdout()
			var rows []planPartition
			var err error
			if execute || verifyF || cancel {
				if rows, err = readReassignmentFile(plan); err != nil {
					return err
				}
			}
			var genTopics []string
			var brokers []int32
			if generate {
				if genTopics, err = topicsToMove(topicsFile, topics); err != nil {
					return err
				}
				if brokers, err = parseBrokerList(brokerList); err != nil {
					return err
				}
			}
			if !cmd.Flags().Changed("throttle") {
				throttle = -1
			} else if throttle < 1 {
				return fmt.Errorf("--throttle %d: want a positive number of bytes/s", throttle)
			}
			return withAdminClient(cmd, cf, func(ctx context.Context, cl *kadmPair) error {
				switch {
				case generate:
					return generatePlan(ctx, cl.adm, out, genTopics, brokers, !disableRack)
				case execute:
					return executePlan(ctx, cl.raw, cl.adm, out, cf.requestTimeout, rows, additional, throttle)
				case verifyF:
					return verifyPlan(ctx, cl, out, *output, rows)
				case cancel:
					return cancelPlan(ctx, cl, out, cf, rows)
				default:
					return listOngoing(ctx, cl, out, *output)
				}
			})
		},
	}
	f := cmd.Flags()
	f.BoolVar(&generate, "generate", false, "propose an assignment of --topics over --broker-list")
	f.BoolVar(&execute, "execute", false, "start the moves of --reassignment-json-file")
	f.BoolVar(&verifyF, "verify", false, "report the progress of --reassignment-json-file's moves")
	f.BoolVar(&cancel, "cancel", false, "cancel the moves of --reassignment-json-file in progress")
	f.BoolVar(&list, "list", false, "list the reassignments in progress")
	f.StringVar(&topicsFile, "topics-to-move-json-file", "", `topics for --generate: {"version":1,"topics":[{"topic":"a"}]}`)
	f.StringSliceVar(&topics, "topics", nil, "comma-separated topics for --generate")
	f.StringVar(&brokerList, "broker-list", "", `brokers for --generate, as "1,2,3"`)
	f.BoolVar(&disableRack, "disable-rack-aware", false, "--generate ignores racks")
	f.StringVar(&plan, "reassignment-json-file", "", "the reassignment, in Kafka's JSON format")
	f.BoolVar(&additional, "additional", false, "--execute while other reassignments are in progress")
	f.Int64Var(&throttle, "throttle", -1, "bytes/s the adding replicas of one broker may fetch (replica.reassignment.throttle.bytes.per.sec)")
	output = addOutputFlag(cmd)
	return cmd
}

// kadmPair is an admin client with its raw requestor.
func topicsToMove(file string, topics []string) ([]string, error) {
	switch {
	case file != "" && len(topics) > 0:
		return nil, errors.New("give --topics-to-move-json-file or --topics, not both")
	case file == "" && len(topics) == 0:
		return nil, errors.New("--generate needs --topics-to-move-json-file or --topics")
	case file == "":
		return topics, nil
	}
	b, err := os.ReadFile(file)
	if err != nil {
		return nil, fmt.Errorf("read topics file: %w", err)
	}
	var f struct {
		Version int `json:"version"`
		Topics  []struct {
			Topic string `json:"topic"`
		} `json:"topics"`
	}
	if err := json.Unmarshal(b, &f); err != nil {
		return nil, fmt.Errorf("topics file: %w", err)
	}
	var out []string
	for _, t := range f.Topics {
		if t.Topic == "" {
			return nil, errors.New("topics file: a topic without a name")
		}
		out = append(out, t.Topic)
	}
	if len(out) == 0 {
		return nil, errors.New("topics file: no topics")
	}
	return out, nil
}

func parseBrokerList(s string) ([]int32, error) {
	if strings.TrimSpace(s) == "" {
		return nil, errors.New("--generate needs --broker-list")
	}
	var out []int32
	for _, f := range strings.Split(s, ",") {
		n, err := strconv.ParseInt(strings.TrimSpace(f), 10, 32)
		if err != nil || n < 0 {
			return nil, fmt.Errorf("--broker-list: %q is not a broker id", f)
		}
		out = append(out, int32(n))
	}
	return out, nil
}

// generatePlan prints the current and a proposed assignment.
func generatePlan(ctx context.Context, adm *kadm.Client, out io.Writer, topics []string, ids []int32, rackAware bool) error {
	view, err := viewCluster(ctx, adm, topics)
	if err != nil {
		return err
	}
	var brokers []planBroker
	for _, id := range ids {
		found := false
		for _, b := range view.brokers {
			if b.ID == id {
				brokers, found = append(brokers, b), true
			}
		}
		if !found {
			return fmt.Errorf("--broker-list: broker %d is not a live broker of the cluster", id)
		}
	}
	proposed, err := proposal(view.parts, brokers, rackAware)
	if err != nil {
		return err
	}
	_, err = fmt.Fprintf(out, "Current partition replica assignment\n%s\n\nProposed partition reassignment configuration\n%s\n",
		compactJSON(toJSON(view.parts)), compactJSON(toJSON(proposed)))
	return err
}

// proposal is the plan of parts over brokers, as rows.
func proposal(parts []planPartition, brokers []planBroker, rackAware bool) ([]planPartition, error) {
	replicas, err := plan(parts, brokers, rackAware)
	if err != nil {
		return nil, err
	}
	out := make([]planPartition, len(parts))
	for i, p := range parts {
		out[i] = planPartition{Topic: p.Topic, Partition: p.Partition, Replicas: replicas[i]}
	}
	return out, nil
}

func verifyPlan(ctx context.Context, cl *kadmPair, out io.Writer, format string, rows []planPartition) error {
	vs, err := verify(ctx, cl.raw, rows)
	if err != nil {
		return err
	}
	done := true
	for _, v := range vs {
		done = done && v.State == "completed"
	}
	if format == outputJSON {
		if err := printOutput(out, format, nil, vs); err != nil {
			return err
		}
	} else {
		fmt.Fprintln(out, "Status of partition reassignment:")
		for _, v := range vs {
			switch v.State {
			case "failed":
				fmt.Fprintf(out, "Reassignment of partition %s-%d failed: its replicas are %v, not %v.\n", v.Topic, v.Partition, v.Replicas, v.Target)
			default:
				fmt.Fprintf(out, "Reassignment of partition %s-%d is %s.\n", v.Topic, v.Partition, v.State)
			}
		}
	}
	if done {
		// Kafka's --verify clears the throttle once everything is done.
		if err := setThrottle(ctx, cl.adm, -1); err != nil {
			return err
		}
		if format != outputJSON {
			fmt.Fprintln(out, "Clearing broker-level throttles")
		}
	}
	return nil
}

func cancelPlan(ctx context.Context, cl *kadmPair, out io.Writer, cf *clientFlags, rows []planPartition) error {
	prog, err := listReassignments(ctx, cl.raw, planTopics(rows))
	if err != nil {
		return err
	}
	busy := map[string]bool{}
	for _, o := range prog {
		busy[o.Topic+"-"+strconv.Itoa(int(o.Partition))] = true
	}
	failed, err := alterReassignments(ctx, cl.raw, cf.requestTimeout, rows, true)
	if err != nil {
		return err
	}
	if len(failed) > 0 {
		return fmt.Errorf("%d cancellations failed: %s", len(failed), strings.Join(failed, "; "))
	}
	var names []string
	for _, r := range rows {
		if n := r.Topic + "-" + strconv.Itoa(int(r.Partition)); busy[n] {
			names = append(names, n)
		}
	}
	if len(names) == 0 {
		_, err = fmt.Fprintln(out, "None of the partitions was being reassigned.")
		return err
	}
	_, err = fmt.Fprintf(out, "Successfully cancelled partition reassignments for: %s\n", strings.Join(names, ","))
	return err
}

func listOngoing(ctx context.Context, cl *kadmPair, out io.Writer, format string) error {
	prog, err := listReassignments(ctx, cl.raw, nil)
	if err != nil {
		return err
	}
	if prog == nil {
		prog = []ongoing{}
	}
	t := &table{header: []string{"TOPIC", "PARTITION", "REPLICAS", "ADDING", "REMOVING"}}
	for _, o := range prog {
		t.add(o.Topic, strconv.Itoa(int(o.Partition)), joinIDs(o.Replicas), joinIDs(o.Adding), joinIDs(o.Removing))
	}
	return printOutput(out, format, t, prog)
}

func joinIDs(ids []int32) string {
	s := make([]string, len(ids))
	for i, id := range ids {
		s[i] = strconv.Itoa(int(id))
	}
	if len(s) == 0 {
		return "-"
	}
	return strings.Join(s, ",")
}
