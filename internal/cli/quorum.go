package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// NewClusterOpsCmds are the cluster operations of `weir cluster`:
// `quorum describe|add|remove` (kafka-metadata-quorum.sh) and
// `unregister` (kafka-cluster.sh unregister).
func NewClusterOpsCmds() []*cobra.Command {
	return []*cobra.Command{newQuorumCmd(), newUnregisterCmd()}
}

// responseError is the error of an answer's code and message, if any.
func responseError(code int16, msg *string) error {
	err := kerr.ErrorForCode(code)
	if err == nil {
		return nil
	}
	if msg != nil && *msg != "" {
		return withBrokerMessage(err, *msg)
	}
	return err
}

func newQuorumCmd() *cobra.Command {
	cf := &clientFlags{}
	cmd := &cobra.Command{
		Use:   "quorum",
		Short: "Describe and change the metadata quorum's voters (kafka-metadata-quorum)",
		Long: `Describe the controller quorum, add a voter, or remove one, as
kafka-metadata-quorum.sh does (KIP-853). Requests go to any broker, which
forwards them to the active controller.

A node becomes a voter in two steps: start it with
process.roles=broker,controller, a CONTROLLER listener, and
controller.quorum.voters naming the current voters but not itself; it
joins as an observer and follows the metadata log. Then run
"weir cluster quorum add --controller-id N". A broker-only node
(process.roles=broker) follows the log too but has no controller listener,
so it cannot vote; restart it with the controller role first.

"quorum remove" takes a voter out: it goes on following the log as an
observer (and serving as a broker). To retire the machine, stop it and
"weir cluster unregister" its broker.`,
		Args: cobra.NoArgs,
	}
	cf.register(cmd.PersistentFlags())
	cmd.AddCommand(newQuorumDescribeCmd(cf), newQuorumAddCmd(cf), newQuorumRemoveCmd(cf))
	return cmd
}

// quorumJSON is `quorum describe --output json`.
type quorumJSON struct {
	ClusterID     string        `json:"clusterId"`
	LeaderID      int32         `json:"leaderId"`
	LeaderEpoch   int32         `json:"leaderEpoch"`
	HighWatermark int64         `json:"highWatermark"`
	MaxLag        int64         `json:"maxFollowerLag"`
	MaxLagTimeMs  int64         `json:"maxFollowerLagTimeMs"`
	Voters        []int32       `json:"currentVoters"`
	Observers     []int32       `json:"currentObservers"`
	Replicas      []replicaJSON `json:"replicas"`
}

type replicaJSON struct {
	NodeID                int32  `json:"nodeId"`
	Endpoint              string `json:"endpoint"`
	LogEndOffset          int64  `json:"logEndOffset"`
	Lag                   int64  `json:"lag"`
	LastFetchTimestamp    int64  `json:"lastFetchTimestamp"`
	LastCaughtUpTimestamp int64  `json:"lastCaughtUpTimestamp"`
	Status                string `json:"status"`
}

func describeQuorum(ctx context.Context, cl *kgo.Client) (*kmsg.DescribeQuorumResponse, *kmsg.DescribeQuorumResponseTopicPartition, error) {
	req := kmsg.NewPtrDescribeQuorumRequest()
	rt := kmsg.NewDescribeQuorumRequestTopic()
	rt.Topic = "__cluster_metadata"
	rt.Partitions = []kmsg.DescribeQuorumRequestTopicPartition{kmsg.NewDescribeQuorumRequestTopicPartition()}
	req.Topics = append(req.Topics, rt)
	resp, err := req.RequestWith(ctx, cl)
	if err != nil {
		return nil, nil, fmt.Errorf("describe quorum: %w", err)
	}
	if err := responseError(resp.ErrorCode, resp.ErrorMessage); err != nil {
		return nil, nil, fmt.Errorf("describe quorum: %w", err)
	}
	if len(resp.Topics) != 1 || len(resp.Topics[0].Partitions) != 1 {
		return nil, nil, errors.New("describe quorum: the answer names no metadata partition")
	}
	p := &resp.Topics[0].Partitions[0]
	if err := responseError(p.ErrorCode, p.ErrorMessage); err != nil {
		return nil, nil, fmt.Errorf("describe quorum: %w", err)
	}
	return resp, p, nil
}

