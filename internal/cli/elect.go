package cli

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"

	"github.com/spf13/cobra"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// newTopicElectLeadersCmd is `weir topic elect-leaders`, after
// kafka-leader-election.sh.
func newTopicElectLeadersCmd(cf *clientFlags) *cobra.Command {
	var typ, topic, jsonFile string
	var partition int32
	var all bool
	cmd := &cobra.Command{
		Use:   "elect-leaders",
		Short: "Elect preferred or unclean leaders (kafka-leader-election)",
		Long: `Run leader elections, as kafka-leader-election.sh does.

--election-type preferred moves leadership back to each partition's
preferred replica (the first in its replica list) where it is in sync;
unclean gives an offline partition a leader from outside its ISR
(records only the old ISR had may be lost), whatever
unclean.leader.election.enable says.

Pick the partitions with exactly one of --topic (all its partitions, or
one with --partition), --all-topic-partitions, or --path-to-json-file,
a file in Kafka's format: {"partitions":[{"topic":"t","partition":0}]}.
With --all-topic-partitions only partitions that changed, or failed,
are reported. A partition already led by the replica the election would
pick is reported as such and is no failure; any other failure makes the
command exit non-zero.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			var et int8
			switch strings.ToLower(typ) {
			case "preferred":
				et = 0
			case "unclean":
				et = 1
			default:
				return fmt.Errorf("--election-type %q: want preferred or unclean", typ)
			}
			given := 0
			for _, set := range []bool{topic != "", all, jsonFile != ""} {
				if set {
					given++
				}
			}
			if given != 1 {
				return errors.New("give exactly one of --topic, --all-topic-partitions, --path-to-json-file")
			}
			if cmd.Flags().Changed("partition") && topic == "" {
				return errors.New("--partition needs --topic")
			}
			var fromFile []kmsg.ElectLeadersRequestTopic
			if jsonFile != "" {
				var err error
				if fromFile, err = readElectionFile(jsonFile); err != nil {
					return err
				}
			}
			return withClient(cmd, cf, func(ctx context.Context, cl *kgo.Client) error {
				req := kmsg.NewPtrElectLeadersRequest()
				req.ElectionType = et
				req.TimeoutMillis = int32(cf.requestTimeout.Milliseconds())
				switch {
				case all:
					req.Topics = nil
				case jsonFile != "":
					req.Topics = fromFile
				default:
					rt := kmsg.NewElectLeadersRequestTopic()
					rt.Topic = topic
					if cmd.Flags().Changed("partition") {
						rt.Partitions = []int32{partition}
					} else {
						ps, err := partitionsOf(ctx, cl, topic)
						if err != nil {
							return err
						}
						rt.Partitions = ps
					}
					req.Topics = []kmsg.ElectLeadersRequestTopic{rt}
				}
				resp, err := req.RequestWith(ctx, cl)
				if err != nil {
					return fmt.Errorf("elect leaders: %w", err)
				}
				return reportElection(cmd.OutOrStdout(), strings.ToUpper(typ), resp)
			})
		},
	}
	fs := cmd.Flags()
	fs.StringVar(&typ, "election-type", "", "preferred or unclean (required)")
	fs.StringVar(&topic, "topic", "", "elect leaders for this topic's partitions")
	fs.Int32Var(&partition, "partition", 0, "only this partition of --topic")
	fs.BoolVar(&all, "all-topic-partitions", false, "elect leaders for every partition")
	fs.StringVar(&jsonFile, "path-to-json-file", "", `JSON file: {"partitions":[{"topic":"t","partition":0}]}`)
	_ = cmd.MarkFlagRequired("election-type")
	return cmd
}

// electionFile is kafka-leader-election's --path-to-json-file format.
type electionFile struct {
	Partitions []struct {
		Topic     string `json:"topic"`
		Partition *int32 `json:"partition"`
	} `json:"partitions"`
}

func readElectionFile(path string) ([]kmsg.ElectLeadersRequestTopic, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("--path-to-json-file: %w", err)
	}
	return parseElectionFile(data)
}

// parseElectionFile parses the file and groups its partitions by topic in
// file order; a partition listed twice is an error, as in Kafka's tool.
func parseElectionFile(data []byte) ([]kmsg.ElectLeadersRequestTopic, error) {
	var f electionFile
	if err := json.Unmarshal(data, &f); err != nil {
		return nil, fmt.Errorf("--path-to-json-file: %w", err)
	}
	if len(f.Partitions) == 0 {
		return nil, errors.New(`--path-to-json-file: no partitions (want {"partitions":[{"topic":"t","partition":0}]})`)
	}
	var out []kmsg.ElectLeadersRequestTopic
	for i, p := range f.Partitions {
		if p.Topic == "" || p.Partition == nil || *p.Partition < 0 {
			return nil, fmt.Errorf("--path-to-json-file: entry %d needs a topic and a partition >= 0", i)
		}
		j := slices.IndexFunc(out, func(t kmsg.ElectLeadersRequestTopic) bool { return t.Topic == p.Topic })
		if j < 0 {
			rt := kmsg.NewElectLeadersRequestTopic()
			rt.Topic = p.Topic
			out = append(out, rt)
			j = len(out) - 1
		}
		if slices.Contains(out[j].Partitions, *p.Partition) {
			return nil, fmt.Errorf("--path-to-json-file: duplicate partition %s-%d", p.Topic, *p.Partition)
		}
		out[j].Partitions = append(out[j].Partitions, *p.Partition)
	}
	return out, nil
}

// partitionsOf lists a topic's partitions from Metadata.
func partitionsOf(ctx context.Context, cl *kgo.Client, topic string) ([]int32, error) {
	req := kmsg.NewPtrMetadataRequest()
	rt := kmsg.NewMetadataRequestTopic()
	rt.Topic = kmsg.StringPtr(topic)
	req.Topics = append(req.Topics, rt)
	resp, err := req.RequestWith(ctx, cl)
	if err != nil {
		return nil, fmt.Errorf("metadata for %q: %w", topic, err)
	}
	for _, t := range resp.Topics {
		if err := kerr.ErrorForCode(t.ErrorCode); err != nil {
			return nil, fmt.Errorf("topic %q: %w", topic, err)
		}
		var out []int32
		for _, p := range t.Partitions {
			out = append(out, p.Partition)
		}
		slices.Sort(out)
		return out, nil
	}
	return nil, fmt.Errorf("topic %q: %w", topic, kerr.UnknownTopicOrPartition)
}

// reportElection prints what kafka-leader-election prints: the partitions
// elected, those already led by the right replica, and each failure; it
// fails if any partition failed for another reason.
func reportElection(out io.Writer, typ string, resp *kmsg.ElectLeadersResponse) error {
	if err := kerr.ErrorForCode(resp.ErrorCode); err != nil && len(resp.Topics) == 0 {
		return fmt.Errorf("elect leaders: %w", err)
	}
	var done, notNeeded, failed []string
	var failures []string
	for _, t := range resp.Topics {
		for _, p := range t.Partitions {
			name := fmt.Sprintf("%s-%d", t.Topic, p.Partition)
			switch err := kerr.ErrorForCode(p.ErrorCode); {
			case err == nil:
				done = append(done, name)
			case errors.Is(err, kerr.ElectionNotNeeded):
				notNeeded = append(notNeeded, name)
			default:
				failed = append(failed, name)
				line := fmt.Sprintf("%s: %v", name, err)
				if p.ErrorMessage != nil && *p.ErrorMessage != "" {
					line += ": " + *p.ErrorMessage
				}
				failures = append(failures, line)
			}
		}
	}
	if len(done) > 0 {
		fmt.Fprintf(out, "Successfully completed leader election (%s) for partitions %s\n", typ, strings.Join(done, ", "))
	}
	if len(notNeeded) > 0 {
		fmt.Fprintf(out, "Valid replica already elected for partitions %s\n", strings.Join(notNeeded, ", "))
	}
	if len(done)+len(notNeeded)+len(failed) == 0 {
		fmt.Fprintf(out, "No partition needed a leader election (%s)\n", typ)
	}
	if len(failed) > 0 {
		fmt.Fprintf(out, "Error completing leader election (%s) for partitions %s\n", typ, strings.Join(failed, ", "))
		for _, f := range failures {
			fmt.Fprintf(out, "\t%s\n", f)
		}
		return fmt.Errorf("%d replica(s) could not be elected", len(failed))
	}
	return nil
}
