package verify

import (
	"fmt"
	"io"
	"log/slog"
	"slices"
	"strings"
	"time"
)

// Fault kinds (--faults).
const (
	FaultKill       = "kill"       // kill -9 of a leader or a follower, then a restart
	FaultPause      = "pause"      // SIGSTOP of a leader, a follower or the active controller, then SIGCONT
	FaultPartition  = "partition"  // a node cut from the others and the clients, or clients from a leader
	FaultOneWay     = "one-way"    // what a node sends lost, or what it is sent, while the other way moves
	FaultTorn       = "torn"       // garbage appended to a stopped node's active segments before its restart
	FaultPower      = "power"      // kill -9, and what the node had not fsynced is lost before its restart
	FaultDiskFull   = "disk-full"  // one node's log dir (a small tmpfs) filled up, then freed
	FaultController = "controller" // kill -9 of the active controller, then a restart
	FaultRestart    = "restart"    // SIGTERM (controlled shutdown) of a leader or a follower, then a restart
	FaultMove       = "move"       // a partition reassigned, then its preferred leader elected
	// FaultCascade: the drawn partition's followers killed one by one as
	// the ISR shrinks, then its leader, alone in the ISR, loses power. It
	// needs a quorum without two nodes (--nodes 5 or more), so it is not
	// in a default run.
	FaultCascade = "cascade"
	// FaultWipe: kill -9, then the node's log dir emptied (a replaced
	// data disk; the metadata log kept), then a restart.
	FaultWipe = "wipe"
	// FaultSlow: the links of a leader or a follower slowed (each chunk
	// passed 200 ms, 1 s or 2.5 s late), not cut, then at full speed.
	FaultSlow = "slow"
	// FaultLose is --unsafe's own: acks=1 writes to a leader cut off from
	// its followers, which is then killed. Loss is certain.
	FaultLose = "lose"
)

// replicationFactor is the topics' (fewer with fewer brokers, under
// --brokers).
const replicationFactor = 3

// Group protocols (--group-protocol).
const (
	GroupClassic  = "classic"  // JoinGroup/SyncGroup: the client assigns
	GroupConsumer = "consumer" // KIP-848 ConsumerGroupHeartbeat: the coordinator assigns
)

// byName are the kinds a run injects only when asked for by name.
var byName = []string{FaultCascade, FaultWipe, FaultSlow, FaultLose}

// AllFaults are the kinds a safe run injects by default.
var AllFaults = []string{FaultKill, FaultPause, FaultPartition, FaultOneWay, FaultTorn, FaultPower, FaultDiskFull, FaultController, FaultRestart, FaultMove}

// Options configure a run.
type Options struct {
	Nodes int
	// Duration is how long the workload runs: at least, for every kind
	// of fault asked for strikes once whatever the cluster's pace.
	Duration time.Duration
	Seed     int64
	Faults   []string
	// Brokers attaches to a running cluster instead of starting one; only
	// faults that need no process of ours apply then (none yet).
	Brokers []string
	// Unsafe: acks=1, unclean.leader.election.enable=true,
	// min.insync.replicas=1. The checker must find loss.
	Unsafe bool
	// MinInsync is the topics' min.insync.replicas (0: 2; --unsafe: 1).
	// At the replication factor, every fault that takes a replica out
	// of the ISR takes it below its minimum: acks=all sends wait for
	// the heal, and the replicas that leave cleanly become eligible
	// leader replicas (KIP-966).
	MinInsync int
	// Acks1 also sends to a second topic with acks=1 (not idempotent);
	// its anomalies are reported, not held against the run.
	Acks1 bool

	Partitions   int32
	Producers    int
	Rate         int // sends per second, all producers together
	Assigned     int // consumers of assigned partitions
	GroupMembers int
	// GroupChurn makes group members leave after about this long, each
	// replaced by a new member (0: members stay).
	GroupChurn time.Duration
	// GroupProtocol is the consumer group's protocol: "classic" (the
	// default; the client assigns) or "consumer" (KIP-848; the
	// coordinator assigns).
	GroupProtocol string
	Interval      time.Duration // from one fault's start to the next
	FaultDuration time.Duration // how long each fault lasts before its heal
	// DeleteInterval is how often the deleter deletes the head of a
	// partition (default 5s; negative: never).
	DeleteInterval time.Duration
	// Overlap is how many faults may be in force at once (default 1: one
	// at a time, each after the cluster recovered from the last).
	Overlap int

	Dir     string // where history.jsonl, result.json, report.html and nodes.log go
	DataDir string // the nodes' data (default: a temp dir, removed after)
	Keep    bool   // keep DataDir
	Binary  string // the weir executable (default: this process's own)

	Progress io.Writer // live progress lines (nil: none)
	Logger   *slog.Logger
}