// quorumView turns the answer into what describe prints; now is the
// time lags are measured at.
func quorumView(resp *kmsg.DescribeQuorumResponse, p *kmsg.DescribeQuorumResponseTopicPartition, now time.Time) quorumJSON {
	v := quorumJSON{LeaderID: p.LeaderID, LeaderEpoch: p.LeaderEpoch, HighWatermark: p.HighWatermark, Voters: []int32{}, Observers: []int32{}, Replicas: []replicaJSON{}}
	endpoints := map[int32]string{}
	for _, n := range resp.Nodes {
		if len(n.Listeners) > 0 {
			l := n.Listeners[0]
			endpoints[n.NodeID] = fmt.Sprintf("%s://%s", l.Name, net.JoinHostPort(l.Host, strconv.Itoa(int(l.Port))))
		}
	}
	var leaderLEO int64 = -1
	for _, r := range p.CurrentVoters {
		if r.ReplicaID == p.LeaderID {
			leaderLEO = r.LogEndOffset
		}
	}
	add := func(rs []kmsg.DescribeQuorumResponseTopicPartitionReplicaState, voter bool) {
		for _, r := range rs {
			status := "Observer"
			switch {
			case r.ReplicaID == p.LeaderID:
				status = "Leader"
			case voter:
				status = "Follower"
			}
			lag := int64(-1)
			if leaderLEO >= 0 && r.LogEndOffset >= 0 {
				lag = max(0, leaderLEO-r.LogEndOffset)
			}
			if voter {
				v.Voters = append(v.Voters, r.ReplicaID)
				if r.ReplicaID != p.LeaderID {
					v.MaxLag = max(v.MaxLag, lag)
					if r.LastCaughtUpTimestamp > 0 {
						v.MaxLagTimeMs = max(v.MaxLagTimeMs, now.UnixMilli()-r.LastCaughtUpTimestamp)
					}
				}
			} else {
				v.Observers = append(v.Observers, r.ReplicaID)
			}
			v.Replicas = append(v.Replicas, replicaJSON{NodeID: r.ReplicaID, Endpoint: endpoints[r.ReplicaID], LogEndOffset: r.LogEndOffset,
				Lag: lag, LastFetchTimestamp: r.LastFetchTimestamp, LastCaughtUpTimestamp: r.LastCaughtUpTimestamp, Status: status})
		}
	}
	add(p.CurrentVoters, true)
	add(p.Observers, false)
	return v
}

func newQuorumDescribeCmd(cf *clientFlags) *cobra.Command {
	var output *string
	var status, replication bool
	cmd := &cobra.Command{
		Use:   "describe",
		Short: "Show the quorum's leader, voters and observers",
		Long: `Show the metadata quorum as its leader sees it: --status the leader,
its epoch (the Raft term), the high watermark (the commit index) and the
voter and observer ids; --replication one row per member with its log end
offset and lag. Without either flag, both. A follower's log end offset is
the metadata offset its broker heartbeat last reported (-1 if none yet).`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := checkOutput(*output); err != nil {
				return err
			}
			if !status && !replication {
				status, replication = true, true
			}
			return withClient(cmd, cf, func(ctx context.Context, cl *kgo.Client) error {
				resp, p, err := describeQuorum(ctx, cl)
				if err != nil {
					return err
				}
				v := quorumView(resp, p, time.Now())
				if dc, err := kmsg.NewPtrDescribeClusterRequest().RequestWith(ctx, cl); err == nil {
					v.ClusterID = dc.ClusterID
				}
				if *output == outputJSON {
					return printOutput(cmd.OutOrStdout(), *output, nil, v)
				}
				return writeQuorum(cmd.OutOrStdout(), v, status, replication)
			})
		},
	}
	cmd.Flags().BoolVar(&status, "status", false, "show the quorum's status")
	cmd.Flags().BoolVar(&replication, "replication", false, "show each member's replication state")
	output = addOutputFlag(cmd)
	return cmd
}

