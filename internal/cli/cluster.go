package cli

import (
	"context"
	"fmt"
	"io"
	"net"
	"sort"
	"strconv"

	"github.com/spf13/cobra"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// NewClusterStatusCmd is `weir cluster status`: the brokers, the active
// controller, and the partitions that need attention.
func NewClusterStatusCmd() *cobra.Command {
	cf := &clientFlags{}
	var output *string
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
			if err := checkOutput(*output); err != nil {
				return err
			}
			return withAdminClient(cmd, cf, func(ctx context.Context, p *kadmPair) error {
				return clusterStatus(ctx, p.raw, p.adm, cmd.OutOrStdout(), *output)
			})
		},
	}
	cf.register(cmd.Flags())
	output = addOutputFlag(cmd)
	return cmd
}

// clusterStatusJSON is `cluster status --output json`.
type clusterStatusJSON struct {
	ClusterID  string              `json:"clusterId"`
	Controller int32               `json:"controller"`
	Brokers    []brokerStatusJSON  `json:"brokers"`
	Partitions partitionCountsJSON `json:"partitions"`
	Unhealthy  []unhealthyJSON     `json:"unhealthy"`
}

type brokerStatusJSON struct {
	ID   int32   `json:"id"`
	Host string  `json:"host"`
	Port int32   `json:"port"`
	Rack *string `json:"rack"`
	// State is live or fenced; unknown when the cluster does not report
	// fenced brokers (DescribeCluster before v2).
	State string `json:"state"`
}

type partitionCountsJSON struct {
	Total           int `json:"total"`
	Offline         int `json:"offline"`
	UnderMinISR     int `json:"underMinIsr"`
	UnderReplicated int `json:"underReplicated"`
}

// unhealthyJSON is a partition that needs attention; Problem is offline,
// under min ISR or under-replicated.
type unhealthyJSON struct {
	partitionJSON
	Problem string `json:"problem"`
}

func clusterStatus(ctx context.Context, cl kmsg.Requestor, adm *kadm.Client, out io.Writer, format string) error {
	req := kmsg.NewPtrDescribeClusterRequest()
	req.IncludeFencedBrokers = true
	resp, err := req.RequestWith(ctx, cl)
	if err != nil {
		return fmt.Errorf("describe cluster: %w", err)
	}
	if err := kerr.ErrorForCode(resp.ErrorCode); err != nil {
		return fmt.Errorf("describe cluster: %w", err)
	}
	st := clusterStatusJSON{ClusterID: resp.ClusterID, Controller: resp.ControllerID, Brokers: []brokerStatusJSON{}, Unhealthy: []unhealthyJSON{}}
	sort.Slice(resp.Brokers, func(i, j int) bool { return resp.Brokers[i].NodeID < resp.Brokers[j].NodeID })
	for _, b := range resp.Brokers {
		state := "live"
		if b.IsFenced {
			state = "fenced"
		}
		if resp.Version < 2 {
			state = "unknown"
		}
		st.Brokers = append(st.Brokers, brokerStatusJSON{ID: b.NodeID, Host: b.Host, Port: b.Port, Rack: b.Rack, State: state})
	}
	topics, err := adm.ListTopicsWithInternal(ctx)
	if err != nil {
		return fmt.Errorf("list topics: %w", err)
	}
	minISR, err := minISRs(ctx, adm, topics.Names())
	if err != nil {
		return err
	}
	for _, d := range topics.Sorted() {
		for _, p := range d.Partitions.Sorted() {
			st.Partitions.Total++
			what := ""
			switch {
			case p.Leader < 0:
				st.Partitions.Offline++
				what = "offline"
			case len(p.ISR) < minISR[d.Topic]:
				st.Partitions.UnderMinISR++
				what = "under min ISR"
			case len(p.ISR) < len(p.Replicas):
				st.Partitions.UnderReplicated++
				what = "under-replicated"
			default:
				continue
			}
			st.Unhealthy = append(st.Unhealthy, unhealthyJSON{toPartitionJSON(p), what})
		}
	}
	if format == outputJSON {
		return printOutput(out, format, nil, st)
	}
	return writeClusterStatus(out, st)
}

// writeClusterStatus is the text form: the cluster, a broker table, the
// partition counts and a kafka-topics line per unhealthy partition.
func writeClusterStatus(out io.Writer, st clusterStatusJSON) error {
	fmt.Fprintf(out, "Cluster: %s\nController: %d\n\n", st.ClusterID, st.Controller)
	t := &table{header: []string{"BROKER", "ENDPOINT", "RACK", "STATE"}}
	for _, b := range st.Brokers {
		rack, state := "-", b.State
		if b.Rack != nil {
			rack = *b.Rack
		}
		if state == "unknown" {
			state = "live (fenced brokers not reported by this cluster)"
		}
		t.add(strconv.Itoa(int(b.ID)), net.JoinHostPort(b.Host, strconv.Itoa(int(b.Port))), rack, state)
	}
	if err := t.write(out); err != nil {
		return err
	}
	c := st.Partitions
	fmt.Fprintf(out, "\nPartitions: %d (offline %d, under min ISR %d, under-replicated %d)\n", c.Total, c.Offline, c.UnderMinISR, c.UnderReplicated)
	for _, u := range st.Unhealthy {
		leader := "none"
		if u.Leader != nil {
			leader = strconv.Itoa(int(*u.Leader))
		}
		if _, err := fmt.Fprintf(out, "\tTopic: %s\tPartition: %d\tLeader: %s\tReplicas: %s\tIsr: %s\t(%s)\n",
			u.Topic, u.Partition, leader, joinInt32s(u.Replicas), joinInt32s(u.Isr), u.Problem); err != nil {
			return err
		}
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
