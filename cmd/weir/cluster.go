package main

import (
	"context"
	"fmt"
	"path/filepath"
	"time"

	"github.com/spf13/cobra"

	"github.com/weir-project/weir/internal/cli"
	"github.com/weir-project/weir/internal/localcluster"
)

// clusterUpCommand is `weir cluster up`: a local cluster in one command.
func clusterUpCommand() *cobra.Command {
	var (
		nodes     int
		dir       string
		basePort  int
		overrides []string
		quiet     bool
	)
	cmd := &cobra.Command{
		Use:   "up",
		Short: "Run a local cluster of weir processes until Ctrl-C",
		Long: `Start a cluster of N weir processes on this machine, each a broker and a
controller (a voter of the metadata quorum), with its data in DIR/node-<id>.
Node i listens for clients on BASE+i-1 and for controllers on BASE+100+i-1.
The nodes' logs are printed, prefixed with their id, unless --quiet.

Ctrl-C (or SIGTERM) stops every node cleanly: each moves its leaderships
away before closing its logs. Running it again on the same --dir restarts
the same cluster with its data.`,
		Example: `  weir cluster up --nodes 3
  weir cluster up --nodes 3 --dir /tmp/weir-cluster --base-port 29092
  weir cluster up --nodes 3 --override min.insync.replicas=2`,
		Args:         cobra.NoArgs,
		SilenceUsage: true,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if nodes < 1 {
				return fmt.Errorf("--nodes must be at least 1, not %d", nodes)
			}
			abs, err := filepath.Abs(dir)
			if err != nil {
				return fmt.Errorf("--dir: %w", err)
			}
			cfg := localcluster.Config{Nodes: nodes, Dir: abs, BasePort: basePort, Overrides: overrides}
			if !quiet {
				cfg.Output = cmd.ErrOrStderr()
			}
			c, err := localcluster.New(cfg)
			if err != nil {
				return err
			}
			startCtx, cancel := context.WithTimeout(cmd.Context(), 2*time.Minute)
			defer cancel()
			if err := c.Start(startCtx); err != nil {
				return fmt.Errorf("cluster up: %w", err)
			}
			out := cmd.OutOrStdout()
			fmt.Fprintf(out, "weir cluster of %d nodes is up (data in %s)\n", nodes, abs)
			fmt.Fprintf(out, "%-6s %-22s %-22s %s\n", "NODE", "CLIENT", "CONTROLLER", "DATA")
			for _, n := range c.Nodes {
				fmt.Fprintf(out, "%-6d %-22s %-22s %s\n", n.ID, n.ClientAddr, n.CtrlAddr, n.Dir)
			}
			fmt.Fprintf(out, "bootstrap servers: %s\nCtrl-C stops the cluster.\n", c.Bootstrap())
			<-cmd.Context().Done()
			fmt.Fprintln(out, "stopping the cluster...")
			c.Stop(time.Minute)
			fmt.Fprintln(out, "stopped.")
			return nil
		},
	}
	cmd.Flags().IntVar(&nodes, "nodes", 3, "number of nodes")
	cmd.Flags().StringVar(&dir, "dir", "weir-cluster", "directory for the nodes' data")
	cmd.Flags().IntVar(&basePort, "base-port", 19092, "first client port (0 picks free ports)")
	cmd.Flags().StringArrayVar(&overrides, "override", nil, "configuration key=value for every node; repeatable")
	cmd.Flags().BoolVar(&quiet, "quiet", false, "do not print the nodes' logs")
	return cmd
}

// clusterCommand groups the cluster subcommands.
func clusterCommand() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "cluster",
		Short: "Run a local cluster, or inspect a running one",
	}
	cmd.AddCommand(clusterUpCommand(), cli.NewClusterStatusCmd(), cli.NewClusterDrainCmd(), cli.NewClusterRebalanceCmd())
	cmd.AddCommand(cli.NewClusterOpsCmds()...)
	return cmd
}