func writeQuorum(out io.Writer, v quorumJSON, status, replication bool) error {
	ids := func(xs []int32) string {
		s := make([]string, len(xs))
		for i, x := range xs {
			s[i] = strconv.Itoa(int(x))
		}
		return "[" + strings.Join(s, ",") + "]"
	}
	if status {
		fmt.Fprintf(out, "ClusterId:              %s\nLeaderId:               %d\nLeaderEpoch:            %d\nHighWatermark:          %d\n",
			v.ClusterID, v.LeaderID, v.LeaderEpoch, v.HighWatermark)
		fmt.Fprintf(out, "MaxFollowerLag:         %d\nMaxFollowerLagTimeMs:   %d\nCurrentVoters:          %s\nCurrentObservers:       %s\n",
			v.MaxLag, v.MaxLagTimeMs, ids(v.Voters), ids(v.Observers))
	}
	if status && replication {
		fmt.Fprintln(out)
	}
	if replication {
		t := &table{header: []string{"NODE", "ENDPOINT", "LOG-END-OFFSET", "LAG", "LAST-FETCH-TIMESTAMP", "LAST-CAUGHT-UP-TIMESTAMP", "STATUS"}}
		for _, r := range v.Replicas {
			ep := r.Endpoint
			if ep == "" {
				ep = "-"
			}
			t.add(strconv.Itoa(int(r.NodeID)), ep, strconv.FormatInt(r.LogEndOffset, 10), strconv.FormatInt(r.Lag, 10),
				strconv.FormatInt(r.LastFetchTimestamp, 10), strconv.FormatInt(r.LastCaughtUpTimestamp, 10), r.Status)
		}
		return t.write(out)
	}
	return nil
}

func newQuorumAddCmd(cf *clientFlags) *cobra.Command {
	var id int32
	var addr, listener string
	cmd := &cobra.Command{
		Use:   "add",
		Short: "Promote an observer controller to a voter",
		Long: `Make node --controller-id a voter of the metadata quorum (AddRaftVoter).
The node must be running as an observer (process.roles=broker,controller,
not in controller.quorum.voters) and caught up with the metadata log; the
controller waits up to --request-timeout for that, then answers
REQUEST_TIMED_OUT. Its CONTROLLER listener is looked up in the quorum's
description unless --controller-address gives it.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if id < 0 {
				return fmt.Errorf("--controller-id %d: must be >= 0", id)
			}
			return withClient(cmd, cf, func(ctx context.Context, cl *kgo.Client) error {
				req := kmsg.NewPtrAddRaftVoterRequest()
				req.VoterID, req.TimeoutMillis, req.AckWhenCommitted = id, int32(cf.requestTimeout.Milliseconds()), true
				if addr != "" {
					host, portStr, err := net.SplitHostPort(addr)
					port, perr := strconv.ParseUint(portStr, 10, 16)
					if err != nil || perr != nil {
						return fmt.Errorf("--controller-address %q: want host:port", addr)
					}
					l := kmsg.NewAddRaftVoterRequestListener()
					l.Name, l.Host, l.Port = listener, host, uint16(port)
					req.Listeners = append(req.Listeners, l)
				} else {
					resp, _, err := describeQuorum(ctx, cl)
					if err != nil {
						return err
					}
					for _, n := range resp.Nodes {
						if n.NodeID != id {
							continue
						}
						for _, nl := range n.Listeners {
							l := kmsg.NewAddRaftVoterRequestListener()
							l.Name, l.Host, l.Port = nl.Name, nl.Host, nl.Port
							req.Listeners = append(req.Listeners, l)
						}
					}
					if len(req.Listeners) == 0 {
						return fmt.Errorf("node %d is not following the metadata log (start it with process.roles=broker,controller), or give --controller-address", id)
					}
				}
				resp, err := req.RequestWith(ctx, cl)
				if err != nil {
					return fmt.Errorf("add voter %d: %w", id, err)
				}
				if err := responseError(resp.ErrorCode, resp.ErrorMessage); err != nil {
					return fmt.Errorf("add voter %d: %w", id, err)
				}
				fmt.Fprintf(cmd.OutOrStdout(), "Added controller %d as a voter of the metadata quorum\n", id)
				return nil
			})
		},
	}
	cmd.Flags().Int32Var(&id, "controller-id", -1, "node id of the controller to add (required)")
	cmd.Flags().StringVar(&addr, "controller-address", "", "its CONTROLLER listener, host:port (default: from quorum describe)")
	cmd.Flags().StringVar(&listener, "controller-listener", "CONTROLLER", "listener name for --controller-address")
	_ = cmd.MarkFlagRequired("controller-id")
	return cmd
}

func newQuorumRemoveCmd(cf *clientFlags) *cobra.Command {
	var id int32
	cmd := &cobra.Command{
		Use:   "remove",
		Short: "Take a voter out of the metadata quorum",
		Long: `Remove node --controller-id from the voters (RemoveRaftVoter). It keeps
following the metadata log as an observer, so a node that is also a
broker keeps serving. Removing the leader hands leadership to another
voter after an election timeout. The last voter cannot be removed.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return withClient(cmd, cf, func(ctx context.Context, cl *kgo.Client) error {
				req := kmsg.NewPtrRemoveRaftVoterRequest()
				req.VoterID = id
				resp, err := req.RequestWith(ctx, cl)
				if err != nil {
					return fmt.Errorf("remove voter %d: %w", id, err)
				}
				if err := responseError(resp.ErrorCode, resp.ErrorMessage); err != nil {
					return fmt.Errorf("remove voter %d: %w", id, err)
				}
				fmt.Fprintf(cmd.OutOrStdout(), "Removed controller %d from the voters of the metadata quorum\n", id)
				return nil
			})
		},
	}
	cmd.Flags().Int32Var(&id, "controller-id", -1, "node id of the voter to remove (required)")
	_ = cmd.MarkFlagRequired("controller-id")
	return cmd
}

