package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/spf13/cobra"
	"github.com/twmb/franz-go/pkg/kadm"
)

// `weir group` mirrors kafka-consumer-groups.sh: list, describe (offsets
// and lag, members, state), reset-offsets (dry run unless --execute),
// delete-offsets and delete.

func newGroupCmd() *cobra.Command {
	cf := &clientFlags{}
	cmd := &cobra.Command{
		Use:   "group",
		Short: "List, describe, reset and delete consumer groups",
		Long: "Consumer group administration, as kafka-consumer-groups.sh does it:\n" +
			"list the groups, describe their committed offsets and lag, members or\n" +
			"state, reset or delete their committed offsets, delete them.",
		Args: cobra.NoArgs,
	}
	cf.register(cmd.PersistentFlags())
	cmd.AddCommand(
		newGroupListCmd(cf),
		newGroupDescribeCmd(cf),
		newGroupResetCmd(cf),
		newGroupDeleteOffsetsCmd(cf),
		newGroupDeleteCmd(cf),
	)
	return cmd
}

// groupSelection is how a group command is told its groups: as arguments,
// with --group (Kafka's spelling, repeatable), or --all-groups where that
// makes sense; and its --output.
type groupSelection struct {
	groups    []string
	allGroups bool
	canAll    bool // whether --all-groups exists for the command
	output    *string
}

func (s *groupSelection) register(cmd *cobra.Command, allGroups bool) {
	cmd.Flags().StringArrayVar(&s.groups, "group", nil, "a group (repeatable; groups may also be given as arguments)")
	s.canAll = allGroups
	if allGroups {
		cmd.Flags().BoolVar(&s.allGroups, "all-groups", false, "every group in the cluster")
	}
	s.output = addOutputFlag(cmd)
}

// check fails when no group is named at all.
func (s *groupSelection) check(args []string) error {
	named := len(s.groups)+len(args) > 0
	switch {
	case s.allGroups && named:
		return errors.New("give groups or --all-groups, not both")
	case !s.allGroups && !named && s.canAll:
		return errors.New("give a group (as an argument or with --group), or --all-groups")
	case !s.allGroups && !named:
		return errors.New("give a group (as an argument or with --group)")
	}
	return nil
}

// resolve is the selected groups, sorted and each once.
func (s *groupSelection) resolve(ctx context.Context, adm *kadm.Client, args []string) ([]string, error) {
	if s.allGroups {
		return listGroupNames(ctx, adm)
	}
	all := append(slices.Clone(s.groups), args...)
	slices.Sort(all)
	return slices.Compact(all), nil
}

func newGroupListCmd(cf *clientFlags) *cobra.Command {
	var states, types bool
	var output *string
	cmd := &cobra.Command{
		Use:   "list [--state] [--type]",
		Short: "List the consumer groups",
		Long: "Lists the groups, one name per line, sorted. --state adds each group's\n" +
			"STATE and --type its TYPE (classic or consumer, the KIP-848 protocol),\n" +
			"as kafka-consumer-groups --list does.",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := checkOutput(*output); err != nil {
				return err
			}
			return withAdmin(cmd, cf, func(ctx context.Context, adm *kadm.Client) error {
				listed, err := adm.ListGroups(ctx)
				if err != nil {
					return fmt.Errorf("list groups: %w", err)
				}
				return printGroupList(cmd.OutOrStdout(), *output, listed, states, types)
			})
		},
	}
	cmd.Flags().BoolVar(&states, "state", false, "also print each group's state")
	cmd.Flags().BoolVar(&types, "type", false, "also print each group's type (classic or consumer)")
	output = addOutputFlag(cmd)
	return cmd
}

type listedGroupJSON struct {
	Group        string `json:"group"`
	Type         string `json:"type"`
	State        string `json:"state"`
	ProtocolType string `json:"protocolType"`
}

// printGroupList prints the names alone (no header, as Kafka), or a table
// with the asked-for columns; JSON always has every field.
func printGroupList(w io.Writer, format string, listed kadm.ListedGroups, states, types bool) error {
	t := &table{}
	if states || types {
		t.header = []string{"GROUP"}
		if types {
			t.header = append(t.header, "TYPE")
		}
		if states {
			t.header = append(t.header, "STATE")
		}
	}
	docs := []listedGroupJSON{}
	for _, g := range listed.Sorted() {
		typ := groupType(g)
		cells := []string{g.Group}
		if types {
			cells = append(cells, typ)
		}
		if states {
			cells = append(cells, dash(g.State))
		}
		t.add(cells...)
		docs = append(docs, listedGroupJSON{Group: g.Group, Type: typ, State: g.State, ProtocolType: g.ProtocolType})
	}
	return printOutput(w, format, t, docs)
}

// groupType is ListGroups' group type, lower case as Kafka names it on the
// wire; a broker too old to say has only classic groups.
func groupType(g kadm.ListedGroup) string {
	if g.GroupType == "" {
		return "classic"
	}
	return strings.ToLower(g.GroupType)
}

func dash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

func newGroupDeleteCmd(cf *clientFlags) *cobra.Command {
	var sel groupSelection
	cmd := &cobra.Command{
		Use:   "delete GROUP... | --group G [--group G2]...",
		Short: "Delete consumer groups (and their committed offsets)",
		Long:  "Deletes groups that have no active members, with all their committed offsets.",
		Args:  cobra.ArbitraryArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if len(sel.groups)+len(args) == 0 {
				return errors.New("give at least one group (as an argument or with --group)")
			}
			return withAdmin(cmd, cf, func(ctx context.Context, adm *kadm.Client) error {
				groups, _ := sel.resolve(ctx, adm, args)
				resps, err := adm.DeleteGroups(ctx, groups...)
				if err != nil && resps == nil {
					return fmt.Errorf("delete groups: %w", err)
				}
				var errs []error
				for _, g := range groups {
					r, ok := resps[g]
					switch {
					case !ok:
						errs = append(errs, fmt.Errorf("delete group %s: %w", g, err))
					case r.Err != nil:
						errs = append(errs, fmt.Errorf("delete group %s: %w", g, withBrokerMessage(r.Err, r.ErrMessage)))
					default:
						fmt.Fprintf(cmd.OutOrStdout(), "Deleted group %s.\n", g)
					}
				}
				return joinLine(errs)
			})
		},
	}
	cmd.Flags().StringArrayVar(&sel.groups, "group", nil, "group to delete (repeatable; groups may also be given as arguments)")
	return cmd
}
