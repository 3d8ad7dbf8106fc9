package cli

import (
	"context"
	"fmt"
	"io"
	"net"
	"sort"
	"strconv"
	"text/tabwriter"

	"github.com/spf13/cobra"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// NewClusterStatusCmd is `weir cluster status`: the brokers, the active
// controller, and the partitions that need attention.
func NewClusterStatusCmd() *cobra.Command {
	cf := &clientFlags{}
	cmd := &cobra.Command{
		Use:   "status",
		Short: "Show brokers (fenced or live), the controller and unhealthy partitions",
		Long: `Show the cluster as the brokers see it: every registered broker with its
endpoint, rack and state (live, or fenced: not heartbeating, or not yet
caught up), the active controller, and the partitions that are offline
(no leader), under min ISR (fewer in-sync replicas than
min.insync.replicas: acks=all writes are refused) or under-replicated
(fewer in-sync replicas than replicas).`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
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
			return clusterStatus(ctx, cl, adm, cmd.OutOrStdout())
		},
	}
	cf.register(cmd.Flags())
	return cmd
}

func clusterStatus(ctx context.Context, cl kmsg.Requestor, adm *kadm.Client, out io.Writer) error {
	req := kmsg.NewPtrDescribeClusterRequest()
	req.IncludeFencedBrokers = true
	resp, err := req.RequestWith(ctx, cl)
	if err != nil {
		return fmt.Errorf("describe cluster: %w", err)
	}
	if err := kerr.ErrorForCode(resp.ErrorCode); err != nil {
		return fmt.Errorf("describe cluster: %w", err)
	}
	fmt.Fprintf(out, "Cluster: %s\nController: %d\n\n", resp.ClusterID, resp.ControllerID)
	tw := tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "BROKER\tENDPOINT\tRACK\tSTATE")
	sort.Slice(resp.Brokers, func(i, j int) bool { return resp.Brokers[i].NodeID < resp.Brokers[j].NodeID })
	for _, b := range resp.Brokers {
		rack, state := "-", "live"
		if b.Rack != nil {
			rack = *b.Rack
		}
		if b.IsFenced {
			state = "fenced"
		}
		if resp.Version < 2 {
			state = "live (fenced brokers not reported by this cluster)"
		}
		fmt.Fprintf(tw, "%d\t%s\t%s\t%s\n", b.NodeID, net.JoinHostPort(b.Host, strconv.Itoa(int(b.Port))), rack, state)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	topics, err := adm.ListTopicsWithInternal(ctx)
	if err != nil {
		return fmt.Errorf("list topics: %w", err)
	}
	minISR, err := minISRs(ctx, adm, topics.Names())
	if err != nil {
		return err
	}
	var total, offline, underMin, under int
	var bad []string
	for _, d := range topics.Sorted() {
		for _, p := range d.Partitions.Sorted() {
			total++
			what := ""
			switch {
			case p.Leader < 0:
				offline++
				what = "offline"
			case len(p.ISR) < minISR[d.Topic]:
				underMin++
				what = "under min ISR"
			case len(p.ISR) < len(p.Replicas):
				under++
				what = "under-replicated"
			default:
				continue
			}
			bad = append(bad, fmt.Sprintf("\tTopic: %s\tPartition: %d\tLeader: %s\tReplicas: %s\tIsr: %s\t(%s)",
				d.Topic, p.Partition, leaderName(p.Leader), joinInt32s(p.Replicas), joinInt32s(p.ISR), what))
		}
	}
	fmt.Fprintf(out, "\nPartitions: %d (offline %d, under min ISR %d, under-replicated %d)\n", total, offline, underMin, under)
	for _, l := range bad {
		fmt.Fprintln(out, l)
	}
	return nil
}

func leaderName(id int32) string {
	if id < 0 {
		return "none"
	}
	return strconv.Itoa(int(id))
}

// minISRs is each topic's effective min.insync.replicas (1 if unknown).
func minISRs(ctx context.Context, adm *kadm.Client, topics []string) (map[string]int, error) {
	out := map[string]int{}
	if len(topics) == 0 {
		return out, nil
	}
	rcs, err := adm.DescribeTopicConfigs(ctx, topics...)
	if err != nil {
		return nil, fmt.Errorf("describe topic configs: %w", err)
	}
	for _, rc := range rcs {
		out[rc.Name] = 1
		for _, c := range rc.Configs {
			if c.Key == "min.insync.replicas" {
				if n, err := strconv.Atoi(c.MaybeValue()); err == nil {
					out[rc.Name] = n
				}
			}
		}
	}
	return out, nil
}
