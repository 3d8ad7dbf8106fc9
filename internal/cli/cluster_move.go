package cli

import (
	"context"
	"fmt"

	"slices"
	"strconv"
	"time"

	"github.com/spf13/cobra"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

// `weir cluster drain BROKER` and `weir cluster rebalance`: a plan made by
// the reassignment planner (reassign_plan.go) over every topic, internal
// ones included, executed and, unless --no-wait, waited for.

// moveFlags are the flags drain and rebalance share.
type moveFlags struct {
	dryRun, noWait, disableRack bool
	throttle                    int64
	wait                        time.Duration
}

func (m *moveFlags) register(cmd *cobra.Command) {
	f := cmd.Flags()
	f.BoolVar(&m.dryRun, "dry-run", false, "print the plan and change nothing")
	f.BoolVar(&m.noWait, "no-wait", false, "start the moves and return (follow them with topic reassign --verify or --list)")
	f.BoolVar(&m.disableRack, "disable-rack-aware", false, "ignore racks when placing replicas")
	f.Int64Var(&m.throttle, "throttle", -1, "bytes/s the adding replicas of one broker may fetch while moving (removed when done)")
	f.DurationVar(&m.wait, "timeout", 0, "give up waiting for the moves after this long (0: no limit)")
}

// NewClusterDrainCmd is `weir cluster drain BROKER`.
func NewClusterDrainCmd() *cobra.Command {
	cf := &clientFlags{}
	mf := &moveFlags{}
	cmd := &cobra.Command{
		Use:   "drain BROKER",
		Short: "Move every replica off a broker, so that it can be stopped for good",
		Long: `Move every partition replica (internal topics included) off BROKER onto the
other live brokers, evenly and rack-aware, moving as little as possible
else; its leaderships move as each partition's move completes. Waits until
every move is done and BROKER holds nothing, then says so: the broker can
then be stopped without any partition losing a replica.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			id, err := strconv.ParseInt(args[0], 10, 32)
			if err != nil || id < 0 {
				return fmt.Errorf("broker %q: want a broker id", args[0])
			}
			// A broker that is down (not live) may be drained too: its
			// replicas are recreated elsewhere from the in-sync ones.
			return runMove(cmd, cf, mf, func(v clusterView) ([]planBroker, error) {
				var out []planBroker
				for _, b := range v.brokers {
					if b.ID != int32(id) {
						out = append(out, b)
					}
				}
				return out, nil
			}, fmt.Sprintf("Broker %d holds no replicas: it can be stopped.", id))
		},
	}
	cf.register(cmd.Flags())
	mf.register(cmd)
	return cmd
}

// NewClusterRebalanceCmd is `weir cluster rebalance`.
func NewClusterRebalanceCmd() *cobra.Command {
	cf := &clientFlags{}
	mf := &moveFlags{}
	cmd := &cobra.Command{
		Use:   "rebalance",
		Short: "Even out replicas and leaders over the live brokers (after adding brokers)",
		Long: `Move partition replicas (internal topics included) so that every live broker
holds an even share of the replicas and is the preferred leader of an even
share of the partitions, rack-aware, moving as few replicas as possible.
Waits until every move is done.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return runMove(cmd, cf, mf, func(v clusterView) ([]planBroker, error) { return v.brokers, nil }, "The cluster is balanced.")
		},
	}
	cf.register(cmd.Flags())
	mf.register(cmd)
	return cmd
}

// runMove plans over the brokers targets picks, then executes and waits.
func runMove(cmd *cobra.Command, cf *clientFlags, mf *moveFlags, targets func(clusterView) ([]planBroker, error), doneMsg string) error {
	if cmd.Flags().Changed("throttle") && mf.throttle < 1 {
		return fmt.Errorf("--throttle %d: want a positive number of bytes/s", mf.throttle)
	}
	return withAdminClient(cmd, cf, func(ctx context.Context, p *kadmPair) error {
		return move(ctx, cmd, cf, mf, p.raw, p.adm, targets, doneMsg)
	})
}

// move is runMove with its client.
func move(ctx context.Context, cmd *cobra.Command, cf *clientFlags, mf *moveFlags, cl *kgo.Client, adm *kadm.Client, targets func(clusterView) ([]planBroker, error), doneMsg string) error {
	out := cmd.OutOrStdout()
	view, err := viewCluster(ctx, adm, nil)
	if err != nil {
		return err
	}
	brokers, err := targets(view)
	if err != nil {
		return err
	}
	proposed, err := proposal(view.parts, brokers, !mf.disableRack)
	if err != nil {
		return err
	}
	var moves []planPartition
	for i, p := range proposed {
		if !slices.Equal(p.Replicas, view.parts[i].Replicas) {
			moves = append(moves, p)
		}
	}
	if len(moves) == 0 {
		_, err := fmt.Fprintln(out, "Nothing to move. "+doneMsg)
		return err
	}
	fmt.Fprintf(out, "Proposed partition reassignment configuration (%d partitions move)\n%s\n\n", len(moves), compactJSON(toJSON(moves)))
	if mf.dryRun {
		return nil
	}
	if err := executePlan(ctx, cl, adm, out, cf.requestTimeout, moves, false, mf.throttle); err != nil {
		return err
	}
	if mf.noWait {
		return nil
	}
	wctx := cmd.Context()
	if mf.wait > 0 {
		var wcancel context.CancelFunc
		wctx, wcancel = context.WithTimeout(wctx, mf.wait)
		defer wcancel()
	}
	if err := waitDone(wctx, cl, out, moves); err != nil {
		return err
	}
	if mf.throttle >= 0 {
		sctx, scancel := context.WithTimeout(cmd.Context(), cf.requestTimeout+adminSlack)
		defer scancel()
		if err := setThrottle(sctx, adm, -1); err != nil {
			return err
		}
	}
	_, err = fmt.Fprintln(out, doneMsg)
	return err
}