// withDefaults fills what was left zero.
func (o Options) withDefaults() Options {
	setInt := func(v *int, d int) {
		if *v <= 0 {
			*v = d
		}
	}
	setInt(&o.Nodes, 3)
	setInt(&o.Producers, 4)
	setInt(&o.Rate, 200)
	setInt(&o.Assigned, 2)
	setInt(&o.GroupMembers, 2)
	setInt(&o.Overlap, 1)
	if o.Partitions <= 0 {
		o.Partitions = 6
	}
	if o.Duration <= 0 {
		o.Duration = 5 * time.Minute
	}
	if o.Interval <= 0 {
		o.Interval = 10 * time.Second
	}
	if o.GroupProtocol == "" {
		o.GroupProtocol = GroupClassic
	}
	if o.DeleteInterval == 0 {
		o.DeleteInterval = 5 * time.Second
	}
	if o.FaultDuration <= 0 {
		o.FaultDuration = o.Interval / 2
	}
	if o.Faults == nil {
		o.Faults = slices.Clone(AllFaults)
		if o.Unsafe {
			o.Faults = []string{FaultLose}
		}
	}
	if o.Dir == "" {
		o.Dir = fmt.Sprintf("weir-verify-%d", o.Seed)
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	return o
}

func (o Options) validate() error {
	if o.Nodes < 3 && len(o.Brokers) == 0 {
		return fmt.Errorf("--nodes: at least 3 (replication factor 3), not %d", o.Nodes)
	}
	for _, f := range o.Faults {
		if !slices.Contains(AllFaults, f) && !slices.Contains(byName, f) {
			return fmt.Errorf("--faults: unknown fault %q (known: %s, %s)", f, strings.Join(AllFaults, ","), strings.Join(byName, ","))
		}
		if f == FaultCascade && len(o.Brokers) == 0 && o.Nodes < cascadeNodes {
			return fmt.Errorf("--faults: %s needs --nodes %d or more (the quorum must outlive two killed followers), not %d", FaultCascade, cascadeNodes, o.Nodes)
		}
		if f == FaultLose && !o.Unsafe {
			return fmt.Errorf("--faults: %s needs --unsafe (it loses acknowledged acks=1 writes on purpose)", FaultLose)
		}
	}
	if o.Overlap > 1 && len(o.Brokers) == 0 && o.Overlap > o.Nodes {
		return fmt.Errorf("--overlap %d: at most one fault per node (%d)", o.Overlap, o.Nodes)
	}
	if o.Overlap <= 1 && o.FaultDuration >= o.Interval {
		return fmt.Errorf("a fault (%v) must be shorter than the interval between faults (%v), or let faults overlap (--overlap)", o.FaultDuration, o.Interval)
	}
	if o.GroupProtocol != GroupClassic && o.GroupProtocol != GroupConsumer {
		return fmt.Errorf("--group-protocol: %q, want %s or %s", o.GroupProtocol, GroupClassic, GroupConsumer)
	}
	if o.MinInsync < 0 || o.MinInsync > replicationFactor {
		return fmt.Errorf("--min-insync %d: between 1 and the replication factor, %d", o.MinInsync, replicationFactor)
	}
	if o.Unsafe && o.MinInsync > 1 {
		return fmt.Errorf("--min-insync %d: --unsafe runs with 1", o.MinInsync)
	}
	if o.Rate < o.Producers {
		return fmt.Errorf("--rate %d: at least one send per second per producer (%d)", o.Rate, o.Producers)
	}
	return nil
}

// ParseFaults parses --faults ("" or "none": no faults).
func ParseFaults(s string) []string {
	s = strings.TrimSpace(s)
	if s == "none" {
		return []string{}
	}
	var out []string
	for _, f := range strings.Split(s, ",") {
		if f = strings.TrimSpace(f); f != "" && !slices.Contains(out, f) {
			out = append(out, f)
		}
	}
	return out
}
