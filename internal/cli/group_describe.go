package cli

import (
	"context"
	"fmt"
	"io"
	"slices"
	"strconv"

	"github.com/spf13/cobra"
	"github.com/twmb/franz-go/pkg/kadm"
)

// describeMode is what `weir group describe` shows, as
// kafka-consumer-groups --describe with --offsets (the default),
// --members or --state.
type describeMode int

const (
	describeOffsets describeMode = iota
	describeMembers
	describeState
)

func newGroupDescribeCmd(cf *clientFlags) *cobra.Command {
	var (
		sel                       groupSelection
		offsets, members, stateOn bool
		verbose                   bool
	)
	cmd := &cobra.Command{
		Use:   "describe GROUP... [--offsets | --members [--verbose] | --state [--verbose]]",
		Short: "Show a group's committed offsets and lag, its members, or its state",
		Long: `Describes consumer groups (classic and KIP-848 consumer groups alike) as
kafka-consumer-groups --describe does:

  --offsets (default)  one line per partition the group is assigned or has
                       committed: GROUP, TOPIC, PARTITION, CURRENT-OFFSET,
                       LOG-END-OFFSET, LAG, CONSUMER-ID, HOST, CLIENT-ID
                       (--verbose adds LEADER-EPOCH)
  --members            one line per member: GROUP, CONSUMER-ID, HOST,
                       CLIENT-ID, #PARTITIONS (GROUP-INSTANCE-ID when a
                       member has one; --verbose adds CURRENT-EPOCH,
                       CURRENT-ASSIGNMENT, TARGET-EPOCH, TARGET-ASSIGNMENT)
  --state              GROUP, COORDINATOR (ID), ASSIGNMENT-STRATEGY, STATE,
                       #MEMBERS (--verbose adds GROUP-EPOCH and
                       TARGET-ASSIGNMENT-EPOCH)

'-' is a value that does not exist (no commit, no member). A group without
active members or in a rebalance is said so on stderr. A group that does
not exist is an error.`,
		Args: cobra.ArbitraryArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := checkOutput(*sel.output); err != nil {
				return err
			}
			if err := sel.check(args); err != nil {
				return err
			}
			mode := describeOffsets
			switch {
			case members:
				mode = describeMembers
			case stateOn:
				mode = describeState
			}
			return withAdmin(cmd, cf, func(ctx context.Context, adm *kadm.Client) error {
				groups, err := sel.resolve(ctx, adm, args)
				if err != nil {
					return err
				}
				return runGroupDescribe(ctx, adm, cmd.OutOrStdout(), cmd.ErrOrStderr(), groups, mode, verbose, *sel.output)
			})
		},
	}
	sel.register(cmd, true)
	fs := cmd.Flags()
	fs.BoolVar(&offsets, "offsets", false, "committed offsets and lag per partition (the default)")
	fs.BoolVar(&members, "members", false, "the group's members and their partition counts")
	fs.BoolVar(&stateOn, "state", false, "the group's coordinator, assignment strategy, state and member count")
	fs.BoolVar(&verbose, "verbose", false, "more columns: leader epochs (--offsets), epochs and assignments (--members, --state)")
	cmd.MarkFlagsMutuallyExclusive("offsets", "members", "state")
	return cmd
}

func runGroupDescribe(ctx context.Context, adm *kadm.Client, out, errOut io.Writer,
	groups []string, mode describeMode, verbose bool, format string,
) error {
	infos, missing, describeErr := describeGroups(ctx, adm, groups)
	if infos == nil {
		return describeErr
	}
	errs := []error{describeErr}
	for _, g := range missing {
		errs = append(errs, errGroupNotFound(g))
	}
	var tables []*table
	var docs []any
	for _, name := range groups {
		g, ok := infos[name]
		if !ok {
			continue
		}
		if format == outputTable {
			switch {
			case g.State == "Empty":
				fmt.Fprintf(errOut, "Consumer group '%s' has no active members.\n", g.Group)
			case g.rebalancing():
				fmt.Fprintf(errOut, "Warning: Consumer group '%s' is rebalancing.\n", g.Group)
			}
		}
		switch mode {
		case describeOffsets:
			rows, err := collectOffsetRows(ctx, adm, g)
			if err != nil {
				errs = append(errs, err)
				continue
			}
			tables = append(tables, offsetsTable(g, rows, verbose))
			docs = append(docs, groupOffsetsJSON{Group: g.Group, State: g.State, Offsets: rows})
		case describeMembers:
			tables = append(tables, membersTable(g, verbose))
			docs = append(docs, membersJSON(g))
		case describeState:
			tables = append(tables, stateTable(g, verbose))
			docs = append(docs, stateJSON(g))
		}
	}
	if docs == nil {
		docs = []any{}
	}
	if len(tables) > 0 || format == outputJSON {
		if err := printTables(out, format, tables, docs); err != nil {
			return err
		}
	}
	return joinLine(errs)
}

