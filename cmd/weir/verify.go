package main

import (
	"errors"
	"fmt"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/weir-project/weir/internal/verify"
)

// verifyCommand is `weir verify`: fault injection and a Jepsen-style
// check that no acknowledged write is lost.
func verifyCommand() *cobra.Command {
	var (
		o       verify.Options
		faults  string
		brokers string
		check   string
	)
	cmd := &cobra.Command{
		Use:   "verify",
		Short: "Break a cluster on purpose and check that no acknowledged write is lost",
		Long: `Start a local cluster of weir processes (or attach to --brokers), run a
seeded workload against it — idempotent acks=all producers with unique
values, assigned consumers and consumer-group members that commit — while
injecting faults one at a time on a schedule: kill -9 and restart of a
leader, a follower or the active controller, SIGSTOP/SIGCONT, network
partitions (every connection to a node crosses a proxy of this process),
one-way ones (what a node sends lost while it still hears, or the
reverse), torn writes, a power loss (what a node had not fsynced is lost), a full
disk; and an operator's work: a rolling restart's step (SIGTERM, a
controlled shutdown) and a partition reassignment with a preferred leader
election. After the faults heal, every partition is read
to its end and the history of every operation is checked for lost,
duplicated, inconsistent and unexpected records, nonmonotonic sends and
polls, skipped offsets, commits that go backwards and group members that
start below a commit already completed.

The history (history.jsonl), the result (result.json), an HTML report with
a timeline (report.html) and the nodes' logs (nodes.log) go to --out. The
exit status is non-zero on any safety violation.

--unsafe runs with acks=1, unclean.leader.election.enable=true and
min.insync.replicas=1 and, by default, the "lose" fault, which must make
the checker find loss. --check re-checks a saved history.

--overlap 2 or more lets faults strike while the cluster still recovers
from the last one (a kill while a follower truncates, a partition during
a hand-over): up to that many in force at once, never two on one node's
process, and a loss of unflushed writes (power, cascade, wipe) only on a
healthy cluster, as two nodes losing their page caches together may
lose acknowledged records in Kafka too.

"cascade", asked for by name with --nodes 5 or more, kills a partition's
followers one by one as its ISR shrinks, then cuts the power of its
leader, left alone in the ISR: the case eligible leader replicas exist for.
"wipe", asked for by name, is a replaced data disk: kill -9, the node's
log dir emptied (its metadata log kept), a restart.`,
		Example: `  weir verify --duration 5m --seed 7
  weir verify --duration 90s --faults kill,pause,partition
  weir verify --nodes 5 --faults cascade,kill,power --duration 3m
  weir verify --overlap 2 --interval 4s --fault-duration 6s --duration 5m
  weir verify --unsafe --duration 45s
  weir verify --check weir-verify-7/history.jsonl`,
		Args:         cobra.NoArgs,
		SilenceUsage: true,
		RunE: func(cmd *cobra.Command, _ []string) error {
			out := cmd.OutOrStdout()
			var res *verify.Result
			var runErr error
			if check != "" {
				var err error
				if res, err = verify.CheckFile(check); err != nil {
					return err
				}
				if o.Dir != "" {
					// A fresh result.json and report.html from the history.
					if err := os.MkdirAll(o.Dir, 0o755); err != nil {
						return err
					}
					if err := verify.WriteOutputs(o.Dir, res); err != nil {
						return err
					}
				}
			} else {
				if cmd.Flags().Changed("faults") {
					o.Faults = verify.ParseFaults(faults)
				}
				if brokers != "" {
					o.Brokers = strings.Split(brokers, ",")
				}
				o.Progress = cmd.ErrOrStderr()
				// Output that nobody reads any more (a closed pipe) must
				// not kill verify before it stops its cluster.
				signal.Ignore(syscall.SIGPIPE)
				res, runErr = verify.Run(cmd.Context(), o)
				if res == nil {
					return runErr
				}
			}
			verify.WriteSummary(out, res)
			if check == "" || o.Dir != "" {
				fmt.Fprintf(out, "history, result and report in %s\n", dirOf(o))
			}
			switch {
			case !res.OK():
				return errors.Join(fmt.Errorf("%d safety violations", res.Violations), runErr)
			case runErr != nil:
				return runErr
			}
			return nil
		},
	}
	f := cmd.Flags()
	f.IntVar(&o.Nodes, "nodes", 3, "nodes of the local cluster")
	f.DurationVar(&o.Duration, "duration", 5*time.Minute, "how long the workload and the faults run (longer if needed for each fault to strike once)")
	f.Int64Var(&o.Seed, "seed", 1, "seed of the schedule and the values")
	f.StringVar(&faults, "faults", strings.Join(verify.AllFaults, ","), `faults to inject, comma-separated, or "none" (--unsafe: lose); also cascade (with --nodes 5 or more), wipe and slow`)
	f.StringVar(&brokers, "brokers", "", "attach to these brokers (host:port,...) instead of starting a cluster")
	f.BoolVar(&o.Unsafe, "unsafe", false, "acks=1, unclean leader election, min.insync.replicas=1: the checker must find loss")
	f.IntVar(&o.MinInsync, "min-insync", 0, "min.insync.replicas of the topics (0: 2, or 1 with --unsafe); 3 (the replication factor): every fault that takes a replica out of the ISR holds acks=all sends and leaves eligible leader replicas (KIP-966)")
	f.BoolVar(&o.Acks1, "acks1-topic", false, "also send with acks=1 to a second topic (reported, not judged)")
	f.Int32Var(&o.Partitions, "partitions", 6, "partitions of the topic")
	f.IntVar(&o.Producers, "producers", 4, "producers (each its own idempotent client)")
	f.IntVar(&o.Rate, "rate", 200, "sends per second, all producers together")
	f.IntVar(&o.Assigned, "assigned-consumers", 2, "consumers reading every partition by assignment")
	f.IntVar(&o.GroupMembers, "group-members", 2, "members of the consumer group")
	f.DurationVar(&o.GroupChurn, "group-churn", 0, "group members leave after about this long (half to one and a half times), each replaced by a new one; 0: they stay")
	f.StringVar(&o.GroupProtocol, "group-protocol", verify.GroupClassic, `the group's protocol: "classic" (the client assigns) or "consumer" (KIP-848, the coordinator assigns)`)
	f.DurationVar(&o.DeleteInterval, "delete-interval", 5*time.Second, "how often a partition's head is deleted (DeleteRecords, below what every assigned consumer has read); negative: never")
	f.DurationVar(&o.Interval, "interval", 10*time.Second, "from one fault's start to the next")
	f.DurationVar(&o.FaultDuration, "fault-duration", 5*time.Second, "how long each fault lasts")
	f.IntVar(&o.Overlap, "overlap", 1, "faults in force at once: above 1, a fault starts every --interval without waiting for the cluster to recover (never two on one node's process, never two losses of unflushed writes)")
	f.StringVar(&o.Dir, "out", "", "directory for the history and the report (default weir-verify-SEED)")
	f.StringVar(&o.DataDir, "data-dir", "", "the nodes' data (default: a temp dir, removed after)")
	f.StringVar(&o.Binary, "binary", "", "the weir binary to run as nodes (default: this one)")
	f.StringVar(&check, "check", "", "re-check a saved history file instead of running (with --out: write its result and report there)")
	return cmd
}

func dirOf(o verify.Options) string {
	if o.Dir != "" {
		return o.Dir
	}
	return fmt.Sprintf("weir-verify-%d", o.Seed)
}