func newUnregisterCmd() *cobra.Command {
	cf := &clientFlags{}
	var id int32
	cmd := &cobra.Command{
		Use:   "unregister [BROKER]",
		Short: "Remove a stopped broker from the cluster for good (kafka-cluster unregister)",
		Long: `Unregister broker BROKER (or --id), as kafka-cluster.sh unregister does:
it disappears from the metadata (Metadata and DescribeCluster stop listing
it), leaves the ISRs it was in, and the quorum stops sending it the
metadata log. Partitions keep it in their replica lists until they are
reassigned. Only a stopped (fenced) broker can be unregistered; a live one
is refused with INVALID_REQUEST. A voter of the metadata quorum stays a
voter: remove it with "weir cluster quorum remove" first.`,
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if len(args) == 1 {
				n, err := strconv.ParseInt(args[0], 10, 32)
				if err != nil || cmd.Flags().Changed("id") {
					return fmt.Errorf("give the broker id once, as BROKER or --id")
				}
				id = int32(n)
			}
			if id < 0 {
				return errors.New("give the broker id, as BROKER or --id")
			}
			return withClient(cmd, cf, func(ctx context.Context, cl *kgo.Client) error {
				req := kmsg.NewPtrUnregisterBrokerRequest()
				req.BrokerID = id
				resp, err := req.RequestWith(ctx, cl)
				if err != nil {
					return fmt.Errorf("unregister broker %d: %w", id, err)
				}
				if err := responseError(resp.ErrorCode, resp.ErrorMessage); err != nil {
					return fmt.Errorf("unregister broker %d: %w", id, err)
				}
				fmt.Fprintf(cmd.OutOrStdout(), "Broker %d is no longer registered\n", id)
				return nil
			})
		},
	}
	cf.register(cmd.Flags())
	cmd.Flags().Int32Var(&id, "id", -1, "broker id to unregister")
	return cmd
}