// offsetRow is one line of --offsets; nil is Kafka's "-".
type offsetRow struct {
	Topic         string  `json:"topic"`
	Partition     int32   `json:"partition"`
	LeaderEpoch   *int32  `json:"leaderEpoch"`
	CurrentOffset *int64  `json:"currentOffset"`
	LogEndOffset  *int64  `json:"logEndOffset"`
	Lag           *int64  `json:"lag"`
	ConsumerID    *string `json:"consumerId"`
	Host          *string `json:"host"`
	ClientID      *string `json:"clientId"`
}

type groupOffsetsJSON struct {
	Group   string      `json:"group"`
	State   string      `json:"state"`
	Offsets []offsetRow `json:"offsets"`
}

// collectOffsetRows is Kafka's --offsets data: every partition assigned to
// a member, with that member, then every other partition the group has
// committed, without one; each with the committed offset, the log end
// offset (high watermark) and their difference. Rows are sorted by topic
// and partition.
func collectOffsetRows(ctx context.Context, adm *kadm.Client, g groupInfo) ([]offsetRow, error) {
	committed, err := adm.FetchOffsets(ctx, g.Group)
	if err == nil {
		err = committed.Error()
	}
	if err != nil {
		return nil, fmt.Errorf("fetch committed offsets of group %s: %w", g.Group, err)
	}
	rows := []offsetRow{}
	seen := kadm.TopicsSet{}
	for _, m := range g.Members {
		for _, tp := range m.Assigned {
			for _, p := range tp.Partitions {
				if seen.Lookup(tp.Topic, p) {
					continue
				}
				seen.Add(tp.Topic, p)
				id, host, client := m.ID, m.Host, m.ClientID
				rows = append(rows, offsetRow{Topic: tp.Topic, Partition: p, ConsumerID: &id, Host: &host, ClientID: &client})
			}
		}
	}
	committed.Each(func(o kadm.OffsetResponse) {
		if !seen.Lookup(o.Topic, o.Partition) {
			seen.Add(o.Topic, o.Partition)
			rows = append(rows, offsetRow{Topic: o.Topic, Partition: o.Partition})
		}
	})
	slices.SortFunc(rows, func(a, b offsetRow) int {
		if a.Topic != b.Topic {
			if a.Topic < b.Topic {
				return -1
			}
			return 1
		}
		return int(a.Partition - b.Partition)
	})
	if len(rows) == 0 {
		return rows, nil
	}
	ends, err := adm.ListEndOffsets(ctx, seen.Topics()...)
	if err != nil && ends == nil {
		return nil, fmt.Errorf("list log end offsets: %w", err)
	}
	for i := range rows {
		r := &rows[i]
		if c, ok := committed.Lookup(r.Topic, r.Partition); ok && c.At >= 0 {
			at := c.At
			r.CurrentOffset = &at
			if c.LeaderEpoch >= 0 {
				e := c.LeaderEpoch
				r.LeaderEpoch = &e
			}
		}
		// A partition whose end is unknown (a deleted topic, a partition
		// without a leader) shows '-' for it and for its lag.
		if e, ok := ends.Lookup(r.Topic, r.Partition); ok && e.Err == nil {
			end := e.Offset
			r.LogEndOffset = &end
			if r.CurrentOffset != nil {
				lag := end - *r.CurrentOffset
				r.Lag = &lag
			}
		}
	}
	return rows, nil
}

func dashInt64(v *int64) string {
	if v == nil {
		return "-"
	}
	return strconv.FormatInt(*v, 10)
}

func dashInt32(v *int32) string {
	if v == nil {
		return "-"
	}
	return strconv.Itoa(int(*v))
}

func dashStr(v *string) string {
	if v == nil {
		return "-"
	}
	return dash(*v)
}

func offsetsTable(g groupInfo, rows []offsetRow, verbose bool) *table {
	t := &table{header: []string{"GROUP", "TOPIC", "PARTITION", "CURRENT-OFFSET", "LOG-END-OFFSET", "LAG", "CONSUMER-ID", "HOST", "CLIENT-ID"}}
	if verbose {
		t.header = slices.Insert(t.header, 3, "LEADER-EPOCH")
	}
	for _, r := range rows {
		cells := []string{g.Group, r.Topic, strconv.Itoa(int(r.Partition)),
			dashInt64(r.CurrentOffset), dashInt64(r.LogEndOffset), dashInt64(r.Lag),
			dashStr(r.ConsumerID), dashStr(r.Host), dashStr(r.ClientID)}
		if verbose {
			cells = slices.Insert(cells, 3, dashInt32(r.LeaderEpoch))
		}
		t.add(cells...)
	}
	return t
}

type memberJSON struct {
	ConsumerID       string            `json:"consumerId"`
	GroupInstanceID  *string           `json:"groupInstanceId"`
	Host             string            `json:"host"`
	ClientID         string            `json:"clientId"`
	NumPartitions    int               `json:"numPartitions"`
	CurrentEpoch     *int32            `json:"currentEpoch"`
	Assignment       []topicPartitions `json:"assignment"`
	TargetEpoch      *int32            `json:"targetEpoch"`
	TargetAssignment []topicPartitions `json:"targetAssignment"`
}

type groupMembersJSON struct {
	Group   string       `json:"group"`
	State   string       `json:"state"`
	Members []memberJSON `json:"members"`
}

func membersJSON(g groupInfo) groupMembersJSON {
	out := groupMembersJSON{Group: g.Group, State: g.State, Members: []memberJSON{}}
	for _, m := range g.Members {
		j := memberJSON{
			ConsumerID: m.ID, Host: m.Host, ClientID: m.ClientID, NumPartitions: m.numPartitions(),
			CurrentEpoch: m.Epoch, Assignment: nonNil(m.Assigned), TargetAssignment: nonNil(m.Target),
		}
		if m.InstanceID != "" {
			id := m.InstanceID
			j.GroupInstanceID = &id
		}
		if g.Type == "consumer" {
			j.TargetEpoch = g.TargetEpoch
		}
		out.Members = append(out.Members, j)
	}
	return out
}

func nonNil(a []topicPartitions) []topicPartitions {
	if a == nil {
		return []topicPartitions{}
	}
	return a
}

// membersTable is Kafka's --members layout: GROUP-INSTANCE-ID appears when
// some member has one; --verbose adds the epochs and the current and
// target assignments (target ones exist in consumer groups only).
func membersTable(g groupInfo, verbose bool) *table {
	withInstance := slices.ContainsFunc(g.Members, func(m groupMember) bool { return m.InstanceID != "" })
	t := &table{header: []string{"GROUP", "CONSUMER-ID"}}
	if withInstance {
		t.header = append(t.header, "GROUP-INSTANCE-ID")
	}
	t.header = append(t.header, "HOST", "CLIENT-ID", "#PARTITIONS")
	if verbose {
		t.header = append(t.header, "CURRENT-EPOCH", "CURRENT-ASSIGNMENT", "TARGET-EPOCH", "TARGET-ASSIGNMENT")
	}
	for _, m := range g.Members {
		cells := []string{g.Group, m.ID}
		if withInstance {
			cells = append(cells, dash(m.InstanceID))
		}
		cells = append(cells, dash(m.Host), dash(m.ClientID), strconv.Itoa(m.numPartitions()))
		if verbose {
			var target *int32
			if g.Type == "consumer" {
				target = g.TargetEpoch
			}
			cells = append(cells, dashInt32(m.Epoch), assignmentString(m.Assigned), dashInt32(target), assignmentString(m.Target))
		}
		t.add(cells...)
	}
	return t
}

type coordinatorJSON struct {
	ID   int32  `json:"id"`
	Host string `json:"host"`
	Port int32  `json:"port"`
}

type groupStateJSON struct {
	Group                 string          `json:"group"`
	Type                  string          `json:"type"`
	Coordinator           coordinatorJSON `json:"coordinator"`
	AssignmentStrategy    *string         `json:"assignmentStrategy"`
	State                 string          `json:"state"`
	GroupEpoch            *int32          `json:"groupEpoch"`
	TargetAssignmentEpoch *int32          `json:"targetAssignmentEpoch"`
	NumMembers            int             `json:"numMembers"`
}

func stateJSON(g groupInfo) groupStateJSON {
	j := groupStateJSON{
		Group: g.Group, Type: g.Type, State: g.State, NumMembers: len(g.Members),
		Coordinator: coordinatorJSON{ID: g.Coordinator.NodeID, Host: g.Coordinator.Host, Port: g.Coordinator.Port},
		GroupEpoch:  g.Epoch, TargetAssignmentEpoch: g.TargetEpoch,
	}
	if g.Strategy != "" {
		s := g.Strategy
		j.AssignmentStrategy = &s
	}
	return j
}

// stateTable is Kafka's --state layout; the coordinator reads
// "host:port  (id)" as Kafka prints it.
func stateTable(g groupInfo, verbose bool) *table {
	coord := fmt.Sprintf("%s:%d  (%d)", g.Coordinator.Host, g.Coordinator.Port, g.Coordinator.NodeID)
	t := &table{header: []string{"GROUP", "COORDINATOR (ID)", "ASSIGNMENT-STRATEGY", "STATE"}}
	cells := []string{g.Group, coord, dash(g.Strategy), g.State}
	if verbose {
		t.header = append(t.header, "GROUP-EPOCH", "TARGET-ASSIGNMENT-EPOCH")
		cells = append(cells, dashInt32(g.Epoch), dashInt32(g.TargetEpoch))
	}
	t.header = append(t.header, "#MEMBERS")
	cells = append(cells, strconv.Itoa(len(g.Members)))
	t.add(cells...)
	return t
}
